"""The file formats a package author writes: package manifest, eval-config and eval cases."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from aam_eval_action.engines.registry import RESERVED_NAMES, engine_names
from aam_eval_action.json_schema import check_schema
from aam_eval_action.modes import Mode, Rerun
from aam_eval_action.tools import NeutralTool

NAME_RE = re.compile(r"^[a-z0-9-]{1,64}$")
TARGET_RE = re.compile(r"^(skill|hook|agent):[A-Za-z0-9._-]+$")


def _relative_path(value: str) -> str:
    """A path that stays inside its root: relative, no `..`, no backslashes."""
    if not value or value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", value):
        raise ValueError(f"{value!r} must be a relative path inside its root, not absolute")
    parts = value.replace("\\", "/").split("/")
    if ".." in parts:
        raise ValueError(f"{value!r} escapes its root with '..'; use a path inside it")
    return "/".join(p for p in parts if p not in ("", "."))


RelPath = Annotated[str, AfterValidator(_relative_path)]


def _regex(value: str) -> str:
    """A pattern Python's `re` compiles."""
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{value!r} is not a valid regular expression ({exc}); fix the pattern") from None
    return value


Regex = Annotated[str, AfterValidator(_regex)]


def _needle(value: str) -> str:
    """A substring, or `/pattern/` for a regular expression."""
    if len(value) >= 2 and value.startswith("/") and value.endswith("/"):
        _regex(value[1:-1])
    elif not value:
        raise ValueError("an empty string matches every file; write a substring or /regex/")
    return value


Needle = Annotated[str, AfterValidator(_needle)]


def _json_schema(value: dict[str, Any]) -> dict[str, Any]:
    problem = check_schema(value)
    if problem:
        raise ValueError(problem)
    return value


def _command(value: object) -> object:
    """The string shorthand of `command`."""
    return {"run": value} if isinstance(value, str) else value


class Strict(BaseModel):
    """Base for author-written formats: unknown keys are errors, hyphenated keys as written."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=False, frozen=True
    )


class PackageManifest(BaseModel):
    """`package.agent.json`: only the fields this tool reads; the rest belongs to other tools."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    """Package name, e.g. `@my-org/code-review`."""
    version: str
    """Package version, e.g. `1.0.0`."""


class Sandbox(Strict):
    """`sandbox`: what the agent may reach and write."""

    network: bool = False
    """Allow network access in the sandbox."""
    writable_paths: list[RelPath] | None = Field(default=None, alias="writable-paths")
    """Workspace directories the agent may write to; None means the whole workspace."""
    enforce: Literal["best-effort", "required"] = "best-effort"
    """`required`: refuse to run a session the OS cannot confine as asked (writes, and the
    network when `network` is false); `best-effort`: run it, and report what was enforced
    (additive)."""


def _engine_name(value: str) -> str:
    if value not in engine_names() + RESERVED_NAMES:
        raise ValueError(f"unknown engine {value!r}; use one of: {', '.join(engine_names())}")
    return value


EngineName = Annotated[str, AfterValidator(_engine_name)]
MODEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")


def model_name(value: str) -> str:
    """A model name as providers write them; nothing a CLI could read as a flag or a path."""
    if not MODEL_RE.match(value):
        raise ValueError(f"{value[:80]!r} is not a model name: use letters, digits and . _ : / @ + -, "
                         "starting with a letter or digit (e.g. claude-sonnet-4-6)")
    return value


ModelName = Annotated[str, AfterValidator(model_name)]


def _distinct(values: list[Any], what: str) -> None:
    seen = set()
    for value in values:
        key = value if isinstance(value, str) else (value.engine, value.model)
        if key in seen:
            raise ValueError(f"{what} lists {value if isinstance(value, str) else key} twice; list it once")
        seen.add(key)


class EnginePair(Strict):
    """One entry of `pairs`: an engine and the model it runs the cases with."""

    engine: EngineName
    """Agent runtime, as in `engine`."""
    model: ModelName
    """The model that engine runs with."""


class ModelPrice(Strict):
    """A model's list price, USD per million tokens."""

    input: float = Field(ge=0)
    """Per million input tokens (cached input is charged a tenth of it, cache writes 1.25 times)."""
    output: float = Field(ge=0)
    """Per million output tokens."""


