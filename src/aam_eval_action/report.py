"""The eval report: exactly the seed's JSON, with additive fields only.

Models (every field described, so the generated JSON Schema documents the format), how a
run builds a report, how shard reports merge, and the pass/fail policy of a run.

Reports are read back by `diff` and the PR comment, possibly from another machine or an
older version, so reading is tolerant of missing optional fields and unknown extra keys.
"""

from __future__ import annotations

import functools
import json
import platform
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aam_eval_action import __version__
from aam_eval_action.errors import ConfigError, UsageError
from aam_eval_action.session import SelfCheck

if TYPE_CHECKING:
    from aam_eval_action.loader import FileError, LoadedPackage, LoadedRepo
    from aam_eval_action.session import Session
    from aam_eval_action.settings import RunSettings

REPORT_VERSION = 1
SNIPPET_CHARS = 500
STAMP_FORMAT = "%Y-%m-%dT%H-%M-%SZ"
"""Timestamp in report ids and default report file names (no colons: safe in file names)."""
Verdict = Literal["PASS", "FAIL", "SKIP", "ERROR"]
CheckResult = Literal["PASS", "FAIL", "SKIP"]


class Part(BaseModel):
    """Base for report parts: extra keys from other versions are kept, not refused."""

    model_config = ConfigDict(extra="allow")


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
    cost_usd: float | None = None
    """Agent + judge cost when reported (additive)."""
    replayed: int = 0
    """Cases whose agent session came from a cassette (additive)."""
    not_replayable: int = 0
    """Cases replay could not serve (stale, missing or damaged cassette): not graded (additive)."""
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
    """Under `max-usd`: what the run's model calls cost, agents' and judge's, as charged against
    the cap (additive)."""
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
    replay_miss: Literal["no-cassette", "stale", "damaged", "diverged"] | None = None
    """Why replay could not serve this case, when it could not (additive)."""
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
    (`catalog.rules`) for the skills the run installs (additive)."""

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


# --- building a report ---


def was_graded(case: CaseResult) -> bool:
    """Whether the case was actually graded: not skipped, and replay did not miss its recording.

    A case that could not be replayed says nothing about the agent: it must not count as failed.
    """
    return case.verdict != "SKIP" and case.replay_miss is None


def summarize(cases: list[CaseResult]) -> Summary:
    """Counts and pass rates over case results."""
    passed = sum(c.verdict == "PASS" for c in cases)
    skipped = sum(c.verdict == "SKIP" for c in cases)
    ran = len(cases) - skipped
    graded = sum(was_graded(c) for c in cases)
    costs = [c.cost_usd for c in cases if c.cost_usd is not None]
    run_costs = [c.run_cost_usd for c in cases if c.run_cost_usd is not None]
    summary = Summary(
        total=len(cases),
        passed=passed,
        failed=sum(c.verdict == "FAIL" for c in cases),
        skipped=skipped,
        errored=sum(c.verdict == "ERROR" for c in cases),
        flaky=sum(bool(c.flaky) for c in cases),
        pass_rate=round(passed / ran, 4) if ran else 0.0,
        cost_usd=round(sum(costs), 6) if costs else None,
        replayed=sum(bool(c.replayed) for c in cases),
        not_replayable=sum(c.replay_miss is not None for c in cases),
        graded=graded,
        graded_pass_rate=round(passed / graded, 4) if graded else 0.0,
        run_cost_usd=round(sum(run_costs), 6) if run_costs else None,
        rerun=sum(c.replay_kind == "rerun" for c in cases) or None,
        diverged=sum(c.replay_miss == "diverged" for c in cases) or None,
        unstable=sum(bool(c.self_check and c.self_check.unstable) for c in cases) or None,
        over_budget=sum(c.budget is not None for c in cases) or None,
    )
    _add_lift(summary, cases)
    _add_scores(summary, cases)
    _add_triggers(summary, cases)
    summary.routing = routing(cases)
    summary.drafted_unreviewed = sum(c.draft == "unreviewed" for c in cases) or None
    return summary


def _add_lift(summary: Summary, cases: list[CaseResult]) -> None:
    """Baseline pass rate and lift, over the cases graded both with and without the skill."""
    both = [c for c in cases if c.baseline_verdict not in (None, "SKIP", "ERROR") and c.verdict != "ERROR"]
    if not both:
        return
    with_skill = sum(c.verdict == "PASS" for c in both) / len(both)
    without = sum(c.baseline_verdict == "PASS" for c in both) / len(both)
    summary.baseline_pass_rate = round(without, 4)
    summary.lift_pp = round((with_skill - without) * 100, 2) + 0.0
    summary.skill_not_needed = sum(bool(c.skill_not_needed) for c in both)


def _add_scores(summary: Summary, cases: list[CaseResult]) -> None:
    """`claude plugin eval` cases: the overall score and the mean delta, as that runner gives them."""
    scored = [c.score for c in cases if c.score is not None]
    if scored:
        summary.score = sum(scored) / len(scored)
        rates = [c.pass_rate for c in cases if c.score is not None and c.pass_rate is not None]
        summary.score_pass_rate = sum(rates) / len(rates) if rates else None
    deltas = [c.delta for c in cases if c.delta is not None]
    if deltas:
        summary.mean_delta = sum(deltas) / len(deltas)


def _add_triggers(summary: Summary, cases: list[CaseResult]) -> None:
    """Trigger precision and recall over the cases that say whether the skill should fire."""
    graded = [c for c in cases if c.trigger_expected is not None and c.skill_triggered is not None
              and c.verdict != "ERROR"]
    if not graded:
        return
    overall = _trigger_stats(graded)
    summary.trigger_cases = overall.cases
    summary.trigger_precision, summary.trigger_recall = overall.precision, overall.recall
    skills = sorted({c.target or "" for c in graded})
    if len(skills) > 1:
        summary.triggers_by_skill = {
            s.removeprefix("skill:"): _trigger_stats([c for c in graded if c.target == s]) for s in skills}


def _trigger_stats(graded: list[CaseResult]) -> TriggerStats:
    fired = [c for c in graded if c.skill_triggered]
    should = [c for c in graded if c.trigger_expected]
    hits = sum(bool(c.trigger_expected) for c in fired)
    return TriggerStats(cases=len(graded), precision=round(hits / len(fired), 4) if fired else None,
                        recall=round(hits / len(should), 4) if should else None)


NO_SKILL = "none"
"""The routing matrix's label for "no skill": no skill fired, or none should."""


