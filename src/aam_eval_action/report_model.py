"""The eval report's models: exactly the seed's JSON, with additive fields only (every field
described, so the generated JSON Schema documents the format). Built, merged and judged by
`report.py`.

Reports are read back by `diff` and the PR comment, possibly from another machine or an
older version, so reading is tolerant of missing optional fields and unknown extra keys.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aam_eval_action.dice_model import CaseHistory, Evidence, RateEstimate
from aam_eval_action.report_part import Part
from aam_eval_action.session import SelfCheck
from aam_eval_action.vally.report_model import VallyEval, VallyItem

REPORT_VERSION = 1
SNIPPET_CHARS = 500
STAMP_FORMAT = "%Y-%m-%dT%H-%M-%SZ"
"""Timestamp in report ids and default report file names (no colons: safe in file names)."""
Verdict = Literal["PASS", "FAIL", "SKIP", "ERROR"]
CheckResult = Literal["PASS", "FAIL", "SKIP"]


class SandboxInfo(Part):
    """The sandbox the cases asked for, and what the engine could enforce (additive)."""

    network: bool
    """eval-config `sandbox.network`: whether the agent may use the network."""
    network_enforced: bool | None = None
    """With `network: false`: true when the agent's commands are cut off the network (the OS
    sandbox, or the engine's own), false when only its web tools are denied."""
    enforced: str | None = None
    """What the OS sandbox enforces around every session here, e.g. `writes: landlock; network:
    namespace` (additive)."""
    layers: str | None = None
    """The sandbox layers this machine offers: `landlock ABI 7; network namespace; seccomp`, or
    why there is none (additive)."""
    enforce: str | None = None
    """`required` (a session less confined than asked is refused) or `best-effort` (additive)."""


class RunConfig(Part):
    """How the run was configured (seed: `config`)."""

    engine: str
    """Agent runtime used (from config or `--engine`)."""
    engine_version: str | None = None
    """The runtime's version, as reported by the engine."""
    judge: str | None = None
    """Judge model used (from config or `--judge`)."""
    timeout: float | None = None
    """Max seconds per case."""
    model: str | None = None
    """Agent model requested (additive)."""
    mode: str | None = None
    """Cassette mode of the run: replay, auto, record or live (additive)."""
    package_path: str | None = None
    """The package directory as given to --package, relative when it can be (additive)."""
    sandbox: SandboxInfo | None = None
    """The sandbox asked for and whether its network rule was enforced (additive)."""
    threshold: float | None = None
    """The score `claude plugin eval` cases passed at, when the run had any (additive)."""
    ablation: str | None = None
    """`with-without` or `none`: whether `claude plugin eval` cases also ran without the
    plugin, when the run had any (additive)."""


class AgentInfo(Part):
    """The agent runtime that ran the cases (seed: `agent`)."""

    runtime: str | None = None
    """Actual agent runtime name."""
    runtime_version: str | None = None
    """Agent runtime version."""
    model: str | None = None
    """Model the agent used."""
    model_provider: str | None = None
    """`anthropic`, `openai`..."""
    session_id: str | None = None
    """A session id of the run, for traceability (per-case ids are on each case)."""


class JudgeInfo(Part):
    """The judge model (seed: `judge`)."""

    model: str | None = None
    """Judge model."""
    model_provider: str | None = None
    """Judge provider."""


class Environment(Part):
    """Where the run happened (seed: `environment`)."""

    os: str | None = None
    """Operating system, lower case (`linux`, `darwin`)."""
    arch: str | None = None
    """CPU architecture (`x86_64`, `arm64`)."""
    aam_version: str | None = None
    """Version of this tool."""
    node_version: str | None = None
    """Node.js version the agent CLIs run on, when Node is installed."""
    python_version: str | None = None
    """Python version of this tool."""


class PackageInfo(Part):
    """The package under test (seed: `package`)."""

    name: str | None = None
    """Package name from package.agent.json."""
    version: str | None = None
    """Package version from package.agent.json."""