class JudgeCalibration(Strict):
    """When `judge-gate: calibrated` trusts a judge's FAIL."""

    min_kappa: float = Field(default=0.6, ge=-1, le=1, alias="min-kappa")
    """The judge model's Cohen's κ against human labels must reach this."""
    min_labels: int = Field(default=10, ge=1, alias="min-labels")
    """... over at least this many labelled outputs it also graded."""


class Triggers(Strict):
    """`triggers`: how trigger cases (`skill-triggered`, `expected-skill`) are run and decided."""

    runs: int = Field(default=3, ge=1, le=100)
    """Sessions per trigger case (a case's own `repeat`, or `--repeat`, takes precedence)."""
    threshold: float = Field(default=0.5, gt=0, le=1)
    """A skill fired for a prompt when it fired in at least this share of the runs that did not
    error (an errored run is never counted as "did not fire")."""


StopOn = Literal["goal-reached", "agent-finished"]


class UserConfig(Strict):
    """`user`: the simulated user of conversation cases (`input.user`)."""

    model: ModelName | None = None
    """The model that plays the user; defaults to the judge's model."""
    max_turns: int = Field(default=6, ge=1, le=50, alias="max-turns")
    """Most user turns in a conversation, the first prompt counted: hit before the user's goal
    is reached, the case fails with that reason."""
    stop_on: list[StopOn] = Field(default=["goal-reached", "agent-finished"], alias="stop-on")
    """What ends a conversation before `max-turns`: the user says its goal is reached, the agent
    finished without asking anything, or both (the default)."""


MAX_SWEEP_SIZES = 8


def check_sweep(value: list[int]) -> list[int]:
    """A sweep's sizes: distinct numbers of neighbours from 0 to 2000, at most 8, ascending."""
    if len(value) > MAX_SWEEP_SIZES:
        raise ValueError(f"at most {MAX_SWEEP_SIZES} sizes")
    if any(n < 0 or n > 2000 for n in value):
        raise ValueError("each size is a number of neighbours from 0 to 2000")
    if len(set(value)) != len(value):
        raise ValueError("a size is listed twice")
    return sorted(value)


def _mutant_name(value: str) -> str:
    if not NAME_RE.match(value):
        raise ValueError(f"{value!r} is not a valid mutant name: use 1-64 characters of a-z, 0-9 and '-'")
    return value


class OwnMutant(Strict):
    """A mutant of the package's own for `aam-eval sensitivity`: one file changed one way, a text
    in it replaced (`replace` and `with`) or the file removed (`remove: true`)."""

    name: Annotated[str, AfterValidator(_mutant_name)]
    """Its name: the mutant's id is `own/<name>`."""
    file: RelPath
    """The file it changes, relative to the package root."""
    replace: str | None = Field(default=None, min_length=1)
    """The text to replace (every occurrence); it must be in the file."""
    with_: str = Field(default="", alias="with")
    """What replaces it (nothing unless given)."""
    remove: bool = False
    """Remove the file instead."""
    direction: Literal["removes", "over-claims"] = "removes"
    """What it tests: `removes` (it takes away or breaks what the package gives) or `over-claims`
    (it makes a skill claim requests it should not, as a broadened description does)."""

    @model_validator(mode="after")
    def _one_change(self) -> OwnMutant:
        if (self.replace is None) == (not self.remove):
            raise ValueError("give either `replace` (and `with`) or `remove: true`")
        return self


