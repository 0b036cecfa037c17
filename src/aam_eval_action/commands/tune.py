"""`aam-eval tune`: propose a better description for a skill, and prove it on held-out prompts
(`tuning/`: the tuner, the search, the gate, power before spend)."""

from __future__ import annotations

from aam_eval_action.tuning.run import TuneArgs, tune

__all__ = ["TuneArgs", "tune"]