class TriggerStats(Part):
    """Trigger precision and recall over one skill's trigger cases."""

    cases: int
    """Its cases with `expected.skill-triggered` that were graded."""
    precision: float | None = None
    """Of the cases where it fired, the share that should have."""
    recall: float | None = None
    """Of the cases where it should have fired, the share where it did."""


class SkillRouting(Part):
    """One skill's row of the routing matrix: how often prompts meant for it reached it."""

    cases: int
    """Graded trigger prompts that belong to this skill."""
    fired: int
    """Graded trigger prompts, of any skill, that fired it."""
    precision: float | None = None
    """Of the prompts that fired it, the share that belong to it."""
    precision_ci: tuple[float, float] | None = None
    """95% Wilson interval of the precision."""
    recall: float | None = None
    """Of the prompts that belong to it, the share that fired it."""
    recall_ci: tuple[float, float] | None = None
    """95% Wilson interval of the recall."""
    errored: int = 0
    """Its trigger prompts whose every run errored: not counted as "did not fire"."""
    harness: str | None = None
    """Why these numbers measure the harness rather than the description (its canary did not
    fire, or every session errored); None when they can be trusted."""


class Routing(Part):
    """Which skill each trigger prompt went to: a confusion matrix of expected × fired (additive)."""

    labels: list[str]
    """The matrix's rows and columns: the skills, then `none`."""
    matrix: dict[str, dict[str, int]]
    """Expected skill → fired skill → graded prompts; `none` when no skill fired (or should)."""
    skills: dict[str, SkillRouting]
    """Per skill: precision and recall with their intervals, and harness problems."""
    runs: int | None = None
    """Sessions per trigger prompt (most common), a prompt firing a skill in `threshold` of them."""
    threshold: float | None = None
    """Share of a prompt's runs in which a skill must fire to count as fired."""


class EmptyRun(Part):
    """Why a run selected no case, and what to do about it (additive)."""

    kind: Literal["no-cases", "filtered", "shard"]
    """`no-cases`: the package (or the plugins run) has no eval cases; `filtered`: the case
    names, target, tags or plugins matched none; `shard`: every selected case fell to
    another shard (not a failure)."""
    reason: str
    """Why no case ran, in words."""
    todo: str
    """What to do, in words: `aam-eval init` drafts a starter suite, or the filter to fix."""

    @property
    def fails(self) -> bool:
        """An empty run fails (unless allowed); an idle shard of a suite that has cases does not."""
        return self.kind != "shard"