class EvalConfig(Strict):
    """`evals/eval-config.json`."""

    version: Literal[1]
    """Eval config format version. Currently `1`."""
    engine: str
    """Agent runtime: `claude-code`, `codex`, `copilot` or `gemini-cli` (`cursor` is reserved: no CLI
    to drive)."""
    timeout: float = Field(default=120, gt=0)
    """Max seconds per eval case."""
    judge: str | None = None
    """Model used for the LLM judge; defaults to the agent's model."""
    model: ModelName | None = None
    """Model the agent runs with; defaults to the engine's default (additive field)."""
    sandbox: Sandbox = Field(default_factory=Sandbox)
    """What the agent may reach and write."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables injected into the sandbox; `${VAR}` takes VAR from the runner's environment."""
    secret_env: list[str] = Field(default_factory=list, alias="secret-env")
    """Names in `env` whose values are secret: never written anywhere (additive field)."""
    mode: Mode = "auto"
    """Default cassette mode: replay, auto, record or live (additive field)."""
    cassettes: str = "cassettes"
    """Cassette directory, relative to `evals/` (additive field)."""
    jobs: int = Field(default=1, ge=1, le=64)
    """Cases run concurrently (additive field)."""
    repeat: int = Field(default=1, ge=1, le=100)
    """Attempts per case in live modes (additive field)."""
    min_pass: int | None = Field(default=None, ge=1, alias="min-pass")
    """Attempts that must pass for the case to pass; default all (additive field)."""
    baseline: bool = False
    """Also run each case without the package (or its target skill) to measure lift (additive field)."""
    rerun: Rerun = "auto"
    """Replay by re-executing the real CLI against the recorded model traffic: `auto` when an
    input the agent runs or reads changed, `always`, or `never` (snapshot only) (additive field)."""
    rerun_ignore: list[str] = Field(default_factory=list, alias="rerun-ignore")
    """Regexes for honestly volatile text (timestamps, temp names) ignored when a re-executed
    request is compared with the recording (additive field)."""
    self_check: bool = Field(default=True, alias="self-check")
    """Right after recording a session, re-execute it once against its own traffic to learn the
    values the CLI makes up per run (no model cost) (additive field)."""
    max_usd: float | None = Field(default=None, gt=0, alias="max-usd")
    """The most a run may spend on model calls, in USD: a stale case whose estimated cost does not
    fit is reported as not graded (budget), never sent (additive field)."""
    threshold: float = Field(default=1.0, ge=0, le=1)
    """The score at which a `claude plugin eval` case passes, as that runner's `--threshold`
    (additive field)."""
    ablation: Literal["none", "with-without"] = "with-without"
    """`claude plugin eval` cases: `with-without` (that runner's default) also runs each without
    the plugin and reports the score's delta; `none` runs one arm (additive field)."""
    judge_gate: Literal["always", "calibrated", "never"] = Field(default="always", alias="judge-gate")
    """Whether a judge FAIL fails its case: `always`, `never` (advisory), or `calibrated` (only
    when the judge agrees with human labels well enough: `judge-calibration`) (additive field)."""
    judge_calibration: JudgeCalibration = Field(default_factory=JudgeCalibration, alias="judge-calibration")
    """The agreement `judge-gate: calibrated` asks of a judge (additive field)."""
    prices: dict[ModelName, ModelPrice] = Field(default_factory=dict)
    """Prices of models the built-in list lacks (or overrides), for `max-usd` estimates (additive field)."""
    engines: list[EngineName] = Field(default_factory=list)
    """Run every case on each of these engines (a matrix); `engine` is the first pair's when
    several are listed (additive field)."""
    models: list[ModelName] = Field(default_factory=list)
    """Run every case with each of these models, on each engine that serves them (additive field)."""
    pairs: list[EnginePair] = Field(default_factory=list)
    """Run every case on each of these engine + model pairs, instead of `engines` × `models`
    (additive field)."""
    triggers: Triggers = Field(default_factory=Triggers)
    """How trigger cases are run and decided: runs per prompt and the firing threshold (additive
    field)."""
    user: UserConfig = Field(default_factory=UserConfig)
    """The simulated user of conversation cases: its model and when a conversation stops
    (additive field)."""
    neighbors: list[str] = Field(default_factory=list)
    """Skills installed beside the package for its trigger cases, as users have them: folders
    relative to the package root (a skill, a folder of skills, a plugin), or `marketplace` for
    every other plugin of the repository (additive field)."""
    sweep: list[int] = Field(default_factory=list)
    """A crowding sweep: the trigger cases also run with each of these numbers of neighbours
    installed, drawn from `neighbors` (or the marketplace) the same way every time (additive
    field)."""
    mutants: list[OwnMutant] = Field(default_factory=list)
    """The package's own mutants for `aam-eval sensitivity`, beside the ones it makes (additive
    field)."""

    @field_validator("sweep")
    @classmethod
    def _sizes(cls, value: list[int]) -> list[int]:
        return check_sweep(value)

    @field_validator("engines", "models", "pairs")
    @classmethod
    def _listed_once(cls, value: list[Any], info: ValidationInfo) -> list[Any]:
        _distinct(value, str(info.field_name))
        return value

    @field_validator("pairs")
    @classmethod
    def _pairs_alone(cls, value: list[EnginePair], info: ValidationInfo) -> list[EnginePair]:
        if value and (info.data.get("engines") or info.data.get("models")):
            raise ValueError("set either `pairs` or `engines`/`models`, not both")
        return value

    @field_validator("rerun_ignore")
    @classmethod
    def _valid_patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
        return value

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        return _engine_name(value)


