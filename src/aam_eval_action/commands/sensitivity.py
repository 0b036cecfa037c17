"""`aam-eval sensitivity`: would the suite notice if the package broke? (`sensitivity/`: the
mutants, the runs, the kill matrix)."""

from __future__ import annotations

from aam_eval_action.sensitivity.run import SensitivityArgs, sensitivity

__all__ = ["SensitivityArgs", "sensitivity"]
