"""What every case of a run shares: the settings, the redactor, debugging options."""

from __future__ import annotations

import dataclasses
import sys
import threading
from dataclasses import dataclass, field

from aam_eval_action.pipeline.slots import Slots
from aam_eval_action.pipeline.spend_cap import Budget, Estimator
from aam_eval_action.redact import Redactor
from aam_eval_action.settings import RunSettings
from aam_eval_action.spec import Case


@dataclass
class CaseContext:
    """Shared, read-only state for the cases of one run."""

    settings: RunSettings
    redactor: Redactor
    keep_workspaces: bool = False
    pair: tuple[str, str] | None = None
    """(engine, model) when the run covers several: each result is stamped with it."""
    budget: Budget = field(default_factory=lambda: Budget(None))
    """The run's spending against `max-usd`: one for every context of the run."""
    slots: Slots = field(default_factory=lambda: Slots(1))
    """The run's `--jobs` slots: one for every context of the run (see `slots.py`)."""
    _estimator: Estimator | None = None
    _warned: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def warn_once(self, text: str) -> None:
        """A warning line on stderr, once per run however many cases run into it. It may quote the
        repository (a manifest's server name): no line of it can be read as a workflow command."""
        from aam_eval_action.render.console import neutralize_commands

        with self._lock:
            if text in self._warned:
                return
            self._warned.add(text)
        print(neutralize_commands(f"aam-eval: warning: {text}"), file=sys.stderr, flush=True)

    def for_case(self, case: Case) -> CaseContext:
        """This context, with the run's attempts and timeout replaced by the case's own when its
        file sets them (an imported suite's `trials_per_task`, a `claude plugin eval` case's
        `runs:`, `timeout_seconds`); a trigger case runs `triggers.runs` times unless its own
        `repeat` says otherwise. `--repeat`/`--runs` (the action's `runs`) win over every case's
        own count, as `claude plugin eval --runs` wins over its case files."""
        trigger = case.is_trigger
        if case.repeat is None and case.timeout is None and not trigger:
            return self
        s = self.settings
        repeat = s.repeat if s.repeat_given else case.repeat or (s.trigger_runs if trigger else s.repeat)
        settings = dataclasses.replace(
            s, repeat=repeat, timeout=case.timeout or s.timeout,
            min_pass=min(s.config.min_pass or repeat, repeat),
            attempts_required=not trigger or case.repeat is not None or s.repeat_given)
        return dataclasses.replace(self, settings=settings)

    @property
    def together(self) -> bool:
        """Whether a case's steps may run side by side (`slots.side_by_side`): not under a spend
        cap, whose one paid slot a case holds in its own thread."""
        return self.budget.cap is None

    @property
    def estimator(self) -> Estimator:
        """Cost estimates for this engine + model's cases (made on first use)."""
        with self._lock:
            if self._estimator is None:
                self._estimator = Estimator(self.settings)
            return self._estimator

    @classmethod
    def for_run(
        cls, settings: RunSettings, keep_workspaces: bool = False, *, matrix: bool = False,
        budget: Budget | None = None, slots: Slots | None = None,
    ) -> CaseContext:
        """The context of one engine + model; `matrix` when the run covers several; `budget` and
        `slots` are the run's, shared by the contexts of all its pairs."""
        pair = (settings.engine, settings.model) if matrix else None
        return cls(settings, settings.redactor(), keep_workspaces, pair, budget or Budget(settings.max_usd),
                   slots or Slots(settings.jobs))