class ToolCount(Strict):
    """One `tool-called` entry: how often an engine-neutral tool must have been called."""

    tool: NeutralTool
    """Engine-neutral tool name: read, write, edit, shell, skill, search or web."""
    min: int = Field(default=1, ge=0)
    """Fewest calls allowed (default 1)."""
    max: int | None = Field(default=None, ge=0)
    """Most calls allowed; no limit when absent."""

    @model_validator(mode="after")
    def _ordered(self) -> ToolCount:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max}); swap or fix them")
        return self


class CommandCheck(Strict):
    """`command`: a shell command run in the finished workspace; passes on exit status 0."""

    run: str = Field(min_length=1)
    """The command, run with `sh -c` in a copy of the finished workspace."""
    timeout: float = Field(default=60, gt=0, le=600)
    """Seconds before the command is killed (and the check fails)."""


def _skill_or_none(value: str) -> str:
    if value != "none" and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", value):
        raise ValueError(f"{value[:70]!r} is not a skill name; name the sibling skill, or `none`")
    return value


class AskedCheck(Strict):
    """`asked`: the agent asked the user something matching a pattern (a conversation case)."""

    pattern: Regex
    """A regular expression (Python syntax) one of the agent's messages to the user must match;
    only messages the user answered count, and the final answer."""
    before: list[NeutralTool] = Field(default_factory=list)
    """Tools the agent must not have called before it asked (`shell`: a confirmation before a
    destructive command)."""


def _asked(value: object) -> object:
    """The string shorthand of `asked`."""
    return {"pattern": value} if isinstance(value, str) else value


