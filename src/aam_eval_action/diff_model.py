"""The diff's models: what a pull request changed, case by case, as the comment, the HTML page
and the JSON show it (built by `diff.py`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from aam_eval_action.dice_model import Evidence, RateEstimate
from aam_eval_action.report import (
    EmptyRun,
    LabelsSummary,
    Routing,
    Verdict,
)

Category = Literal[
    "regressed", "stale", "diverged", "not-shown", "not-run", "fixed", "new", "removed", "no-baseline",
    "still-failing", "unchanged",
]
CATEGORIES: tuple[Category, ...] = (
    "regressed",
    "stale",
    "diverged",
    "not-shown",
    "not-run",
    "fixed",
    "new",
    "removed",
    "no-baseline",
    "still-failing",
    "unchanged",
)
STALE_MISSES = ("stale", "no-cassette")
"""Replay misses that re-recording fixes (a damaged cassette needs a look first)."""
NOT_PASSING = ("FAIL", "ERROR")


class CaseDiff(BaseModel):
    """One case seen in either report, and how it changed."""

    name: str
    """Case name."""
    title: str | None = None
    """The name the case is written under, where that is not its id."""
    category: Category
    """How the case changed from base to head."""
    target: str | None = None
    """What the case exercises (`skill:NAME`, `hook:EVENT`...), head's else base's."""
    base_verdict: Verdict | None = None
    """Verdict on the base; None for a new case."""
    head_verdict: Verdict | None = None
    """Verdict on the head; None for a removed case."""
    file: str | None = None
    """Case file relative to the package root, head's else base's."""
    line: int | None = None
    """Line of the case in its file, head's else base's."""
    failed_checks: list[str] = Field(default_factory=list)
    """Deterministic checks that failed on the head."""
    judge_reason: str | None = None
    """The judge's reason, head's else base's."""
    error: str | None = None
    """Why the case failed or errored, head's else base's."""
    cost_usd: float | None = None
    """Cost of the case, head's else base's."""
    flaky: bool = False
    """The case was flaky on the base or the head: a regression is not blamed on the PR."""
    replay_miss: str | None = None
    """Why the head could not replay the case, when it could not."""
    base_replay_miss: str | None = None
    """Why the base could not replay the case (the reason for `no-baseline`)."""
    base_passes: str | None = None
    """Passing attempts on the base as `passed/attempts`, e.g. `5/5`."""
    head_passes: str | None = None
    """Passing attempts on the head as `passed/attempts`."""
    p_value: float | None = None
    """Fisher's exact test on the pass counts, when both sides were repeated."""
    significant: bool | None = None
    """p < 0.05: the change is beyond attempt-to-attempt noise; None without repeats on both sides."""
    evidence: Evidence | None = None
    """Both sides' counts and the decision on them (`dice.py`): the rule's, for a changed case; the
    history's, for an unchanged case that flipped."""
    evidence_text: str | None = None
    """That evidence in words: `regressed: 1/6 now, 18/20 before (p = 0.0004)`."""
    history: str | None = None
    """The head's history of the case's inputs: `14/20 over 20 runs since 2026-11-01`."""
    judge_votes: str | None = None
    """The head judge's votes when several were asked, e.g. `2 PASS · 1 FAIL`."""
    baseline_verdict: Verdict | None = None
    """The head's verdict without the skill (with --baseline)."""
    skill_not_needed: bool | None = None
    """The case passes on the head as well without the skill as with it (with --baseline)."""
    engine: str | None = None
    """In a diff of several engines or models: the engine of this entry."""
    model: str | None = None
    """In a diff of several engines or models: the agent model of this entry."""
    source: str | None = None
    """The other tool's eval format the case was imported from."""
    skipped_checks: dict[str, str] | None = None
    """What that file asks that could not be honoured, each with why."""
    label: str | None = None
    """On the head: who decided the verdict against the judge and why, or that their label is stale."""
    judge_advisory: str | None = None
    """On the head: why the judge's FAIL did not fail the case (`judge-gate`)."""
    budget: str | None = None
    """Not graded (budget) on the head: the estimate against what the cap left."""
    unstable: str | None = None
    """Recorded on the head and unstable against itself: the request that still differed."""
    turns: int | None = None
    """A conversation case: the user turns it took on the head (the first prompt counted),
    else on the base."""
    base_turns: int | None = None
    """A conversation case: the user turns it took on the base."""
    changed_at_turn: int | None = None
    """A conversation re-executed on the head that differed from its recording: the
    conversation turn where it first did."""
    live_from_user_turn: int | None = None
    """That conversation went on live from this conversation turn (under `auto`): its turns
    from there on were run live, not answered from the recording."""
    base_score: float | None = None
    """A `claude plugin eval` case: its score on the base."""
    head_score: float | None = None
    """A `claude plugin eval` case: its score on the head."""
    score_without: float | None = None
    """A `claude plugin eval` case run with both arms: its score without the plugin, on the head."""
    base_delta: float | None = None
    """A `claude plugin eval` case run with both arms: score minus score without, on the base."""
    head_delta: float | None = None
    """A `claude plugin eval` case run with both arms: score minus score without, on the head."""


