"""What a report keeps of Vally stimuli and evals (`report_model.CaseResult.vally`, `Report.vally`)."""

from __future__ import annotations

from aam_eval_action.report_part import Part


class VallyItem(Part):
    """A Vally stimulus: its names as Vally gives them, and its eval's threshold."""

    eval: str
    """The eval's `name` (its file's folder when it has none)."""
    stimulus: str
    """The stimulus's `name`."""
    threshold: float | None = None
    """The eval's `scoring.threshold` (None: every grader must pass)."""

    @property
    def item_id(self) -> str:
        return f"{self.eval}::{self.stimulus}"


class VallyEval(Part):
    """One Vally eval's numbers, as Vally's scoring page defines them
    (https://microsoft.github.io/vally/concepts/scoring/, reference/scoring-functions)."""

    name: str
    """The eval's `name`."""
    file: str
    """Its spec file, relative to the repository."""
    passed: bool
    """Its mean stimulus score reaches the threshold; with none, every stimulus passed."""
    scoring_applied: bool
    """A threshold was set (else the binary verdicts decide)."""
    overall_score: float
    """The mean of its stimuli's scores."""
    threshold: float | None = None
    """Its `scoring.threshold`, when set."""
    stimuli_run: int
    """Stimuli that were graded (not errored)."""
    stimuli_total: int
    """Its stimuli in this run."""
    pass_rate: float
    """The mean over its stimuli of each one's share of passing trials."""
    k: int | None = None
    """Trials per stimulus, when every stimulus ran the same number and at least 2."""
    pass_at_k: float | None = None
    """The mean over its stimuli of 1 − C(n−c, k) / C(n, k) (unbiased; k = n)."""
    pass_hat_k: float | None = None
    """The mean over its stimuli of pᵏ, p = c / n (pass^k, as Vally computes it)."""