class Expected(Strict):
    """`expected`: the deterministic checks, run before the judge."""

    contains: list[str] = Field(default_factory=list)
    """Substrings that must appear in the agent output."""
    not_contains: list[str] = Field(default_factory=list, alias="not-contains")
    """Substrings that must not appear."""
    files_created: list[RelPath] = Field(default_factory=list, alias="files-created")
    """Files the agent must create in the workspace."""
    agent_blocked: bool | None = Field(default=None, alias="agent-blocked")
    """If set, whether a hook must (true) or must not (false) have blocked the agent."""
    regex: list[Regex] = Field(default_factory=list)
    """Regular expressions (Python syntax) that must each match somewhere in the output (additive)."""
    not_regex: list[Regex] = Field(default_factory=list, alias="not-regex")
    """Regular expressions that must not match anywhere in the output (additive)."""
    files_absent: list[RelPath] = Field(default_factory=list, alias="files-absent")
    """Files that must not exist in the finished workspace (additive)."""
    file_contains: dict[RelPath, list[Needle]] = Field(default_factory=dict, alias="file-contains")
    """Path to substrings (or `/regex/`) that its final content must contain (additive)."""
    tool_called: list[ToolCount] = Field(default_factory=list, alias="tool-called")
    """Engine-neutral tools and how often each must have been called (additive)."""
    tool_order: list[NeutralTool] = Field(default_factory=list, alias="tool-order")
    """Engine-neutral tools that must have been called in this order, others allowed between (additive)."""
    command: Annotated[
        CommandCheck | None, BeforeValidator(_command, json_schema_input_type=str | CommandCheck | None)
    ] = None
    """A shell command (or `{run, timeout}`) that must exit 0 in the finished workspace (additive)."""
    output_json_schema: Annotated[dict[str, Any], AfterValidator(_json_schema)] | None = Field(
        default=None, alias="output-json-schema")
    """A JSON Schema that the output, parsed as JSON, must satisfy (additive)."""
    skill_triggered: bool | None = Field(default=None, alias="skill-triggered")
    """Whether the target skill must (true) or must not (false) have been loaded; needs a skill target."""
    max_tool_calls: int | None = Field(default=None, ge=0, alias="max-tool-calls")
    """Most tool calls the session may make, all tools counted (additive)."""
    expected_skill: Annotated[str, AfterValidator(_skill_or_none)] | None = Field(
        default=None, alias="expected-skill")
    """The skill this prompt belongs to instead of the target, or `none`: a near miss. It passes
    when that skill or no skill fires, and fails when the target fires; the routing matrix
    counts it under this skill (additive)."""
    asked: Annotated[
        AskedCheck | None, BeforeValidator(_asked, json_schema_input_type=str | AskedCheck | None)
    ] = None
    """The agent asked the user something matching this pattern (or `{pattern, before}`: before
    calling these tools) (additive)."""
    max_turns: int | None = Field(default=None, ge=1, alias="max-turns")
    """Most user turns the conversation may take, the first prompt counted (additive)."""


TURN_CHECKS = {"contains", "not-contains", "regex", "not-regex", "tool-called", "tool-order",
               "max-tool-calls", "skill-triggered", "asked"}
"""What a turn's own `expected` may check: its answer and its tool calls."""



def trigger_expectation(expected: Expected) -> bool | None:
    """Whether the target skill should fire: `skill-triggered`, or false for a near miss."""
    if expected.skill_triggered is not None:
        return expected.skill_triggered
    return False if expected.expected_skill is not None else None

class UserTurn(Strict):
    """One of `input.turns`: a follow-up message, with checks of the agent's answer to it."""

    message: str = Field(min_length=1, max_length=20_000)
    """What the user says next."""
    expected: Expected | None = None
    """Checks of the agent's answer to this message: of its text and of the tool calls it made
    in that turn (`contains`, `not-contains`, `regex`, `not-regex`, `tool-called`, `tool-order`,
    `max-tool-calls`, `skill-triggered`, `asked`); the workspace is checked at the end, in the
    case's own `expected`."""

    @field_validator("expected")
    @classmethod
    def _per_turn(cls, value: Expected | None) -> Expected | None:
        if value is not None:
            given = set(value.model_dump(exclude_defaults=True, by_alias=True))
            other = sorted(given - TURN_CHECKS)
            if other:
                raise ValueError(f"{', '.join(other)} cannot be checked per turn (the workspace and the "
                                 "conversation are checked at the end): move it to the case's own `expected`")
        return value


def _turn(value: object) -> object:
    """The string shorthand of a turn."""
    return {"message": value} if isinstance(value, str) else value


class SimulatedUser(Strict):
    """`input.user`: a model that plays the user, answering the agent's questions."""

    persona: str = Field(min_length=1, max_length=4000)
    """Who the user is and how they talk."""
    goal: str = Field(min_length=1, max_length=4000)
    """What the user wants done; the conversation stops when the user says it is."""
    facts: list[Annotated[str, Field(min_length=1, max_length=2000)]] = Field(default_factory=list)
    """What the user knows and may reveal when the agent asks, and only then."""
    model: ModelName | None = None
    """This case's user model instead of eval-config `user.model`."""
    max_turns: int | None = Field(default=None, ge=1, le=50, alias="max-turns")
    """This case's most user turns instead of eval-config `user.max-turns`."""