class Summary(Part):
    """Counts over all cases (seed: `summary`)."""

    total: int
    """Number of cases in the report."""
    passed: int
    """Cases whose verdict is PASS."""
    failed: int
    """Cases whose verdict is FAIL."""
    skipped: int = 0
    """Cases whose verdict is SKIP."""
    pass_rate: float
    """passed / (total - skipped); 0 when nothing ran."""
    errored: int = 0
    """Cases that could not be graded (additive)."""
    flaky: int = 0
    """Cases whose repeated attempts disagreed (additive)."""
    estimate: RateEstimate | None = None
    """The pass rate from each case's rate over its history, with its interval (additive)."""
    cost_usd: float | None = None
    """Agent + judge cost when reported (additive)."""
    replayed: int = 0
    """Cases whose agent session came from a cassette (additive)."""
    not_replayable: int = 0
    """Cases replay could not serve (stale, missing or damaged cassette): not graded (additive)."""
    api_down: int | None = None
    """Cases not run because the model API was down (ERROR, counted in `errored`, never a
    failure or a regression); None when there were none (additive)."""
    graded: int | None = None
    """Cases actually graded: not skipped and not short of a recording (additive)."""
    graded_pass_rate: float | None = None
    """passed / graded: the pass rate over the cases that were actually graded (additive)."""
    run_cost_usd: float | None = None
    """What this run spent on live sessions; a replay costs nothing (`cost_usd` is the recorded
    cost) (additive)."""
    baseline_pass_rate: float | None = None
    """Pass rate of the cases run without the skill, over cases with a baseline verdict (additive)."""
    score: float | None = None
    """`claude plugin eval` cases: the mean of their scores (that runner's overall score) (additive)."""
    mean_delta: float | None = None
    """`claude plugin eval` cases run with both arms: the mean of their deltas (additive)."""
    score_pass_rate: float | None = None
    """`claude plugin eval` cases: the mean of their pass rates (that runner's overall pass rate)
    (additive)."""
    lift_pp: float | None = None
    """Pass rate with the skill minus without it, in percentage points, over the same cases (additive)."""
    skill_not_needed: int | None = None
    """Cases that pass as well without the skill as with it (additive)."""
    trigger_precision: float | None = None
    """Of the cases where the skill fired, the share that should have (additive)."""
    trigger_recall: float | None = None
    """Of the cases where the skill should fire, the share where it did (additive)."""
    trigger_cases: int | None = None
    """Cases with `expected.skill-triggered` that were graded (additive)."""
    triggers_by_skill: dict[str, TriggerStats] | None = None
    """Trigger precision and recall per target skill, with several skills (additive)."""
    routing: Routing | None = None
    """Which skill each trigger prompt fired: the confusion matrix and per-skill precision and
    recall with Wilson intervals (additive)."""
    drafted_unreviewed: int | None = None
    """Cases drafted by `aam-eval init` that no person has reviewed yet (additive)."""
    rerun: int | None = None
    """Cases whose session was re-executed against the recorded model traffic; absent when
    none was (additive)."""
    diverged: int | None = None
    """Re-executed cases whose CLI asked something the recording cannot answer; absent when
    none did (additive)."""
    unstable: int | None = None
    """Cases recorded in this run whose recording did not re-execute cleanly against itself;
    absent when none (additive)."""
    over_budget: int | None = None
    """Cases not graded because their estimated cost did not fit `max-usd`; absent when none
    (additive)."""
    max_usd: float | None = None
    """The run's spending cap (`max-usd`), when one was set (additive)."""
    spent_usd: float | None = None
    """What the run's model calls cost, agents' and judge's, as charged (a CLI that reports no
    cost priced from its live turns' tokens): set under `max-usd`, and by any run that spent
    (additive)."""
    empty: EmptyRun | None = None
    """The run selected no case: why, and what to do; absent when cases ran. An empty run
    fails unless `--allow-empty` (an idle shard does not) (additive)."""


class JudgeVote(Part):
    """One of several judge answers for the same request (additive)."""

    result: Literal["PASS", "FAIL"]
    """This vote's verdict."""
    reason: str = ""
    """This vote's reason."""


class JudgeVerdict(Part):
    """What the judge decided for a case (seed: `cases[].judge_verdict`)."""

    result: Literal["PASS", "FAIL", "ERROR", "SKIP"]
    """The judge's verdict; ERROR when it gave none."""
    reason: str = ""
    """The judge's reason, citing the evidence."""
    model: str | None = None
    """The judge model that answered."""
    replayed: bool | None = None
    """Whether the judge call came from a cassette (additive)."""
    votes: list[JudgeVote] | None = None
    """Every vote, in the order asked, when `judge.votes` is above 1; the majority is `result` (additive)."""


class GraderOutcome(Part):
    """One grader of a `claude plugin eval` case in the run shown, as that runner reports it
    (additive)."""

    name: str
    """The grader's name."""
    type: str
    """`regex`, `tool_used`, `tool_order`, `file_exists`, `llm` or `baseline`."""
    weight: float = 1
    """Its weight in the run's score."""
    passed: bool
    """Whether it passed."""
    scored: bool = True
    """Whether it counts in the score (a with-only grader of a two-arm run does not)."""
    with_only: bool = False
    """Shown only: the plugin-fired indicator of a two-arm run."""
    explanation: str = ""
    """Why, in that runner's words (`Skill called 1x (expected 1..∞)`)."""
    votes: list[bool] | None = None
    """An llm grader's judge votes, in order."""