def routing(cases: list[CaseResult]) -> Routing | None:
    """The confusion matrix of the trigger cases (expected × fired) and each skill's precision
    and recall with 95% Wilson intervals; None without trigger cases."""
    from aam_eval_action.stats import wilson

    trigger = [c for c in cases if c.expected_skill is not None]
    graded = [c for c in trigger if c.verdict != "ERROR" and c.routed_to is not None]
    if not trigger:
        return None
    named = {c.expected_skill or NO_SKILL for c in trigger} | {c.routed_to or NO_SKILL for c in graded}
    skills = sorted(named - {NO_SKILL})
    labels = [*skills, NO_SKILL]
    matrix = {row: {col: 0 for col in labels} for row in labels}
    for c in graded:
        matrix[c.expected_skill or NO_SKILL][c.routed_to or NO_SKILL] += 1
    rows: dict[str, SkillRouting] = {}
    for skill in skills:
        hits = matrix[skill][skill]
        belong, fired = sum(matrix[skill].values()), sum(matrix[r][skill] for r in labels)
        row = SkillRouting(cases=belong, fired=fired,
                           errored=sum(c.expected_skill == skill and c.verdict == "ERROR" for c in trigger))
        if fired:
            row.precision, row.precision_ci = round(hits / fired, 4), _ci(wilson(hits, fired))
        if belong:
            row.recall, row.recall_ci = round(hits / belong, 4), _ci(wilson(hits, belong))
        row.harness = harness_problem(skill, trigger, row)
        if row.harness and not belong:
            row.recall = None
        rows[skill] = row
    runs = [len(c.attempts) if c.attempts else 1 for c in graded]
    return Routing(labels=labels, matrix=matrix, skills=rows,
                   runs=max(set(runs), key=runs.count) if runs else None)


def harness_problem(skill: str, trigger: list[CaseResult], row: SkillRouting) -> str | None:
    """Why a skill's routing numbers say nothing about its description: the prompt that names it
    outright did not fire it, or every session meant to fire it errored."""
    canaries = [c for c in trigger if c.canary and c.expected_skill == skill and c.verdict != "ERROR"]
    if any(c.routed_to != skill for c in canaries):
        return (f"its canary, which names {skill} outright, did not fire it: the skill is probably not "
                "installed or not visible to the engine (a harness fault, not its description)")
    if row.errored and not row.cases:
        return (f"every session of its {row.errored} trigger prompt(s) errored: nothing was measured "
                "(errored runs are never counted as \"did not fire\")")
    return None