class RunTotals(BaseModel):
    """The numbers of one report."""

    total: int
    """Number of cases."""
    passed: int
    """Cases that passed."""
    failed: int
    """Cases that failed."""
    errored: int
    """Cases that could not be graded."""
    skipped: int
    """Cases skipped."""
    pass_rate: float
    """passed / graded: cases that could not be replayed are not counted as failures."""
    graded: int = 0
    """Cases actually graded: not skipped, and not short of a recording."""
    not_replayable: int = 0
    """Cases replay could not serve (stale, missing or damaged cassette)."""
    api_down: int = 0
    """Cases not run because the model API was down: errors, never failures or regressions."""
    cost_usd: float | None = None
    """What the run's sessions cost when they were recorded, when known."""
    run_cost_usd: float | None = None
    """What this run itself spent (0 for a replay), when known."""
    duration_seconds: float
    """Wall time of the run."""
    replayed: int = 0
    """Cases whose agent session came from a cassette."""
    baseline_pass_rate: float | None = None
    """Pass rate without the skill (with --baseline)."""
    lift_pp: float | None = None
    """The skill's lift: pass rate with it minus without it, in percentage points."""
    skill_not_needed: int | None = None
    """Cases that pass as well without the skill."""
    trigger_precision: float | None = None
    """Share of the sessions where the skill fired that should have."""
    trigger_recall: float | None = None
    """Share of the sessions that should fire the skill where it did."""
    trigger_cases: int | None = None
    """Cases with `expected.skill-triggered`."""
    over_budget: int | None = None
    """Cases not graded because their estimated cost did not fit `max-usd`."""
    max_usd: float | None = None
    """The run's spending cap, when one was set."""
    spent_usd: float | None = None
    """Under a cap: what the run's model calls cost."""
    unstable: int | None = None
    """Cases recorded in this run whose recording did not re-execute cleanly against itself."""
    routing: Routing | None = None
    """Which skill each trigger prompt fired: the confusion matrix, precision and recall."""
    drafted_unreviewed: int | None = None
    """Cases drafted by `aam-eval init` that no person has reviewed yet."""
    score: float | None = None
    """`claude plugin eval` cases: the mean of their scores."""
    mean_delta: float | None = None
    """`claude plugin eval` cases run with both arms: the mean of their deltas."""
    estimate: RateEstimate | None = None
    """The pass rate from each case's rate over its history, with its interval."""


class LostListing(BaseModel):
    """A skill of the package that the head's skill listing shows worse than the base's: cut
    short, by name only or not at all (a CLI's listing budget)."""

    engine: str
    """The engine whose listing it is."""
    model: str
    """The model it runs."""
    skill: str
    """The package's skill."""
    base: str
    """How the base's listing showed it: `full`, `truncated`, `name-only` or `left-out`."""
    head: str
    """How the head's shows it."""


class MovedPrompt(BaseModel):
    """A trigger prompt that fired another skill on the head than on the base: what a changed
    description does."""

    name: str
    """Case name."""
    prompt: str
    """The prompt (first 500 characters)."""
    base: str
    """The skill it fired on the base, or `none`."""
    head: str
    """The skill it fires on the head, or `none`."""
    expected: str | None = None
    """The skill it belongs to, or `none`."""
    neighbor: bool | None = None
    """True when it now goes to a neighbour skill installed beside the package."""
    file: str | None = None
    """Case file relative to the package root."""
    line: int | None = None
    """Line of the case in its file."""
    engine: str | None = None
    """In a diff of several engines or models: the engine of this entry."""
    model: str | None = None
    """In a diff of several engines or models: the agent model of this entry."""


class StaleCase(BaseModel):
    """A head case whose cassette is missing or out of date."""

    name: str
    """Case name."""
    reason: str
    """Why replay missed: the inputs that changed since recording, or that nothing was recorded."""
    file: str | None = None
    """Case file relative to the package root."""
    line: int | None = None
    """Line of the case in its file."""
    engine: str | None = None
    """In a diff of several engines or models: the engine of this entry."""
    model: str | None = None
    """In a diff of several engines or models: the agent model of this entry."""