class Attempt(Part):
    """One attempt of a repeated case (additive)."""

    verdict: Verdict
    """This attempt's verdict."""
    error: str | None = None
    """Why this attempt did not pass."""
    duration_seconds: float | None = None
    """Wall time of this attempt's agent session."""
    skills_fired: list[str] | None = None
    """A trigger case's attempt: the skills its session loaded, in order."""
    score: float | None = None
    """A `claude plugin eval` case's run: its score."""
    graders: list[GraderOutcome] | None = None
    """A `claude plugin eval` case's run: its graders."""
    checks: dict[str, CheckResult] | None = None
    """This attempt's checks, and `judge` when the judge was asked."""


class ReplayDivergence(Part):
    """Where a re-executed session first asked the model something the recording does not have
    (additive)."""

    turn: int
    """The 1-based model turn of the differing request."""
    stream: str = "agent"
    """`agent` (a turn of the agent loop), `side` (titles, summaries), `count_tokens` or `other`."""
    path: str = ""
    """The first differing JSON path in the request (empty: the recording has no such request)."""
    recorded: str | None = None
    """The recorded value there, shortened."""
    live: str | None = None
    """The value the re-executed CLI sent, shortened."""
    tool: str | None = None
    """When the difference is a tool's result: the tool whose call it answers."""
    tool_input: str | None = None
    """That tool call's input, shortened (a command or a path)."""
    conversation: str | None = None
    """The conversation it happened in: `main`, or a sub-agent's (`reviewer`, `reviewer-2`)."""
    user_turn: int | None = None
    """A conversation case: the turn of the conversation it happened in (the user's message the
    agent was answering), from 1 (additive)."""
    message: str = ""
    """The whole finding in one line."""


class ReplayMiss(Part):
    """Why replay could not serve a case, as data (additive)."""

    kind: Literal["no-cassette", "stale", "damaged", "diverged"]
    """no-cassette: nothing recorded; stale: an input changed since recording; damaged: unreadable;
    diverged: re-executed, the CLI sent a request the recording cannot answer."""
    subject: Literal["agent", "judge", "user", "mock"] = "agent"
    """Whose cassette missed: the agent session's, the judge's or the simulated user's."""
    reason: str
    """Why, in words: what changed and when the cassette was recorded, or what is damaged."""
    changes: list[str] = Field(default_factory=list)
    """Each input that changed since recording."""
    rerecord: str | None = None
    """The command that records this case again."""
    divergence: ReplayDivergence | None = None
    """For `diverged`: the first request that differed, with both values."""


class BudgetSkip(Part):
    """Why a case was not run: the estimate against what the cap left (additive)."""

    estimate_usd: float | None
    """What the case was estimated to cost (None: no price known for its model)."""
    basis: str
    """Where the estimate comes from: `recording`, `prices`, or why there is none."""
    cap_usd: float
    """The run's cap (`max-usd`)."""
    left_usd: float
    """What was left of the cap when the case came up."""


class JudgedHashes(Part):
    """What the judge graded, as hashes a human label must match (additive)."""

    output: str
    """The judged output: the task, the agent's final output and its files (`sha256:…`)."""
    criteria: str
    """The criteria it was judged against (`sha256:…`)."""


class CaseLabel(Part):
    """A person's label for the case's engine and model (additive)."""

    verdict: Literal["PASS", "FAIL"]
    """The person's verdict."""
    reason: str
    """Why, in their words."""
    by: str
    """Who."""
    at: str
    """When."""
    stale: bool = False
    """The output or the criteria changed since: the label no longer decides."""
    why_stale: str | None = None
    """What changed: `its output changed`, `its criteria changed`."""


class Agreement(Part):
    """How far one judge model agrees with people, over the outputs both graded."""

    judge_model: str
    """The judge model."""
    labels: int
    """Outputs both a person and this judge graded."""
    agreement: float
    """Share of them where both gave the same verdict."""
    kappa: float | None = None
    """Cohen's κ: agreement beyond chance (None when it is undefined: everyone said the same)."""
    true_pass_rate: float | None = None
    """Of the outputs people passed, the share the judge passed (None: people passed none)."""
    true_fail_rate: float | None = None
    """Of the outputs people failed, the share the judge failed (None: people failed none)."""
    disagreements: list[str] = Field(default_factory=list)
    """The cases where they disagree: `case (person PASS, judge FAIL)`."""