def _ci(interval: tuple[float, float]) -> tuple[float, float]:
    return round(interval[0], 4), round(interval[1], 4)


def snippet(text: str) -> str:
    """The report's agent output snippet: the first 500 characters."""
    return text[:SNIPPET_CHARS]


def not_asked(why: str) -> JudgeVerdict:
    """The judge verdict of a case the judge was not asked about, and why not."""
    return JudgeVerdict(result="SKIP", reason=f"not asked: {why}")


def _file_case(file: str) -> str:
    """What a refused case file is listed as: its stem, or its folder's name for a case that is
    a folder (`claude plugin eval`'s `case.yaml` / `prompt.md`)."""
    path = Path(file)
    return path.parent.name if path.name in ("case.yaml", "prompt.md") and path.parent.name else path.stem


def file_error_results(errors: list[FileError], package: LoadedPackage | None = None) -> list[CaseResult]:
    """Bad case files as ERROR results, so a run reports them and goes on."""
    return [
        CaseResult(name=package.qualified(name) if package else name, verdict="ERROR", error=str(err),
                   file=err.file, line=err.line, judge_verdict=not_asked("the case file is invalid"),
                   plugin=package.plugin if package else None)
        for err in errors for name in [err.case_name or _file_case(err.file)]
    ]


def build_report(
    s: RunSettings, results: list[CaseResult], sessions: list[Session | None], started: datetime,
    duration: float, interrupted: bool,
) -> Report:
    """The seed's report, provenance taken from what the engine reported."""
    from aam_eval_action.engines.registry import ENGINES
    from aam_eval_action.fsutil import display_path

    first = next((x for x in sessions if x is not None), None)
    info = ENGINES.get(s.engine)
    report = Report(
        version=REPORT_VERSION,
        id="eval-run-" + started.strftime(STAMP_FORMAT),
        timestamp=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        duration_seconds=round(duration, 3),
        config=RunConfig(
            engine=s.engine, engine_version=first.runtime_version if first else None,
            judge=s.judge_model, timeout=s.timeout, model=s.model, mode=s.mode,
            package_path=display_path(s.package.layout.root),
            sandbox=sandbox_info(s),
            **({"threshold": s.threshold, "ablation": s.ablation} if any(r.score is not None for r in results)
               else {}),
        ),
        agent=AgentInfo(
            runtime=s.engine, runtime_version=first.runtime_version if first else None,
            model=(first.model if first else None) or s.model,
            model_provider=info.provider_for(s.model) if info else None,
            session_id=first.session_id if first else None,
        ),
        judge=JudgeInfo(model=s.judge_model, model_provider=s.judge_provider),
        environment=environment(),
        package=PackageInfo(name=s.package.manifest.name, version=s.package.manifest.version),
        summary=summarize(results),
        cases=sorted(results, key=lambda r: r.name),
    )
    if interrupted:
        report.interrupted = True
    report.summary.max_usd = s.max_usd
    if report.summary.routing is not None:
        report.summary.routing.threshold = s.trigger_threshold
    report.volatile = learnt_masks(s.cassettes) or None
    return report


def learnt_masks(cassettes: Path) -> list[VolatileMask]:
    """The volatile values learnt by the recordings of a cassettes directory, per CLI version."""
    from aam_eval_action.replay.traffic_store import every_mask

    return [VolatileMask(cli=label, mask=mask.describe(), case=mask.case or None)
            for label, mask in every_mask(cassettes)]


_PROBING: dict[int, Any] = {}
"""Sandbox probes started early (`probe_sandbox`), by the id of the run's settings."""