class RerecordedCase(BaseModel):
    """A head case whose cassettes the pull request added or changed: its verdict comes from them."""

    name: str
    """Case name."""
    provenance: str
    """Where the cassette says it was recorded: a CI run URL, or `recorded locally`."""
    head_verdict: Verdict | None = None
    """The case's verdict on the head."""
    engine: str | None = None
    """In a diff of several engines or models: the engine of this entry."""
    model: str | None = None
    """In a diff of several engines or models: the agent model of this entry."""


class DivergedCase(BaseModel):
    """A head case whose re-executed session asked the model something the recording cannot answer."""

    name: str
    """Case name."""
    title: str | None = None
    """The name the case is written under, when not its id (a Vally stimulus's) (additive)."""
    turn: int | None = None
    """The model turn where it diverged."""
    tool: str | None = None
    """The tool whose result changed, when the difference is a tool result."""
    tool_input: str | None = None
    """That tool call's input (a command or a path), shortened."""
    path: str | None = None
    """The first differing JSON path in the request."""
    recorded: str | None = None
    """The recorded value, shortened."""
    live: str | None = None
    """The value the re-executed CLI sent, shortened."""
    user_turn: int | None = None
    """A conversation case: the conversation turn it diverged in (the user's message the
    agent was answering), from 1."""
    changes: list[str] = Field(default_factory=list)
    """Inputs the pull request changed that the case depends on."""
    file: str | None = None
    """Case file relative to the package root."""
    line: int | None = None
    """Line of the case in its file."""
    engine: str | None = None
    """In a diff of several engines or models: the engine of this entry."""
    model: str | None = None
    """In a diff of several engines or models: the agent model of this entry."""


class Headline(BaseModel):
    """One part of a diff (an engine + model, a plugin): its own headline numbers."""

    base: RunTotals | None = None
    """This part's numbers on the base; None when the base did not have it."""
    head: RunTotals
    """This part's numbers on the head."""
    compared: int = 0
    """This part's cases graded on both sides."""
    base_compared_rate: float | None = None
    """The base's pass rate over those cases."""
    head_compared_rate: float | None = None
    """The head's pass rate over those cases."""
    pass_rate_delta_pp: float | None = None
    """(head - base) over those cases, in percentage points."""
    regressions: int = 0
    """Regressions of this part blamed on the PR."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Number of this part's cases per category."""

    @classmethod
    def of(cls, d: ReportDiff, **names: str) -> Any:
        return cls(base=d.base, head=d.head, compared=d.compared, base_compared_rate=d.base_compared_rate,
                   head_compared_rate=d.head_compared_rate, pass_rate_delta_pp=d.pass_rate_delta_pp,
                   regressions=d.regressions, counts=d.counts, **names)


class PairDiff(Headline):
    """One engine + model of a diff of several: its own headline."""

    engine: str
    """The engine."""
    model: str
    """The agent model."""


class PluginDiff(Headline):
    """One plugin of a repository of several: its own headline."""

    plugin: str
    """The plugin's name."""


class MatrixCell(BaseModel):
    """One case on one engine + model: base → head."""

    base_verdict: Verdict | None = None
    """Verdict on the base; None when the base did not have it."""
    head_verdict: Verdict | None = None
    """Verdict on the head; None when the head did not have it."""
    category: Category
    """How it changed."""


class MatrixRow(BaseModel):
    """One case across every engine + model of the head (cells in `pairs` order; None: not run)."""

    name: str
    """Case name."""
    file: str | None = None
    """Case file relative to the package root."""
    line: int | None = None
    """Line of the case in its file."""
    cells: list[MatrixCell | None]
    """One cell per pair."""
    agree: bool
    """Every pair that graded the case on the head gave it the same verdict."""


class PairComparison(BaseModel):
    """Two engines or models of the same head run, compared over the cases both graded."""

    engine: str
    """The compared pair's engine."""
    model: str
    """The compared pair's model."""
    reference_engine: str
    """The reference pair's engine (the run's first pair)."""
    reference_model: str
    """The reference pair's model."""
    compared: int
    """Cases graded on both pairs."""
    reference_rate: float | None = None
    """The reference's pass rate over those cases."""
    rate: float | None = None
    """The compared pair's pass rate over those cases."""
    delta_pp: float | None = None
    """(compared - reference) in percentage points."""
    delta_ci_pp: list[float] | None = None
    """95% interval of that change (Newcombe, from Wilson intervals)."""
    reference_passes: str | None = None
    """With repeats: the reference's passing attempts over those cases, `passed/attempts`."""
    passes: str | None = None
    """With repeats: the compared pair's passing attempts over those cases."""
    p_value: float | None = None
    """Fisher's exact test on those attempt counts, when both pairs repeated their cases."""
    significant: bool | None = None
    """p < 0.05; None without repeats."""
    better: list[str] = Field(default_factory=list)
    """Cases the compared pair passes and the reference does not."""
    worse: list[str] = Field(default_factory=list)
    """Cases the reference passes and the compared pair does not."""