class LabelsSummary(Part):
    """Human labels over the run, and how far each judge model agrees with them (additive)."""

    gate: str = "always"
    """`judge-gate`: always, calibrated or never."""
    decided: int = 0
    """Cases whose verdict a label decided."""
    stale: list[str] = Field(default_factory=list)
    """Labels that no longer match their output or criteria, each with what changed."""
    agreement: list[Agreement] = Field(default_factory=list)
    """Per judge model, over the outputs both people and the judge graded."""


class VolatileMask(Part):
    """A value re-execution ignores because a recording of that CLI version learnt it is
    volatile (additive)."""

    cli: str
    """The CLI and version whose recordings learnt it (`claude 2.1.330`)."""
    mask: str
    """What is ignored, in words: `a number after `duration_ms: `` and the values seen."""
    case: str | None = None
    """The case whose recording learnt it."""


class CaseResult(Part):
    """One case's outcome (seed: `cases[]`)."""

    name: str
    """Case name."""
    title: str | None = None
    """The name the case is written under, where that is not its id (`Enrich skill routing`):
    shown in its place."""

    @property
    def shown(self) -> str:
        """The case's name as a person wrote it: its title, else its name."""
        return self.title or self.name
    target: str | None = None
    """What the case exercises: `skill:NAME`, `hook:EVENT` or `agent:NAME`."""
    verdict: Verdict
    """PASS, FAIL, SKIP or ERROR (could not be graded)."""
    duration_seconds: float = 0
    """Wall time of the case in this run."""
    deterministic_checks: dict[str, CheckResult] = Field(default_factory=dict)
    """Each deterministic check run, by name (`contains`, `files_created`...), and its result."""
    judge_verdict: JudgeVerdict | None = None
    """The LLM judge's verdict; always written, `SKIP` with the reason when the judge was not
    asked (a deterministic check failed, the session failed, replay missed). Reports of older
    versions may lack it."""
    agent_output_snippet: str = ""
    """The first 500 characters of the agent's final output."""
    error: str | None = None
    """Why the case did not pass, in one line."""
    file: str | None = None
    """Case file, relative to the package root (additive)."""
    line: int | None = None
    """Line of the case in its file (additive)."""
    replayed: bool | None = None
    """Whether the agent session came from a cassette (additive)."""
    fingerprint: str | None = None
    """Hash of every input that shaped the agent session (additive)."""
    session_id: str | None = None
    """The engine's session id (additive)."""
    usage: dict[str, int] | None = None
    """Token usage of the agent session (additive)."""
    cost_usd: float | None = None
    """Agent + judge cost in USD when reported; on replay, what the recording cost (additive)."""
    run_cost_usd: float | None = None
    """What this run spent on the case: the cost of its live sessions, 0 on replay (additive)."""
    attempts: list[Attempt] | None = None
    """Every attempt when the case was repeated (additive)."""
    flaky: bool | None = None
    """Whether repeated attempts disagreed (additive)."""
    history: CaseHistory | None = None
    """The case's attempts over the runs that recorded these inputs, from its history (additive)."""
    evidence: Evidence | None = None
    """A changed case sampled until the rule decided: both sides' counts and the decision (additive)."""
    replay_miss: Literal["no-cassette", "stale", "damaged", "diverged"] | None = None
    """Why replay could not serve this case, when it could not (additive)."""
    api_down: bool | None = None
    """True when the model API kept answering errors (429, 5xx, 529, a cut stream) until the
    CLI or SDK gave up: an ERROR, never graded, never recorded; `error` says what the API said
    (additive)."""
    replay_kind: Literal["snapshot", "rerun", "live"] | None = None
    """How the agent session was had: `snapshot` (the recorded outcome read back), `rerun` (the
    real CLI re-executed against the recorded model traffic) or `live` (additive)."""
    live_from_turn: int | None = None
    """A re-executed session that diverged and went on live: the first live model turn (additive)."""
    turns: int | None = None
    """A conversation case: the user turns it took, the first prompt counted (additive)."""
    stopped: str | None = None
    """A conversation case: why it ended (`turns-done`, `goal-reached`, `agent-finished`,
    `max-turns`, `error`) (additive)."""
    changed_at_turn: int | None = None
    """A re-executed conversation that differed from its recording: the conversation turn where
    it first did (it diverged there, or went on live from there) (additive)."""
    miss: ReplayMiss | None = None
    """The replay miss in full: reason, changed inputs, re-record command (additive)."""
    self_check: SelfCheck | None = None
    """Recorded in this run: the recording re-executed once against its own traffic, the
    volatile values it learnt, or where it stayed unstable (additive)."""
    judged: JudgedHashes | None = None
    """What the judge graded, as hashes (for human labels) (additive)."""
    label: CaseLabel | None = None
    """A person's label for this case's output: it decides the verdict unless stale (additive)."""
    judge_advisory: str | None = None
    """Why the judge's FAIL did not fail the case (`judge-gate`) (additive)."""
    confinement: str | None = None
    """How the OS confined the agent session shown: `writes: landlock; network: port-only`, or
    `writes: check; network: none (why)` where the kernel has no Landlock (additive)."""
    budget: BudgetSkip | None = None
    """Not graded (budget): its estimated cost did not fit what was left of `max-usd`, so nothing
    was sent for it (additive)."""
    check_details: dict[str, str] | None = None
    """Why each failed deterministic check failed (a failed `command` keeps its output here) (additive)."""
    trigger_expected: bool | None = None
    """The case's `expected.skill-triggered` (additive)."""
    skill_triggered: bool | None = None
    """Whether the target skill was loaded in the session (additive; set with `skill-triggered`);
    over repeated runs, whether it fired in at least the threshold share of them."""
    expected_skill: str | None = None
    """A trigger case: the skill its prompt belongs to (the target when it should fire, the
    sibling of a near miss), or `none` (additive)."""
    routed_to: str | None = None
    """A trigger case: the skill its prompt fired in at least the threshold share of runs, or
    `none` (additive)."""
    score: float | None = None
    """A `claude plugin eval` case: the mean of its runs' scores (each the weighted share of its
    scored graders that passed); it passes at the threshold (additive)."""
    pass_rate: float | None = None
    """A `claude plugin eval` case: the share of its runs that scored 1 (additive)."""
    run_scores: list[float] | None = None
    """A `claude plugin eval` case: each run's score, in order (additive)."""
    graders: list[GraderOutcome] | None = None
    """A `claude plugin eval` case: its graders in the run shown (additive)."""
    score_without: float | None = None
    """A `claude plugin eval` case run with both arms: its score without the plugin (additive)."""
    graders_without: list[GraderOutcome] | None = None
    """A `claude plugin eval` case run with both arms: its graders without the plugin, in the
    run shown (additive)."""
    pass_rate_without: float | None = None
    """A `claude plugin eval` case run with both arms: its pass rate without the plugin (additive)."""
    delta: float | None = None
    """A `claude plugin eval` case run with both arms: score minus score without the plugin;
    withheld when the arm without errored (additive)."""
    skills_fired: list[str] | None = None
    """A trigger case: the skills the shown session loaded, in order (additive)."""
    fire_rate: float | None = None
    """A trigger case: the share of its runs that did not error in which the target fired (additive)."""
    prompt: str | None = None
    """A trigger case's prompt (first 500 characters), for the routing table (additive)."""
    canary: bool | None = None
    """A trigger case that names its skill outright: if it does not fire, the harness is at
    fault, not the description (additive)."""
    draft: str | None = None
    """`unreviewed` or `reviewed`: a case drafted by `aam-eval init` (additive)."""
    baseline_verdict: Verdict | None = None
    """The verdict of the same case run without the skill (additive; with --baseline)."""
    baseline_error: str | None = None
    """Why the baseline run did not pass (additive)."""
    baseline_attempts: list[Attempt] | None = None
    """Every attempt of the baseline run when the case was repeated (additive)."""
    forced: str | None = None
    """How the case's skill was invoked by name in its prompt, whatever routing decided (the
    forced arm of `sensitivity`; additive)."""
    baseline_checks: dict[str, CheckResult] | None = None
    """The checks of the baseline run's shown attempt, and `judge` when it was asked (additive)."""
    skill_not_needed: bool | None = None
    """The case passes as well without the skill as with it (additive; with --baseline)."""
    cassette_changed: bool | None = None
    """The pull request added or changed this case's cassettes (set by the action; additive)."""
    cassette_provenance: str | None = None
    """Where the changed cassette says it was recorded: a CI run URL or `recorded locally` (additive)."""
    engine: str | None = None
    """The engine this result is for, in a report of several engines or models (additive)."""
    model: str | None = None
    """The agent model this result is for, in a report of several engines or models (additive)."""
    plugin: str | None = None
    """The plugin the case belongs to, in a repository of plugins (its name is then
    `<plugin>/<case>` when there are several) (additive)."""
    source: str | None = None
    """The other tool's eval format the case was imported from (`skill-creator`,
    `trigger-set`…); `file` is that file (additive)."""
    skipped_checks: dict[str, str] | None = None
    """What the imported file asks that could not be honoured, each with why (additive)."""
    vally: VallyItem | None = None
    """A Vally stimulus's names and its eval's threshold (additive)."""