class CaseInput(Strict):
    """`input`: what the agent is given."""

    prompt: str = Field(min_length=1)
    """Prompt sent to the agent (a conversation's first message)."""
    files: list[RelPath] = Field(default_factory=list)
    """Fixture files copied into the sandbox (relative to `evals/`)."""
    workspace_files: list[RelPath] = Field(default_factory=list, alias="workspace-files")
    """Files pre-created in the workspace (content from `evals/fixtures/<path>` when it exists)."""
    turns: list[Annotated[UserTurn, BeforeValidator(_turn, json_schema_input_type=str | UserTurn)]] = Field(
        default_factory=list, max_length=50)
    """The user's follow-up messages, sent in order, each once the agent has answered the one
    before (in the same session): a string, or `{message, expected}` (additive)."""
    user: SimulatedUser | None = None
    """A simulated user that answers the agent until its goal is reached, the agent finishes
    without asking anything, or `max-turns` (additive)."""

    @model_validator(mode="after")
    def _one_kind(self) -> CaseInput:
        if self.turns and self.user is not None:
            raise ValueError("set either `turns` (scripted follow-ups) or `user` (a simulated user), "
                             "not both")
        return self

    @property
    def conversation(self) -> bool:
        """Whether the case is a conversation of several turns."""
        return bool(self.turns) or self.user is not None


class JudgeSpec(Strict):
    """`judge`: the LLM judge's instructions."""

    criteria: str = Field(min_length=1)
    """Natural-language pass/fail criteria."""
    votes: int = Field(default=1, ge=1, le=9)
    """How many times the judge is asked; the majority verdict wins. Odd (additive)."""

    @field_validator("votes")
    @classmethod
    def _odd(cls, value: int) -> int:
        if value % 2 == 0:
            raise ValueError(f"votes must be odd so a majority always exists; use {value - 1} or {value + 1}")
        return value


DraftKind = Literal["positive", "near-miss", "out-of-scope", "canary", "task"]


class Draft(Strict):
    """`draft`: where a case drafted by `aam-eval init` came from. A person reviews it, then sets
    `reviewed: true` (or removes the block); nothing else reads it as trusted."""

    model: str = Field(min_length=1, max_length=200)
    """The model that drafted the case (`canary` cases are written from a template: `template`)."""
    skill: str = Field(min_length=1, max_length=64)
    """The skill whose content it was drafted from."""
    skill_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", alias="skill-sha256")
    """sha256 of that skill's SKILL.md when it was drafted: a changed skill shows as a changed hash."""
    kind: DraftKind
    """`positive` (should fire), `near-miss` (belongs to a sibling), `out-of-scope`, `canary` (names
    the skill outright: if it does not fire, the harness is at fault) or `task`."""
    cites: str | None = Field(default=None, max_length=2000)
    """The passage of the skill the prompt was drafted from, checked verbatim when drafted."""
    cites_line: int | None = Field(default=None, ge=1, alias="cites-line")
    """Its line in the cited skill's SKILL.md."""
    reviewed: bool = False
    """Whether a person has reviewed the case; drafts start unreviewed."""


def _tag(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:/+-]{0,63}", value):
        raise ValueError(f"{value[:70]!r} is not a tag: use letters, digits and . _ : / + -, at most 64")
    return value


def _case_name(value: str) -> str:
    if not NAME_RE.match(value):
        raise ValueError(
            f"{value!r} is not a valid case name: use 1-64 characters of a-z, 0-9 and '-'"
        )
    return value


def _target(value: str) -> str:
    if not TARGET_RE.match(value):
        raise ValueError(
            f"{value!r} is not a valid target: use skill:<name>, hook:<event> or agent:<name>"
        )
    return value


