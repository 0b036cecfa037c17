"""The graders a `claude plugin eval` case names: one typed model each, validated once, where the
case is read (`parse`), with the file, the line and that runner's words.

A case written in this project's format names its checks in `expected:` and its judge in
`judge:` (`spec.Expected`, `spec.Judge`); both kinds are graded through one dispatch
(`pipeline/grade.py`) into one result type (`pipeline/checks.Check`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from aam_eval_action.errors import ConfigError
from aam_eval_action.vally.grader_model import VallyGrader

TEMPLATE_CRITERIA = "TODO: describe what a successful response looks like"
CREATES_FILES = ("Write", "Edit", "MultiEdit", "NotebookEdit", "Bash")
"""The Claude Code tools that can create a file."""
WITH_ONLY_TOOL = "Skill"


class FileTarget(BaseModel):
    """`{source: file, path}`: that file at the end of the run."""

    model_config = ConfigDict(extra="allow", frozen=True, coerce_numbers_to_str=True)
    source: str = "file"
    path: str = ""


Target = str | FileTarget
"""`last_message`, `files`, `trace`, `mock_calls`, or a file."""


class ToolSide(BaseModel):
    """One side of a `tool_order` grader: a tool (by its Claude Code name), maybe with an input."""

    model_config = ConfigDict(extra="allow", frozen=True, coerce_numbers_to_str=True)
    tool: str
    input_match: str | None = None


class _Grader(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)
    name: str
    weight: int | float = 1
    arm: Literal["both", "with-only"] | None = None

    @property
    def target_of(self) -> Target | None:
        """What the grader reads (`target` or `focus`), if it reads one."""
        return None

    def reads_trace(self) -> bool:
        return False

    def tools(self) -> list[str]:
        """The Claude Code tools a passing run must call."""
        return []

    def with_only(self, calls_with_only: bool = False) -> bool:
        """Shown, not scored, and not run without the plugin (when a case has both arms)."""
        calls = calls_with_only and self.target_of == "mock_calls"
        return self.arm == "with-only" or (self.arm is None and (self._skill_call() or calls))

    def _skill_call(self) -> bool:
        return False

    def checks_a_file(self, scaffolded: bool = False) -> bool:
        """Whether it needs a file the run writes (a file a scaffold stages does for a grader that
        reads it, not for `file_exists`, which counts only files the run created)."""
        target = self.target_of
        return isinstance(target, FileTarget) and target.source == "file" and not scaffolded

    def config(self) -> dict[str, Any]:
        """Its fields as that runner keeps them, but name, type and weight."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"name", "type", "weight"})


class RegexGrader(_Grader):
    type: Literal["regex"]
    pattern: str
    target: Target = "last_message"
    match: str = "contains"
    flags: str = ""

    @property
    def target_of(self) -> Target:
        return self.target

    def reads_trace(self) -> bool:
        return self.target == "trace"

    def checks_a_file(self, scaffolded: bool = False) -> bool:
        absent = self.match in ("not_contains", "count:0")
        return super().checks_a_file(scaffolded) or (self.target == "files" and not absent)


class ToolUsedGrader(_Grader):
    type: Literal["tool_used"]
    tool: str
    input_match: str | None = None
    min: int | None = None
    max: int | None = None

    @property
    def least(self) -> int:
        return 1 if self.min is None else self.min

    def tools(self) -> list[str]:
        return [self.tool] if self.least >= 1 else []

    def _skill_call(self) -> bool:
        return self.tool == WITH_ONLY_TOOL