class PairSummary(Part):
    """One engine + model of a run that covered several (additive)."""

    engine: str
    """The engine."""
    model: str
    """The agent model it ran with."""
    engine_version: str | None = None
    """The engine's version, as it reported it."""
    summary: Summary
    """Counts over this pair's cases."""


class PluginSummary(Part):
    """One plugin of a repository of plugins (additive)."""

    name: str
    """The plugin's name."""
    layout: str
    """The layout it was read from (`claude-plugin`, `claude-plugin+gemini-extension`…)."""
    path: str
    """Its folder, relative to the package root (`.` for the root)."""
    summary: Summary
    """Counts over its cases."""
    warnings: list[str] = Field(default_factory=list)
    """What its files break of their standards, and what could not be converted for the
    run's engines."""
    no_cases: bool | None = None
    """True when the plugin has no eval cases at all: nothing of it is evaluated (additive)."""


class ListingView(Part):
    """What one CLI's skill listing shows of the package in this run, predicted by its rule
    (the engine's listing rule, `engines/<engine>_listing.py`) for the skills the run installs
    (additive)."""

    engine: str
    """The engine whose CLI sends the listing."""
    model: str
    """The model it runs (the budget may follow from its context window)."""
    cli: str
    """The CLI release whose rule this is."""
    budget: int | None = None
    """None: the CLI puts no budget on its listing."""
    unit: str = "characters"
    """What the budget counts: `characters`, `tokens` (Codex: UTF-8 bytes / 4) or `UTF-16 units`."""
    used: int = 0
    """The listing's size, its own skills included."""
    cli_size: int = 0
    """What the CLI's own skills take of it."""
    package_size: int = 0
    """What the package's skills take of it."""
    neighbors_size: int = 0
    """What the neighbours take of it."""
    skills: dict[str, Literal["full", "truncated", "name-only", "left-out"]]
    """Each of the package's skills: listed in full, cut short, by name only, or not at all."""
    neighbors: int = 0
    """Neighbour skills listed with it."""
    neighbors_name_only: int = 0
    """Of them, shown by name only or not at all."""
    neighbor_names: list[str] = Field(default_factory=list)
    """Their names (a prompt that goes to one of them is a neighbour taking the package's)."""