class Execution(Strict):
    """What a `claude plugin eval` case asks of its CLI run (`execution:` there), honoured on
    Claude Code as that runner passes it: a turn limit, the tools the run may use and the ones it
    may not, text added to the system prompt, `EVAL_*` variables."""

    model: str | None = None
    """The model of the case's session (`--model`), over the run's; None: the run's."""
    max_turns: int = Field(default=10, ge=1, le=200, alias="max-turns")
    """The CLI's turn limit (`--max-turns`)."""
    allowed_tools: list[str] | None = Field(default=None, alias="allowed-tools")
    """The only tools the run may use (`--permission-mode dontAsk --allowed-tools`); None: ours."""
    disallowed_tools: list[str] = Field(default_factory=list, alias="disallowed-tools")
    """Tools withheld from the run (`--disallowed-tools`)."""
    append_system_prompt: str | None = Field(default=None, alias="append-system-prompt")
    """Text added to the end of the system prompt (`--append-system-prompt`)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for the run: `EVAL_*` names only, as that runner allows."""
    scaffold: str | None = None
    """A script of the repository (relative to its root) that stages the workspace before the
    session: `context.scaffold_script` there. Run, inside the sandbox, only with `--scaffold`."""
    history: str | None = None
    """A recorded Claude Code session (a transcript `.jsonl` of the repository, relative to its
    root) the case resumes (`--resume`): `context.history_file` there. Such a case runs one arm."""
    add_dirs: list[str] = Field(default_factory=list, alias="add-dirs")
    """Folders of the repository (relative to its root) the run may read besides its workspace
    (`--add-dir`): `context.add_dirs` there, read-only."""
    mocks: list[str] = Field(default_factory=list)
    """The `mocks/` folders that apply to the case (relative to the repository root), shallowest
    first: its MCP servers answered by a stand-in of ours (`aam_eval_action.mocks`)."""
    plugins: list[str] = Field(default_factory=list)
    """The plugins the case loads (folders relative to the repository root): `plugins:` there,
    written relative to the case's folder. Empty: the plugin whose eval dir holds the case."""


