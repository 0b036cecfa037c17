"""The report's models of the dice: a case's history (its attempts over the runs that recorded
it) and the evidence a verdict on a changed or flipped case stands on (additive)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aam_eval_action.report_part import Part

Decision = Literal["regressed", "holds", "within-noise", "not-shown"]


class HistorySample(Part):
    """One run's attempts of the case, under the inputs its history is for."""

    at: str
    """When the run recorded (UTC)."""
    passes: int
    """Attempts that passed."""
    attempts: int
    """Attempts made."""
    where: str = "ci"
    """`ci` (a workflow run) or `local` (a run on someone's machine, committed by hand)."""


class CaseHistory(Part):
    """What the case's history (`<cassettes>/<case>/history.jsonl`) says of its inputs as run."""

    inputs: str
    """The inputs fingerprint these counts are for."""
    passes: int = 0
    """Attempts that passed, over the runs of these inputs since the last CLI or model change."""
    attempts: int = 0
    """Attempts made over those runs."""
    runs: int = 0
    """Runs that recorded those attempts."""
    since: str | None = None
    """When the first of those runs recorded."""
    cli: str | None = None
    """The CLI release of those runs."""
    served: str | None = None
    """The model the API said it served in those runs, where it differs from the one asked for."""
    changes: list[str] = Field(default_factory=list)
    """Each change of CLI release or served model under these inputs: a cause a changed rate may
    have, counted apart from the noise (`served model a → b on 2026-11-30`)."""
    samples: list[HistorySample] = Field(default_factory=list)
    """Those runs, oldest first."""
    earlier_inputs: str | None = None
    """The inputs before these (what the cassette was recorded with), when their runs are kept."""
    earlier_passes: int = 0
    """Attempts that passed under the earlier inputs."""
    earlier_attempts: int = 0
    """Attempts made under the earlier inputs."""
    warnings: list[str] = Field(default_factory=list)
    """Lines of the history file that could not be read, each with file:line and why."""

    @property
    def text(self) -> str:
        """`14/20 over 20 runs since 2026-11-01`."""
        since = f" since {self.since[:10]}" if self.since else ""
        runs = "1 run" if self.runs == 1 else f"{self.runs} runs"
        return f"{self.passes}/{self.attempts} over {runs}{since}"


class Evidence(Part):
    """Both sides' counts and what the rule decided from them (docs/dice.md)."""

    decision: Decision
    """`regressed` (blamed), `holds` (not worse than the tolerance), `within-noise` (a flip of an
    unchanged case its history explains) or `not-shown` (the cap came first)."""
    now_passes: int
    """Head attempts that passed."""
    now_attempts: int
    """Head attempts made."""
    before_passes: int
    """Base attempts that passed (its history)."""
    before_attempts: int
    """Base attempts made."""
    p_value: float | None = None
    """The one-sided Fisher p-value of "the head passes less often"."""
    level: float | None = None
    """The level the p-value was held against (the per-look level of a sampled case)."""
    confidence: float = 0.95
    """The confidence a blame needs."""
    tolerance: float | None = None
    """`holds`: the head is not below the base by more than this."""
    cap: int | None = None
    """Head attempts the rule may take."""
    why: str | None = None
    """`not-shown`: what stopped it (`the cap of 12 runs`, `max-usd`, `the base has 2 runs`)."""
    more_runs: int | None = None
    """`not-shown`: about how many more head attempts would decide."""
    more_base_runs: int | None = None
    """`not-shown`: about how many more base attempts it would also take."""
    more_usd: float | None = None
    """`not-shown`: what those runs would cost, at this case's cost per attempt."""
    changed: str | None = None
    """A CLI or served-model change between the two sides: the cause it may be."""
    local: bool = False
    """The head's attempts include recordings committed from someone's machine."""
    flaky: str | None = None
    """`within-noise`: the case's record over both sides, `14/21 over 21 runs`."""

    @property
    def text(self) -> str:
        """`regressed: 1/6 now, 18/20 before (p = 0.0004)`, and what deciding would cost."""
        counts = (f"{self.now_passes}/{self.now_attempts} now, "
                  f"{self.before_passes}/{self.before_attempts} before")
        words = {"regressed": "regressed", "holds": "holds", "within-noise": "within noise",
                 "not-shown": "not shown"}[self.decision]
        text = f"{words}: {counts}"
        if self.decision == "regressed" and self.p_value is not None:
            text += f" (p = {_p(self.p_value)})"
        if self.decision == "holds" and self.tolerance is not None:
            text += f" (not {round(self.tolerance * 100)} points worse)"
        if self.decision == "not-shown":
            text += f"; {self.cost_words}"
        if self.changed:
            text += f"; {self.changed}"
        if self.local:
            text += "; the head's runs include some recorded locally"
        return text

    @property
    def cost_words(self) -> str:
        """What deciding would cost, or what is missing."""
        stopped = f"stopped at {self.why}; " if self.why else ""
        if self.more_runs is None:
            return f"{stopped}no number of runs in reach would decide"
        runs = f"about {self.more_runs} more run{'s' if self.more_runs != 1 else ''}"
        if self.more_base_runs:
            runs += f" and {self.more_base_runs} more of the base"
        cost = f" (~${self.more_usd:.2f})" if self.more_usd else ""
        return f"{stopped}{runs}{cost} would decide"


class RateEstimate(Part):
    """The pass rate as the mean of each case's estimated rate (its history's passes over
    attempts, this run's when it has none), with a 95% interval."""

    rate: float
    """The mean of the cases' rates (0..1)."""
    low: float
    """The interval's lower end."""
    high: float
    """The interval's upper end."""
    cases: int
    """Cases it is over."""
    attempts: int
    """Attempts it is over."""

    @property
    def text(self) -> str:
        return (f"{self.rate:.0%} ({self.low:.0%}–{self.high:.0%}, "
                f"over {self.attempts} attempts of {self.cases} cases)")


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 0.0001 else "< 0.0001"