class SweepSkill(Part):
    """One skill at one point of a crowding sweep (additive)."""

    shown: Literal["full", "truncated", "name-only", "left-out"]
    """How the CLI's listing shows it with that many neighbours (its rule's prediction)."""
    cases: int = 0
    """Its graded trigger prompts."""
    recall: float | None = None
    """Of its prompts, the share that fired it."""
    recall_ci: tuple[float, float] | None = None
    """95% Wilson interval of the recall."""
    precision: float | None = None
    """Of the prompts that fired it, the share that belong to it."""
    precision_ci: tuple[float, float] | None = None
    """95% Wilson interval of the precision."""


class SweepPoint(Part):
    """The trigger cases on one engine + model with one number of neighbours installed (additive)."""

    engine: str
    """The engine the point ran on."""
    model: str
    """The model it ran with."""
    size: int
    """The sweep's size asked for."""
    neighbors: int
    """Neighbours installed: the size, or the whole pool when it is smaller (drawn the same way
    every time; a bigger draw holds every smaller one)."""
    skills: dict[str, SweepSkill]
    """The package's skills."""
    lost: list[str] = Field(default_factory=list)
    """Cases whose prompt reached its skill with the fewest neighbours, and not with these."""
    taken: dict[str, str] = Field(default_factory=dict)
    """Case → the neighbour its prompt went to instead."""
    graded: int = 0
    """Trigger cases graded at this point."""
    replayed: int = 0
    """Of them, replayed from cassettes."""
    errored: int = 0
    """Trigger cases that errored (not counted as "did not fire")."""


