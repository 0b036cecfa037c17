"""The kill matrix of `aam-eval sensitivity`, as models: every mutant on every engine and whether
the suite noticed it, every check's verdict in each arm, each case in the three arms, and the
sessions a matrix cell compares (`aam-eval schema sensitivity`).

Built by `sensitivity/matrix.py` from the reports of the arms and mutants; drawn by
`render/sensitivity.py` (console, job summary) and `render/sensitivity_html.py` (the page),
which read these models and nothing of the run that made them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from aam_eval_action.report_model import CheckResult

VERSION = 1
Status = Literal["killed", "survived", "not-measured", "not-run"]
Direction = Literal["removes", "over-claims"]
"""What a mutant tests. `removes`: it takes away or breaks what the package gives (a body, a
section, a file, a script, a hook, a server's answers), so a check that needs it should fail.
`over-claims`: it makes a skill claim requests it should not (its description broadened to every
request, or given a sibling's wording), so a check that guards against a false trigger should
fail."""
DIRECTIONS: tuple[Direction, ...] = ("removes", "over-claims")
ADJECTIVE: dict[Direction, str] = {"removes": "removing", "over-claims": "over-claiming"}
"""A direction as it qualifies a mutant: `an over-claiming mutant`."""


class CheckRef(BaseModel):
    """A check of a case."""

    case: str
    """The case's name."""
    check: str
    """The check's name (`contains`, `judge`, a grader's name…)."""


class Cost(BaseModel):
    """How a variant's cases were graded, and what it spent."""

    replayed: int = 0
    """Cases read back from their recording (snapshot)."""
    re_executed: int = 0
    """Cases whose CLI ran again against the recording and never asked anything new: no model call."""
    live: int = 0
    """Cases that went to the model (live, or live after the recording diverged)."""
    cost_usd: float = 0.0
    """What it spent (under a cap, all it charged against it)."""
    model_calls: bool = False
    """Whether any model (agent or judge) was called."""


class MutantRow(BaseModel):
    """One mutant on one engine: what it changed, and whether the suite noticed."""

    id: str
    """`<skill>/<kind>[/<slug>]` or `hooks/<event>`; its cassettes sit in `_sensitivity/<id>/`."""
    kind: str
    """body, description, broadened, sibling, section, file-removed, script-fails, hook-removed,
    mcp-error, mock-error or own."""
    direction: Direction = "removes"
    """What it tests: `removes` (something the package gives taken away or broken) or
    `over-claims` (a skill made to claim requests it should not)."""
    what: str
    """What it changed."""
    file: str
    """The file it changed, relative to the package root."""
    line: int | None = None
    """Where the changed part starts."""
    engine: str
    """The engine the suite ran on."""
    status: Status
    """killed, survived (uncovered guidance), not-measured, or not-run (the cap, no recording)."""
    killed_by: list[CheckRef] = Field(default_factory=list)
    """The checks that passed with the package and fail with the mutant."""
    cases_failed: list[str] = Field(default_factory=list)
    """The cases that passed with the package and do not with the mutant."""
    kill_rate: float | None = None
    """Killed cases over the measured cases that passed with the package."""
    graded: Cost = Field(default_factory=Cost)
    """How its cases were graded, and what it spent."""
    note: str | None = None
    """Why it was not measured or not run."""


class CheckRow(BaseModel):
    """One check of one case on one engine: does it tell the package from none, and from a mutant?"""

    case: str
    """The case's name."""
    check: str
    """The check's name."""
    engine: str
    """The engine the suite ran on."""
    file: str
    """The case's file."""
    line: int | None = None
    """Where the check is written (its key, or a grader's name), else where the case starts."""
    with_package: CheckResult | None = None
    """Its verdict with the package."""
    without_package: CheckResult | None = None
    """Its verdict without the package."""
    forced: CheckResult | None = None
    """With the skill's content loaded whatever routing decides."""
    discriminates: bool | None = None
    """Its verdict differs without and with the package (None: not measured in both)."""
    backwards: bool = False
    """It passes without the package and fails with it."""
    flipped_by: list[str] = Field(default_factory=list)
    """The mutants under which it fails, having passed with the package."""
    untried: list[Direction] = Field(default_factory=list)
    """The directions the package has a mutant of, none of which was measured on its case (left
    out by `--mutants`, not run, or errored): it is not called weak while any is."""
    weak: bool = False
    """It passes with the package, does not discriminate, no mutant flips it, and mutants of
    every direction the package has were measured on its case."""
    passes_with: tuple[int, int] | None = None
    """(passed, runs) with the package."""
    passes_without: tuple[int, int] | None = None
    """(passed, runs) without the package."""
    difference: tuple[float, float] | None = None
    """95% interval of its pass rate with minus without the package."""


class CaseRow(BaseModel):
    """A case in the three arms: what its skill's content is worth, and what routing loses."""

    case: str
    """The case's name."""
    engine: str
    """The engine the suite ran on."""
    with_package: str | None = None
    """The case's verdict with the package."""
    without_package: str | None = None
    """Its verdict without the package."""
    forced: str | None = None
    """Its verdict with its skill invoked by name."""
    forced_how: str | None = None
    """How the skill was invoked by name (or why it was not)."""
    content: str | None = None
    """Forced against without: `helps` (passes only forced), `hurts`, `no difference`."""
    routing: str | None = None
    """Forced against with: `loses` (passes only forced: the skill's content helps once loaded,
    and routing does not load it), `gains`, `no difference`."""


class SessionRef(BaseModel):
    """What one case did in one variant (an arm or a mutant): shown when a matrix cell opens."""

    engine: str
    """The engine the suite ran on."""
    variant: str
    """`with`, `without`, `forced`, or a mutant's id."""
    case: str
    """The case's name."""
    verdict: str | None = None
    """The case's verdict there."""
    checks: dict[str, CheckResult] = Field(default_factory=dict)
    """Each check's verdict there, and `judge` when it gave one."""
    output: str = ""
    """The agent's output (its first 500 characters)."""
    error: str | None = None
    """Why it did not pass."""
    graded: str | None = None
    """`replayed`, `re-executed` or `live`."""


class Arm(BaseModel):
    """One run of the suite as an arm: with and without the package, or forced."""

    name: str
    """`<engine>: with and without`, or `<engine>: forced`."""
    how: str
    """How the arm ran (`without`: the package not installed; `forced`: how each engine loaded the skill)."""
    graded: Cost = Field(default_factory=Cost)
    """How its cases were graded, and what it spent."""


class Sensitivity(BaseModel):
    """`aam-eval sensitivity -o`: the kill matrix of a package's suite."""

    version: int = VERSION
    """Format version."""
    package: str
    """The package measured."""
    engines: list[str]
    """The engines the suite ran on."""
    arms: list[Arm] = Field(default_factory=list)
    """The runs of the suite as it is: with and without the package, and forced."""
    mutants: list[MutantRow] = Field(default_factory=list)
    """Every mutant on every engine."""
    checks: list[CheckRow] = Field(default_factory=list)
    """Every check of every case that ran with the package."""
    cases: list[CaseRow] = Field(default_factory=list)
    """Every case in the three arms."""
    sessions: list[SessionRef] = Field(default_factory=list)
    """Each case in each variant, for the HTML matrix."""
    uncovered: list[str] = Field(default_factory=list)
    """`<engine>: <mutant id>` of every mutant nothing killed."""
    weak: list[str] = Field(default_factory=list)
    """`<engine>: <case> / <check>` of every weak check."""
    not_run: list[str] = Field(default_factory=list)
    """What the cap (or an error) left out, in words."""
    cost_usd: float = 0.0
    """What the run spent."""


def measured_mutants(result: Sensitivity) -> list[MutantRow]:
    """The mutants the suite was measured against (killed or survived), every engine's."""
    return [m for m in result.mutants if m.status in ("killed", "survived")]


def flip_directions(result: Sensitivity, check: CheckRow) -> list[Direction]:
    """The directions of the mutants that flipped a check, in `DIRECTIONS` order."""
    flipped = {m.direction for m in result.mutants if m.engine == check.engine and m.id in check.flipped_by}
    return [d for d in DIRECTIONS if d in flipped]


def unmoved(check: CheckRow) -> bool:
    """A check that passes with the package, that neither the package nor any mutant moved, and
    that is not called weak: a direction the package has was never measured on its case."""
    return (check.with_package == "PASS" and not check.discriminates and not check.flipped_by
            and bool(check.untried))