class ReportDiff(BaseModel):
    """Everything the PR comment, `aam-eval diff` and the action outputs show."""

    package: str | None = None
    """Package name, from the head report."""
    engine: str
    """Engine of the head run."""
    model: str | None = None
    """Agent model of the head run."""
    judge: str | None = None
    """Judge model of the head run."""
    mode: str | None = None
    """Cassette mode of the head run."""
    interrupted: bool = False
    """The head run was interrupted: its report is partial."""
    base: RunTotals | None = None
    """Base numbers; None when there is no base report."""
    head: RunTotals
    """Head numbers."""
    compared: int = 0
    """Cases graded on both sides: the compared pass rates and their delta are over these."""
    base_compared_rate: float | None = None
    """The base's pass rate over the compared cases; None without a base or with none compared."""
    head_compared_rate: float | None = None
    """The head's pass rate over the compared cases; None without a base or with none compared."""
    pass_rate_delta_pp: float | None = None
    """(head - base) pass rate over the compared cases, in percentage points; None when there
    is no base or no case was graded on both sides."""
    cost_delta_usd: float | None = None
    """Head cost minus base cost, when both are known."""
    duration_delta_seconds: float | None = None
    """Head wall time minus base wall time."""
    counts: dict[str, int]
    """Number of cases per category (every category present, zero included)."""
    regressions: int
    """Regressions blamed on the PR: regressed cases that are not flaky."""
    flaky_regressions: int
    """Regressed cases that were flaky on the base or the head."""
    cases: list[CaseDiff]
    """Every case, grouped by category in `CATEGORIES` order, then by name."""
    stale: list[StaleCase] = Field(default_factory=list)
    """Head cases that need re-recording."""
    diverged: list[DivergedCase] = Field(default_factory=list)
    """Head cases whose re-executed session diverged from the recording, with where and how."""
    package_path: str | None = None
    """The head run's --package as given, for re-record commands."""
    noise_regressions: int = 0
    """Regressed cases whose pass counts changed within noise (Fisher p >= 0.05): not blamed."""
    repeated: bool = False
    """Some case was repeated on both sides, so changes could be tested for significance."""
    pass_rate_delta_ci_pp: list[float] | None = None
    """95% interval of the pass-rate change in percentage points (Newcombe, from Wilson intervals)."""
    rerecorded: list[RerecordedCase] = Field(default_factory=list)
    """Head cases whose cassettes the pull request changed ("re-recorded in this PR")."""
    moved: list[MovedPrompt] = Field(default_factory=list)
    """Trigger prompts that fire another skill on the head than on the base."""
    lost_listing: list[LostListing] = Field(default_factory=list)
    """Skills of the package the head's listing shows worse than the base's (a listing budget)."""
    neighbors: list[str] = Field(default_factory=list)
    """The neighbour skills the head installed beside the package (a moved prompt that goes to one
    of them is a neighbour taking the package's prompts)."""
    confinement: list[str] = Field(default_factory=list)
    """How the head's agent sessions were confined (`writes: landlock; network: port-only`), each
    way once."""
    pairs: list[PairDiff] | None = None
    """With several engines or models on the head: each one's headline, in run order; the
    cases, counts and lists above then cover every case of every pair (absent otherwise)."""
    matrix: list[MatrixRow] | None = None
    """With several pairs: case × pair, base → head in each cell."""
    pairs_agree: bool | None = None
    """With several pairs: every case got the same verdict from every pair that graded it."""
    comparisons: list[PairComparison] | None = None
    labels: LabelsSummary | None = None
    """The head's human labels: how many decided, which are stale, judge–human agreement."""
    plugins: list[PluginDiff] | None = None
    """In a repository of several plugins: each plugin's headline, in the head's order (plugins
    only the base had last); case names are then `<plugin>/<case>`."""
    """With several pairs: each pair against the first, over the cases both graded."""
    empty: EmptyRun | None = None
    """The head run selected no case: why, and what to do; None when cases ran."""
    plugins_without_cases: list[str] = Field(default_factory=list)
    """In a repository of plugins: the head's plugins that have no eval cases at all."""