class Sweep(Part):
    """A crowding sweep: the trigger cases rerun with more and more neighbours installed (additive)."""

    pool: int
    """Neighbours it drew from."""
    sizes: list[int]
    """The sizes asked for (neighbours installed at each point)."""
    points: list[SweepPoint]
    """Each engine + model at each size."""
    name_only_from: dict[str, dict[str, int | None]] = Field(default_factory=dict)
    """`<engine> <model>` → skill → the fewest neighbours (of this pool, drawn as the sweep draws)
    with which the listing shows it by name only or not at all; None when never."""


class Report(Part):
    """`evals/reports/<timestamp>.json`: the seed's eval report."""

    version: int
    """Report format version."""
    id: str
    """Run id, `eval-run-<timestamp>`."""
    timestamp: str
    """When the run started (UTC, ISO 8601)."""
    duration_seconds: float
    """Wall time of the whole run."""
    config: RunConfig
    """How the run was configured."""
    agent: AgentInfo = Field(default_factory=AgentInfo)
    """The agent runtime."""
    judge: JudgeInfo = Field(default_factory=JudgeInfo)
    """The judge model."""
    environment: Environment = Field(default_factory=Environment)
    """Where the run happened."""
    package: PackageInfo = Field(default_factory=PackageInfo)
    """The package under test."""
    summary: Summary
    """Counts over all cases."""
    cases: list[CaseResult]
    """Every case, sorted by name."""
    interrupted: bool | None = None
    """True when the run was interrupted and this report is partial (additive)."""
    pairs: list[PairSummary] | None = None
    """With several engines or models: each engine + model and its summary, in run order; each
    case then names its `engine` and `model`, and `summary` counts every case of every pair
    (additive; absent for a run of one engine and model)."""
    layout: str | None = None
    """The repository's layout when it is not an AAM package (`claude-marketplace`, `skills`…)
    (additive)."""
    labels: LabelsSummary | None = None
    """Human labels: how many decided, which are stale, and judge–human agreement (additive)."""
    volatile: list[VolatileMask] | None = None
    """What re-execution ignores besides `rerun-ignore`: the volatile values the recordings in
    the cassettes directory learnt, per CLI version (additive)."""
    plugins: list[PluginSummary] | None = None
    """The plugins run, each with its summary, in a repository of plugins; each case then
    names its `plugin` (additive)."""
    listings: list[ListingView] | None = None
    """What each engine's skill listing shows of the package (with the run's neighbours), when
    it cuts anything, or the run installs neighbours (additive)."""
    sweep: Sweep | None = None
    """The crowding sweep, when the run made one (`--sweep`) (additive)."""
    vally: list[VallyEval] | None = None
    """Each Vally eval's numbers (pass rate, pass@k, pass^k), when the run graded stimuli (additive)."""


# --- building a report ---