def probe_sandbox(s: RunSettings) -> None:
    """Start probing what this machine's sandbox enforces, in a thread, while the run goes on:
    the probes wait on child processes, and the report needs their answer only at the end."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="sandbox-probe")
    _PROBING[id(s)] = (s, pool.submit(_sandbox_info, s))
    pool.shutdown(wait=False)


def sandbox_info(s: RunSettings) -> SandboxInfo:
    """What the sandbox enforces here: probed now, or taken from a probe `probe_sandbox` began."""
    started = _PROBING.pop(id(s), None)
    if started is not None and started[0] is s:
        result: SandboxInfo = started[1].result()
        return result
    return _sandbox_info(s)


def _sandbox_info(s: RunSettings) -> SandboxInfo:
    """`network_enforced` is reported whenever the network is to be off: never silently."""
    from aam_eval_action.engines.registry import ENGINES
    from aam_eval_action.sandbox.plan import (
        confine,
        probe,
        probe_namespace,
        probe_seccomp,
        simulated_no_supervisor,
        simulated_none,
        unix_layer,
    )

    network = s.config.sandbox.network
    info = ENGINES.get(s.engine)
    simulate, no_supervisor = simulated_none(s.runner_env), simulated_no_supervisor(s.runner_env)
    here = confine([], 1, network, simulate, no_supervisor=no_supervisor)
    enforced = None if network else (here.network in ("port-only", "namespace")
                                     or bool(info and info.enforces_no_network))
    version, why = probe(simulate)
    no_namespace = probe_namespace()
    first = f"landlock ABI {version}" if version else "sandbox-exec" if here.seatbelt else f"none: {why}"
    layers = first + (
        f"; no network namespace ({no_namespace})" if no_namespace else "; network namespace")
    if first.startswith("landlock"):
        no_filter = probe_seccomp()
        layers += f"; no seccomp filter ({no_filter})" if no_filter else "; seccomp"
    if not here.seatbelt:
        unix, why_not = unix_layer(no_supervisor)
        layers += "; unix supervisor" if unix == "session" else f"; {why_not}"
    return SandboxInfo(network=network, network_enforced=enforced, enforced=here.describe(),
                       layers=layers, enforce=s.sandbox_enforce)


def environment() -> Environment:
    return Environment(
        os=platform.system().lower(), arch=platform.machine(), aam_version=__version__,
        node_version=_node_version(), python_version=platform.python_version(),
    )


@functools.cache
def _node_version() -> str | None:
    """Node's version, asked once per process (the agent CLIs run on it)."""
    node = shutil.which("node")
    if not node:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().lstrip("v") or None


def default_report_path(evals_dir: Path, started: datetime) -> Path:
    """`evals/reports/<timestamp>.json`."""
    return evals_dir / "reports" / (started.strftime(STAMP_FORMAT) + ".json")


Pair = tuple[str, str]
"""(engine, model)."""


def case_pair(report: Report, case: CaseResult) -> Pair:
    """The engine and model a case result is for: its own, else its report's."""
    return (case.engine or report.config.engine,
            case.model or report.config.model or report.agent.model or "")


def report_pairs(report: Report) -> list[Pair]:
    """The engine + model pairs a report covers, in run order."""
    if report.pairs:
        return [(p.engine, p.model) for p in report.pairs]
    return [(report.config.engine, report.config.model or report.agent.model or "")]


def split_by_pair(report: Report) -> list[Report]:
    """A report of several pairs as one single-pair report each (a single-pair report: itself)."""
    if not report.pairs:
        return [report]
    parts = []
    for pair in report.pairs:
        part = report.model_copy(deep=True)
        part.pairs = None
        part.cases = [c.model_copy(update={"engine": None, "model": None}) for c in report.cases
                      if case_pair(report, c) == (pair.engine, pair.model)]
        part.config.engine, part.config.model = pair.engine, pair.model
        part.config.engine_version = part.agent.runtime_version = pair.engine_version
        part.agent.runtime, part.agent.model = pair.engine, pair.model
        part.summary = summarize(part.cases)
        parts.append(part)
    return parts