class Case(Strict):
    """One eval case: written in `evals/cases/*.yaml`, or imported from an eval file of another
    tool (`importers/`)."""

    name: Annotated[str, AfterValidator(_case_name)]
    """Case identifier: `[a-z0-9-]`, max 64 characters."""
    title: str | None = Field(default=None, max_length=200)
    """The name the case is written under when that is not an identifier (a `claude plugin
    eval` case named `Enrich skill routing`): what a person is shown, and may select it by.
    `name` stays its id (cassette folders)."""
    description: str | None = None
    """Human-readable description."""
    target: Annotated[str, AfterValidator(_target)] | None = None
    """What is evaluated: `skill:<name>`, `hook:<event>` or `agent:<name>`."""
    input: CaseInput
    """What the agent is given."""
    expected: Expected = Field(default_factory=Expected)
    """Deterministic checks."""
    judge: JudgeSpec | None = None
    """LLM judge criteria; required, but for a case whose `expected` checks decide alone (a
    trigger case, an imported suite without a judged grader)."""
    install_all_skills: bool = Field(default=False, alias="install-all-skills")
    """Install every skill of the package, not only the target's: a trigger case, where the
    model must pick the right skill among them (additive)."""
    repeat: int | None = Field(default=None, ge=1, le=100)
    """Attempts for this case instead of the run's `repeat` (additive)."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds for this case instead of the run's `timeout` (additive)."""
    execution: Execution | None = None
    """A `claude plugin eval` case's execution fields, as that runner passes them to Claude Code
    (additive)."""
    tags: list[Annotated[str, AfterValidator(_tag)]] = Field(default_factory=list)
    """Labels to select cases by (`--tags 'sql && !slow'`) (additive)."""
    draft: Draft | None = None
    """Drafted by `aam-eval init`: by which model, from which skill content, whether reviewed
    (additive)."""
    _files_root: Path | None = PrivateAttr(default=None)
    """Where `input.files` are read from: `evals/` unless the case was imported from a file
    elsewhere (its files are relative to that file)."""

    _staged: tuple[tuple[str, str], ...] = PrivateAttr(default=())
    """A Vally stimulus's `environment.files`: (source relative to the repository, destination
    in the workspace), copied in before the session (a folder with what is in it)."""
    _commands: tuple[str, ...] = PrivateAttr(default=())
    """A Vally stimulus's `environment.commands`: run in the workspace before the session, only
    with `--scaffold`, as a scaffold script is."""

    @property
    def files_root(self) -> Path | None:
        return self._files_root

    @property
    def staged_files(self) -> tuple[tuple[str, str], ...]:
        return self._staged

    @property
    def setup_commands(self) -> tuple[str, ...]:
        return self._commands

    _env: tuple[tuple[str, str], ...] = PrivateAttr(default=())
    """A Vally stimulus's `environment.env`: set for the CLI (never a key, a base URL, a proxy
    or the process's own variables: refused where the file is read)."""
    _mcp: tuple[tuple[str, str], ...] = PrivateAttr(default=())
    """A Vally stimulus's `environment.mcpServers`: name → its stdio server as JSON, started by
    the CLI inside the session's sandbox."""
    _git: tuple[str, str] | None = PrivateAttr(default=None)
    """A Vally stimulus's `environment.git`: (a git repository of the repository, relative to
    it; the ref) whose tree at that ref the workspace starts from."""
    _skill_set: tuple[str, ...] | None = PrivateAttr(default=None)
    """A Vally stimulus's skills when it names several or none: installed, and no other."""
    _both_arms: bool = PrivateAttr(default=False)
    """A Vally stimulus an experiment runs with and without its skills."""

    @property
    def with_and_without(self) -> bool:
        return self._both_arms

    def both_arms(self) -> Case:
        """This case run with its skills and without them (a Vally without/with experiment)."""
        self._both_arms = True
        return self

    @property
    def session_env(self) -> dict[str, str]:
        return dict(self._env)

    @property
    def mcp_servers(self) -> dict[str, Any]:
        return {name: json.loads(server) for name, server in self._mcp}

    @property
    def git_tree(self) -> tuple[str, str] | None:
        return self._git

    def with_skills(self, names: list[str]) -> Case:
        """This case installing these skills of the package, and no other."""
        self._skill_set = tuple(names)
        return self

    def from_git(self, source: str, ref: str) -> Case:
        """This case's workspace starting from `source`'s tree at `ref`."""
        self._git = (source, ref)
        return self

    def with_session(self, env: dict[str, str], mcp: dict[str, Any]) -> Case:
        """This case with variables set for its CLI and MCP servers the CLI starts."""
        self._env = tuple(sorted(env.items()))
        self._mcp = tuple(sorted((n, json.dumps(s, sort_keys=True)) for n, s in mcp.items()))
        return self

    def staging(self, files: list[tuple[str, str]], commands: list[str]) -> Case:
        """This case with files copied into its workspace and commands run there first."""
        self._staged = tuple(files)
        self._commands = tuple(commands)
        return self

    @property
    def is_trigger(self) -> bool:
        """A trigger case: it asks only which skill fires (`skill-triggered` or `expected-skill`,
        no other check, no judge). It is run `triggers.runs` times and counted in the routing matrix."""
        e = self.expected
        if self.judge is not None or (e.skill_triggered is None and e.expected_skill is None):
            return False
        asked = e.model_dump(exclude_defaults=True, by_alias=True).keys()
        return not asked - {"skill-triggered", "expected-skill"}

    @property
    def installs(self) -> str | None:
        """The target whose files are installed (None: the whole package, as a trigger case among
        siblings needs)."""
        near_miss = self.expected.expected_skill not in (None, "none")
        if self._skill_set is not None:
            return "skills:" + ",".join(self._skill_set)
        return None if self.install_all_skills or near_miss else self.target

    def imported_from(self, files_root: Path) -> Case:
        """This case as imported from a file whose own folder its `input.files` are read from."""
        self._files_root = files_root
        return self

