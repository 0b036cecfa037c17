"""What every case of a run shares: the settings, the redactor, debugging options."""

from __future__ import annotations

from dataclasses import dataclass

from aam_eval_action.redact import Redactor
from aam_eval_action.settings import RunSettings


@dataclass
class CaseContext:
    """Shared, read-only state for the cases of one run."""

    settings: RunSettings
    redactor: Redactor
    keep_workspaces: bool = False

    @classmethod
    def for_run(cls, settings: RunSettings, keep_workspaces: bool = False) -> CaseContext:
        return cls(settings, settings.redactor(), keep_workspaces)