def merge_reports(reports: list[Report]) -> Report:
    """Cases of all shards and pairs in one report (a case twice for the same engine and model is
    an error), summaries recomputed.

    Shards of one engine + model give a report like the run's; reports of several pairs (a
    sharded matrix, or one report per pair) give a matrix report with `pairs`.
    """
    if not reports:
        raise UsageError("merge needs at least one report")
    seen: dict[tuple[str, str, str], int] = {}
    cells: list[tuple[Pair, CaseResult]] = []
    versions: dict[Pair, str | None] = {}
    for i, report in enumerate(reports):
        for part in split_by_pair(report):
            versions.setdefault(report_pairs(part)[0], part.config.engine_version)
        for case in report.cases:
            pair = case_pair(report, case)
            key = (case.name, *pair)
            if key in seen:
                on = f" on {pair[0]} with {pair[1]}" if len(versions) > 1 else ""
                raise UsageError(
                    f"case {case.name!r}{on} is in shard reports {seen[key] + 1} and {i + 1}; "
                    "merge reports of disjoint shards or of different engines/models"
                )
            seen[key] = i
            cells.append((pair, case))
    first = min(reports, key=lambda r: r.timestamp)
    merged = first.model_copy(deep=True)
    order = list(versions)
    if len(order) == 1:
        merged.cases = [c.model_copy(update={"engine": None, "model": None}) for _, c in cells]
        merged.pairs = None
    else:
        merged.cases = [c.model_copy(update={"engine": p[0], "model": p[1]}) for p, c in cells]
        _describe_pairs(merged, order, versions)
    merged.cases.sort(key=lambda c: (c.name, order.index(case_pair(merged, c))))
    merged.summary = summarize(merged.cases)
    merged.summary.max_usd = first.summary.max_usd
    spent = [r.summary.spent_usd for r in reports if r.summary.spent_usd is not None]
    merged.summary.spent_usd = round(sum(spent), 6) if spent else None
    masks = {(m.cli, m.mask): m for r in reports for m in r.volatile or []}
    merged.volatile = list(masks.values()) or None
    # Shards run side by side: the run took as long as its slowest shard.
    merged.duration_seconds = max(r.duration_seconds for r in reports)
    merged.summary.empty = None if merged.cases else merged_empty(reports)
    if any(r.interrupted for r in reports):
        merged.interrupted = True
    return merged


def _describe_pairs(report: Report, order: list[Pair], versions: dict[Pair, str | None]) -> None:
    """`pairs` with a summary each; config and agent name every engine and model, comma-separated."""
    report.pairs = [
        PairSummary(engine=e, model=m, engine_version=versions.get((e, m)),
                    summary=summarize([c for c in report.cases if (c.engine, c.model) == (e, m)]))
        for e, m in order
    ]
    engines = ",".join(dict.fromkeys(e for e, _ in order))
    models = ",".join(dict.fromkeys(m for _, m in order))
    report.config.engine = report.agent.runtime = engines
    report.config.model = report.agent.model = models
    report.config.engine_version = report.agent.runtime_version = None
    report.agent.model_provider = None


def describe_plugins(report: Report, repo: LoadedRepo, engines: list[str]) -> None:
    """The layout and each plugin's summary and warnings (lint, and what could not be
    converted for the run's engines); several plugins: the report is the repository's."""
    from aam_eval_action.engines.install import conversion_warnings
    from aam_eval_action.engines.registry import ENGINES

    report.layout = repo.kind
    report.plugins = []
    for package in repo.packages:
        layout = package.layout
        warnings = [str(f) for f in layout.findings]
        for engine in dict.fromkeys(engines):
            reads = tuple(ENGINES[engine].hook_dialects)
            warnings += [f"{engine}: {w}" for w in conversion_warnings(layout, reads)]  # type: ignore[arg-type]
        report.plugins.append(PluginSummary(
            name=package.plugin or layout.name, layout=layout.kind, path=layout.base or ".",
            summary=summarize([c for c in report.cases if c.plugin == package.plugin]), warnings=warnings,
            no_cases=(not package.cases and not package.errors) or None))
    if repo.several:
        report.package = PackageInfo(name=repo.name or repo.root.name, version=None)


# --- policy ---


def merged_empty(reports: list[Report]) -> EmptyRun | None:
    """Why reports merged into none ran a case: the first that is not an idle shard's."""
    found = [r.summary.empty for r in reports if r.summary.empty is not None]
    return next((e for e in found if e.fails), found[0] if found else None)


def plugins_without_cases(report: Report) -> list[str]:
    """The plugins of a repository of plugins that have no eval cases at all."""
    return [p.name for p in report.plugins or [] if p.no_cases]


def all_passed(report: Report) -> bool:
    """The run passed: every case passed or was skipped."""
    return all(c.verdict in ("PASS", "SKIP") for c in report.cases)


# --- files ---


def to_json(report: Report) -> str:
    """Stable JSON: seed field order, no nulls for absent additive fields, trailing newline."""
    return report.model_dump_json(indent=2, exclude_none=True) + "\n"  # as json.dumps(indent=2) writes it


def load_report(path: Path) -> Report:
    """Read a report written by any version; a broken one is a clear error."""
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such report file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON report ({exc})") from None
    try:
        return Report.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(
            f"{path}: {where}: {first['msg']} — is this an aam-eval report?"
        ) from None