class ToolOrderGrader(_Grader):
    type: Literal["tool_order"]
    before: ToolSide
    after: ToolSide

    @field_validator("before", "after", mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        """A side written as a bare tool name is `{tool: <name>}`, as that runner keeps it."""
        return {"tool": value} if isinstance(value, str) else value

    def tools(self) -> list[str]:
        return list(dict.fromkeys([self.before.tool, self.after.tool]))


class FileExistsGrader(_Grader):
    type: Literal["file_exists"]
    path: str
    exists: bool = True

    def checks_a_file(self, scaffolded: bool = False) -> bool:
        return self.exists


class LlmGrader(_Grader):
    type: Literal["llm"]
    criteria: str
    focus: Target = "last_message"

    @property
    def target_of(self) -> Target:
        return self.focus

    def reads_trace(self) -> bool:
        return self.focus == "trace"


class BaselineGrader(_Grader):
    type: Literal["baseline"]
    baseline_file: str
    criteria: str

    def reads_trace(self) -> bool:
        return True


PluginGrader = Annotated[RegexGrader | ToolUsedGrader | ToolOrderGrader | FileExistsGrader | LlmGrader
                         | BaselineGrader | VallyGrader, Field(discriminator="type")]
"""A case's graders: a `claude plugin eval` case's, or a Vally stimulus's (`vally/`)."""
KINDS: dict[str, type[_Grader]] = {"regex": RegexGrader, "tool_order": ToolOrderGrader,
                                   "tool_used": ToolUsedGrader, "file_exists": FileExistsGrader,
                                   "llm": LlmGrader, "baseline": BaselineGrader}
"""Every grader type, in the order that runner lists them."""
_ADAPTER: TypeAdapter[PluginGrader] = TypeAdapter(PluginGrader)
REQUIRED = {kind: tuple(n for n, f in model.model_fields.items()
                        if f.is_required() and n not in ("name", "type"))
            for kind, model in KINDS.items()}
DEFAULTS: dict[str, dict[str, Any]] = {
    "regex": {"target": "last_message", "flags": "", "match": "contains"},
    "file_exists": {"exists": True},
    "llm": {"focus": "last_message"},
}
"""What that runner fills in for a field a grader leaves out (kept, as there, in its config)."""
BODY_FIELD = {"regex": "pattern", "llm": "criteria", "baseline": "criteria"}
"""The field a `graders/<name>.md` body becomes, unless its frontmatter sets it."""
_MATCH = r"contains|not_contains|count:\d+"
_FLAGS = r"[dgimsuvy]*"
"""The letters a regex grader's `flags` may hold (a repeated one passes here, and throws when the
grader runs: "Invalid flags supplied to RegExp constructor.")."""


def keys(kind: str) -> tuple[str, ...]:
    """The keys a grader of `kind` takes, in that runner's order."""
    return ("name", "type", "weight", "arm", *(k for k in KINDS[kind].model_fields if k not in
                                                  ("name", "type", "weight", "arm")))


def parse(raw: Any, where: str, names: set[str]) -> PluginGrader:
    """One grader as written (a mapping), validated once: what that runner refuses is refused
    with `where` (file:line and the grader's place) and its words; a name seen in `names`
    already is refused too."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a mapping with name and type")
    kind = raw.get("type")
    if kind not in KINDS:
        raise ConfigError(f"{where}.type: Invalid discriminator value. Expected "
                          + " | ".join(f"'{k}'" for k in KINDS))
    taken = keys(str(kind))
    extra = [k for k in raw if k not in taken]
    if extra:
        reads = kind == "llm" and "target" in extra
        hint = " (it reads the last message; focus: picks another)" if reads else ""
        article = "an" if kind[0] in "aeiou" or kind == "llm" else "a"
        raise ConfigError(f"{where}: Unrecognized key(s) in object: {', '.join(repr(k) for k in extra)}; "
                          f"remove it: {article} {kind} grader takes {', '.join(taken)}{hint}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}.name: Required")
    if name in names:
        raise ConfigError(f'{where}: duplicate grader name "{name}"; give each grader its own name')
    names.add(name)
    for key in REQUIRED[str(kind)]:
        if raw.get(key) in (None, ""):
            raise ConfigError(f"{where}.{key}: Required")
    if TEMPLATE_CRITERIA in str(raw.get("criteria", "")):
        raise ConfigError(f'{where}: the criteria are still the blank `init` template: replace the '
                          f'"{TEMPLATE_CRITERIA}" line with what a successful response looks like')
    weight = raw.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
        raise ConfigError(f"{where}.weight: Number must be greater than 0")
    if raw.get("arm", "both") not in ("both", "with-only"):
        raise ConfigError(f"{where}.arm: must be both | with-only")
    match = raw.get("match", "contains")
    if kind == "regex" and not (isinstance(match, str) and re.fullmatch(_MATCH, match)):
        raise ConfigError(f"{where}.match: must be contains | not_contains | count:N")
    flags = raw.get("flags", "")
    if kind == "regex" and isinstance(flags, str) and not re.fullmatch(_FLAGS, flags):
        raise ConfigError(f"{where}.flags: must be JS RegExp flags (d g i m s u v y)")
    try:
        return _ADAPTER.validate_python({**DEFAULTS.get(str(kind), {}), **raw})
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(p) for p in error["loc"][1:])
        raise ConfigError(f"{where}.{loc}: {error['msg']}") from None


def from_dicts(raws: list[dict[str, Any]], where: str = "graders") -> tuple[PluginGrader, ...]:
    """Graders written as mappings, each validated (a library caller's and a test's way in)."""
    names: set[str] = set()
    return tuple(parse(raw, f"{where}.{i}", names) for i, raw in enumerate(raws))
