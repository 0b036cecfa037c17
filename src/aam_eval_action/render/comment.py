"""The PR comment: a report diff rendered from a sandboxed Jinja template.

Everything a template prints is escaped for Markdown unless a filter of this module made
it (those return `Markup`), so a user template cannot leak an unescaped case name, judge
reason or error into the comment by forgetting a filter. The comment carries a hidden
marker so the action edits its own comment in place, and never exceeds `max_chars`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup
from pydantic import BaseModel

from aam_eval_action.diff import (
    CATEGORIES,
    CaseDiff,
    DivergedCase,
    MatrixCell,
    MatrixRow,
    ReportDiff,
    RerecordedCase,
    StaleCase,
)
from aam_eval_action.errors import ConfigError
from aam_eval_action.github.comments import MAX_COMMENT_CHARS
from aam_eval_action.render import routing as routing_md
from aam_eval_action.render import text as d

MARKER = "<!-- aam-eval-action:comment -->"
MIN_COMMENT_CHARS = 1_024
BUILTIN_NAME = "comment.md.j2"
USER_NAME = "user-template"
REASON_CHARS = 300
SHORT_REASON_CHARS = 100
RERECORDED_ROWS_KEPT = 50
"""Re-recorded cases still listed by name when the comment must be shortened."""
HARD_CUT_NOTE = "\n\n> [!WARNING]\n> This comment was cut to fit GitHub's size limit.\n"

_MARKER_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
_WHITESPACE = re.compile(r"\s+")
_UNSPACED = re.compile(rf"{_INVISIBLE.pattern}|[^\S ]| {{2}}")
"""Text `_INVISIBLE` and `_WHITESPACE` would change: an invisible character, whitespace other
than a space, or two spaces in a row."""
_REFERENCE = re.compile(r"#(?=\w)")
_WWW = re.compile(r"\bwww(?=\.)", re.I)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_MARKDOWN_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "|": "&#124;",
        "`": "&#96;",
        "[": "&#91;",
        "]": "&#93;",
        "!": "&#33;",
        "*": "&#42;",
        "_": "&#95;",
        "~": "&#126;",
        "\\": "&#92;",
        "$": "&#36;",
        "@": "@\u200b",
    }
)


def marker(marker_id: str | None = None) -> str:
    """The hidden marker; an id lets several workflows each keep their own comment."""
    if marker_id is None:
        return MARKER
    if not _MARKER_ID.fullmatch(marker_id):
        raise ConfigError(f"comment marker id {marker_id!r}: use 1 to 64 letters, digits, '.', '_' or '-'")
    return MARKER.replace(" -->", f" id={marker_id} -->")


def render_comment(
    diff: ReportDiff,
    *,
    template: Path | None = None,
    marker_id: str | None = None,
    run_url: str | None = None,
    max_chars: int = MAX_COMMENT_CHARS,
    html_report: str | None = None,
) -> str:
    """The comment body for `diff`, from the built-in template or a user template.

    A user template may `{% extends "comment.md.j2" %}` and override its blocks. Whatever
    the template does, the result carries the marker and is at most `max_chars` long.
    """
    if max_chars < MIN_COMMENT_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_COMMENT_CHARS}")
    mark = marker(marker_id)
    tmpl = _template(template)
    # The cases each flag lists, picked once (a 1,000-case diff renders several times to fit).
    flagged = {key: [View(c) for c in diff.cases if getattr(c, key)] for key in FLAGS}

    def render(view: _View) -> str:
        context: dict[str, object] = {
            "flagged": flagged,
            "diff": View(diff),
            "marker": Markup(mark),
            "run_url": run_url,
            "html_report": html_report,
            "max_chars": max_chars,
            **view.context(),
        }
        return _with_marker(_render(tmpl, context, template), mark)

    return _fit(render, _View.full(diff), max_chars, mark)


def format_markdown(diff: ReportDiff) -> str:
    """The PR comment body, rendered with the built-in template (`aam-eval diff --format markdown`)."""
    return render_comment(diff)


# --- escaping and formatting filters ---


def md(value: object, limit: int | None = None) -> Markup:
    """Untrusted text made inert in Markdown: one line, no HTML, links, mentions or code.

    Newlines and control characters become spaces (a table row stays one row); `|`,
    backticks, brackets, `!`, emphasis characters and `$` become entities; `@` gets a
    zero-width space so nobody is pinged, `#` before a word too so no issue is referenced,
    and `www.` and `scheme://` so nothing is autolinked; `limit` truncates with an ellipsis
    first. Escaping what is already escaped (a view-model string) gives the same result.
    """
    if value is None:
        return Markup("")
    raw = value._raw if isinstance(value, Escaped) else value
    text = str(raw)
    # Each substitution runs only where it can change something: a comment escapes thousands of cells.
    if _UNSPACED.search(text):
        text = _WHITESPACE.sub(" ", _INVISIBLE.sub(" ", text))
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    if _WWW.search(text):
        text = _WWW.sub("\\g<0>\u200b", text)
    if "#" in text:
        text = _REFERENCE.sub("#\u200b", text)
    if "://" in text:
        text = _SCHEME.sub("\\g<1>\u200b://", text)
    escaped = text.translate(_MARKDOWN_ESCAPES).replace("://", ":&#47;&#47;")
    return Markup(escaped)


class Escaped(Markup):
    """An untrusted string of the view model: already escaped by `md`, the raw text kept in
    `_raw` for this module's filters only (templates cannot reach it: the sandbox refuses
    underscore attributes)."""

    _raw: str

    def __new__(cls, raw: str) -> Escaped:
        made = super().__new__(cls, md(raw))
        made._raw = raw
        return made

    # Compared and hashed as the raw text, so `c.verdict == "PASS"` and `counts["no-baseline"]`
    # mean in a template what they mean on the model.
    def __eq__(self, other: object) -> bool:
        return self._raw == (other._raw if isinstance(other, Escaped) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._raw)


class View:
    """A read-only view of a diff model for templates: every string comes out escaped.

    Attribute access gives `Escaped` strings, views of nested models, and lists and dicts
    of those; numbers and booleans as they are. Only the model's fields are reachable (no
    methods such as `model_dump` that would hand back raw text), and the model itself is
    behind an underscore, which the sandbox refuses. Printing a view prints it escaped.
    """

    __slots__ = ("_model",)

    def __init__(self, model: BaseModel) -> None:
        object.__setattr__(self, "_model", model)

    def __getattr__(self, name: str) -> object:
        model = object.__getattribute__(self, "_model")
        if name not in type(model).model_fields:
            raise AttributeError(name)
        return escape_view(getattr(model, name))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("read-only")

    def __str__(self) -> str:
        return str(md(repr(object.__getattribute__(self, "_model"))))

    __repr__ = __str__

    def __html__(self) -> str:
        return str(self)


def escape_view(value: object) -> object:
    """The template's view of a value: untrusted strings escaped, at any depth."""
    if value is None or isinstance(value, bool | int | float | Markup):
        return value
    if isinstance(value, str):
        return Escaped(value)
    if isinstance(value, BaseModel):
        return View(value)
    if isinstance(value, dict):
        return {escape_view(k): escape_view(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_view(v) for v in value]
    return Escaped(str(value))


def unwrap(value: object) -> Any:
    """The model behind a view, for this module's formatters (templates cannot do this)."""
    if isinstance(value, View):
        return object.__getattribute__(value, "_model")
    if isinstance(value, Escaped):
        return value._raw
    return value


def md_join(values: Iterable[object], separator: str = ", ") -> Markup:
    """Escape each item and join them."""
    return Markup(separator.join(md(v) for v in values))


def shell_arg(value: object) -> Markup:
    """A case name quoted for a shell line inside a fenced code block.

    Backticks and line breaks are dropped so the fence cannot be closed from inside.
    """
    cleaned = _INVISIBLE.sub("", str(unwrap(value))).replace("`", "")
    return Markup(shlex.quote(cleaned))


def case_cell(view: View | CaseDiff | DivergedCase | MatrixRow) -> Markup:
    """The case name, with its engine and model (in a matrix), its file and line and, for a
    conversation, at which turn it changed underneath."""
    c = unwrap(view)
    pair = d.pair_label(getattr(c, "engine", None), getattr(c, "model", None))
    under = " · ".join(part for part in (pair, d.location(c)) if part)
    below = [md(under, 200 if pair else 120)] if under else []
    talk = conversation_note(c)
    if talk:
        below.append(md(talk))
    name = md(getattr(c, "title", None) or c.name, 100)
    return Markup(f"{name}<br><sub>{' · '.join(below)}</sub>") if below else name


def conversation_note(c: CaseDiff | DivergedCase | MatrixRow) -> str:
    """`conversation changed at turn 2; turns from 2 on were run live; it took 3 turns, 4 on base`, or ''
    (a one-turn case, or a conversation that went as recorded in as many turns)."""
    changed = getattr(c, "changed_at_turn", None) or getattr(c, "user_turn", None)
    live = getattr(c, "live_from_user_turn", None)
    turns, base = getattr(c, "turns", None), getattr(c, "base_turns", None)
    parts = []
    if changed is not None:
        parts.append(f"conversation changed at turn {changed}")
    if live is not None:
        parts.append(f"turns from {live} on were run live")
    if turns is not None and base is not None and turns != base:
        took = f"{turns} turn{'s' if turns != 1 else ''}, {base} on base"
        parts.append(f"it took {took}" if parts else f"conversation took {took}")
    return "; ".join(parts)


def pair_head(view: View) -> Markup:
    """A matrix column heading: the engine, its model underneath."""
    p = unwrap(view)
    return Markup(f"{md(p.engine, 40)}<br><sub>{md(p.model, 60)}</sub>")


def matrix_cell(view: View | MatrixCell | None) -> Markup:
    """`PASS`, `❌ PASS → FAIL`, `✅ FAIL → PASS`, `stale`, `diverged`, `–` (not run)."""
    cell = unwrap(view)
    mark = {"regressed": "❌ ", "fixed": "✅ ", "stale": "⚠️ ", "diverged": "⚠️ "}
    text = md(d.cell_text(cell))
    return Markup(f"{mark.get(cell.category, '')}{text}") if cell is not None else text


def re_record(view: View | StaleCase | DivergedCase, package_path: object) -> Markup:
    """The shell line that records one case again (for its engine and model, in a matrix)."""
    c = unwrap(view)
    line = f"aam-eval run {shell_arg(c.name)} --record"
    if c.engine:
        line += f" --engine {shell_arg(c.engine)} --model {shell_arg(c.model or '')}"
    path = unwrap(package_path)
    if path and path != ".":
        line += f" --package {shell_arg(path)}"
    return Markup(line)


def judge_cell(c: CaseDiff, limit: int) -> Markup:
    """The judge's reason, after the votes when several were asked."""
    reason = md(c.judge_reason, limit)
    return Markup(f"({md(c.judge_votes)}) {reason}") if c.judge_votes else reason


def count(number: int, noun: str) -> Markup:
    """`1 case`, `2 cases`."""
    return Markup(f"{number} {noun}" if number == 1 else f"{number} {noun}s")


def safe_url(url: str | None) -> Markup:
    """An http(s) URL usable as a Markdown link target, or '' for anything else."""
    url = unwrap(url)
    if not url or not re.fullmatch(r"https?://[^\s<>()\[\]`\"'|]+", url):
        return Markup("")
    return Markup(url)


def _plain(fn: Callable[..., str]) -> Callable[..., Markup]:
    """A formatter of ours whose output needs no escaping (it reads the models behind views)."""
    return lambda *args, **kwargs: Markup(fn(*(unwrap(a) for a in args), **kwargs))


FILTERS: dict[str, Callable[..., Markup]] = {
    "md": md,
    "listing_word": lambda v: Markup({"full": "in full", "truncated": "cut short", "name-only": "name only",
                                      "left-out": "not listed"}.get(str(unwrap(v)), "?")),
    "md_join": md_join,
    "shell_arg": shell_arg,
    "case_cell": case_cell,
    "pair_head": pair_head,
    "matrix_cell": matrix_cell,
    "re_record": re_record,
    "pair_name": lambda v: md(d.pair_label(unwrap(v).engine, unwrap(v).model)),
    "pair_line": _plain(d.pair_line),
    # These two quote case, engine and model names: escaped like any untrusted text.
    "agreement": lambda v: md(d.agreement_line(unwrap(v))),
    "comparison": lambda v: md(d.comparison_line(unwrap(v))),
    "safe_url": safe_url,
    "count": count,
    "pct": _plain(d.fmt_pct),
    "pp": _plain(d.fmt_pp),
    "cost": _plain(d.fmt_cost),
    "duration": _plain(d.fmt_duration),
    "signed": _plain(d.fmt_int_delta),
    "pass_rate": _plain(d.pass_rate_line),
    "not_graded_note": _plain(d.not_graded_note),
    "cost_line": _plain(d.cost_line),
    "verdicts": _plain(d.verdict_change),
    "judge_cell": judge_cell,
    "lift": _plain(d.lift_line),
    "scores": _plain(d.score_line),
    "score": _plain(d.fmt_score),
    "signed_score": _plain(d.fmt_signed),
    "triggers": _plain(d.trigger_line),
    "interval": _plain(d.interval_line),
    "estimate": _plain(d.estimate_line),
    "not_shown": _plain(d.not_shown_line),
    "thousands": _plain("{:,}".format),
    "routing_table": lambda v: routing_md.markdown(unwrap(v), md),
    "moved_table": lambda v: routing_md.moved_markdown([unwrap(m) for m in v], md),
}


def _scores_changed(diff: object) -> list[View]:
    """The `claude plugin eval` cases whose score or delta moved, as views (escaped)."""
    return [View(c) for c in d.scores_changed(unwrap(diff))]


def _inert(value: object) -> Markup:
    """What `|safe`, `|e` and their kin give a template: Markup stays, anything else is escaped.

    Jinja's own versions would mark a plain string (say, one a filter rebuilt from escaped
    text) as safe, or only HTML-escape it, letting mentions and links through.
    """
    return value if isinstance(value, Markup) else md(value)


def _tojson(value: object, indent: int | None = None) -> Markup:
    """JSON of a value, escaped like any other text (views print as their escaped text)."""
    return md(json.dumps(value, indent=indent, ensure_ascii=False, default=str))


REPLACED_FILTERS: dict[str, Callable[..., Markup]] = {
    "safe": _inert, "e": _inert, "escape": _inert, "forceescape": _inert,
    "tojson": _tojson, "urlize": _inert, "xmlattr": lambda value, *a: md(value),
}
"""Jinja built-ins that would return unescaped untrusted text as Markup."""
UNSAFE_ATTRIBUTES = frozenset({"unescape", "striptags"})
"""Markup methods that turn escaped text back into raw text."""


class _Sandbox(SandboxedEnvironment):
    """The sandbox, also refusing the Markup methods that undo escaping."""

    def is_safe_attribute(self, obj: object, attr: str, value: object) -> bool:
        if isinstance(obj, Markup) and attr in UNSAFE_ATTRIBUTES:
            return False
        return super().is_safe_attribute(obj, attr, value)


def _finalize(value: object) -> object:
    """Escape everything printed that is not already escaped (or a number)."""
    if value is None:
        return ""
    if isinstance(value, Markup | bool | int | float):
        return value
    return md(str(value))


# --- templates ---


FLAGS = ("label", "judge_advisory", "budget", "unstable", "skipped_checks")
"""Case fields the template lists cases by (`flagged.<field>`: the cases where it is set)."""


def _template(path: Path | None) -> jinja2.Template:
    sources = {BUILTIN_NAME: _builtin_source()}
    if path is not None:
        sources[USER_NAME] = _read_user_template(path)
    env = _Sandbox(
        loader=jinja2.DictLoader(sources),
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(REPLACED_FILTERS)
    env.filters.update(FILTERS)
    env.filters["scores_changed"] = _scores_changed
    try:
        return env.get_template(USER_NAME if path else BUILTIN_NAME)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: comment template: {exc.message}") from None


@functools.cache
def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept in the user's cache directory (keyed by a checksum of the source,
    so an edited template compiles again); none when that directory cannot be made."""
    directory = Path.home() / ".cache" / "aam-eval-action" / "jinja"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(directory))


def _builtin_source() -> str:
    return (resources.files("aam_eval_action.render") / "templates" / BUILTIN_NAME).read_text("utf-8")


def _read_user_template(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the comment template ({exc})") from None


def _render(tmpl: jinja2.Template, context: dict[str, object], path: Path | None) -> str:
    try:
        return tmpl.render(context)
    except jinja2.TemplateError as exc:
        if path is None:
            raise
        raise ConfigError(f"{path}: comment template: {exc}") from None


def _with_marker(text: str, mark: str) -> str:
    return text if mark in text else f"{mark}\n{text}"


# --- fitting the size limit ---


@dataclass(frozen=True)
class _View:
    """What the template lists; trimmed step by step until the comment fits."""

    sections: dict[str, list[CaseDiff]]
    stale: list[StaleCase]
    rerecorded: list[RerecordedCase] = dataclasses.field(default_factory=list)
    reason_chars: int = REASON_CHARS
    omitted: tuple[str, ...] = ()
    regressions_cut: int = 0
    diverged: list[DivergedCase] = dataclasses.field(default_factory=list)
    matrix: list[MatrixRow] = dataclasses.field(default_factory=list)

    @classmethod
    def full(cls, diff: ReportDiff) -> _View:
        sections: dict[str, list[CaseDiff]] = {section_key(c): [] for c in CATEGORIES}
        sections["flaky"] = []
        sections["noise"] = []
        for c in diff.cases:
            sections[_section_of(c)].append(c)
        return cls(sections=sections, stale=list(diff.stale), rerecorded=list(diff.rerecorded),
                   diverged=list(diff.diverged), matrix=list(diff.matrix or []))

    def drop(self, keys: tuple[str, ...], note: str, *, stale: bool = False) -> _View:
        kept = {k: ([] if k in keys else v) for k, v in self.sections.items()}
        return dataclasses.replace(
            self,
            sections=kept,
            stale=[] if stale else self.stale,
            diverged=[] if stale else self.diverged,
            omitted=(*self.omitted, note),
        )

    def keep_regressions(self, count: int, full: list[CaseDiff]) -> _View:
        cut = len(full) - count
        return dataclasses.replace(
            self,
            sections={**self.sections, "regressed": full[:count]},
            omitted=(*self.omitted, f"{cut} of {len(full)} regressions"),
            regressions_cut=cut,
        )

    def context(self) -> dict[str, object]:
        """What the template sees: every untrusted string already escaped (the view model)."""
        return {
            "sections": escape_view(self.sections),
            "stale": escape_view(self.stale),
            "rerecorded": escape_view(self.rerecorded),
            "diverged": escape_view(self.diverged),
            "reason_chars": self.reason_chars,
            "omitted": list(self.omitted),
            "regressions_cut": self.regressions_cut,
            "matrix": escape_view(self.matrix),
        }


def _section_of(c: CaseDiff) -> str:
    """Regressions within noise and flaky ones are listed apart from those blamed on the PR."""
    if c.category == "regressed" and c.significant is False:
        return "noise"
    if c.category == "regressed" and c.significant is None and c.flaky:
        return "flaky"
    return section_key(c.category)


def section_key(category: str) -> str:
    """The template's name for a category's list: `still-failing` → `still_failing`.

    `stale` is `stale_cases`, since `stale` is the list of re-record entries.
    """
    return "stale_cases" if category == "stale" else category.replace("-", "_")

def _changed(row: MatrixRow) -> bool:
    return not row.agree or any(c is not None and c.category != "unchanged" for c in row.cells)


_TRIMS: tuple[Callable[[_View], _View], ...] = (
    lambda v: dataclasses.replace(
        v, matrix=[r for r in v.matrix if _changed(r)],
        omitted=(*v.omitted, "matrix rows where nothing changed and every engine agrees"),
    ) if any(not _changed(r) for r in v.matrix) else v,
    lambda v: v.drop(("unchanged",), "unchanged cases"),
    lambda v: v.drop(("still_failing",), "still-failing cases"),
    lambda v: v.drop(
        ("fixed", "new", "removed", "no_baseline"),
        "fixed, new, removed, no-baseline, stale and diverged cases (counts kept)",
        stale=True,
    ),
    lambda v: dataclasses.replace(
        v,
        rerecorded=v.rerecorded[:RERECORDED_ROWS_KEPT],
        omitted=(*v.omitted, f"re-recorded cases past the first {RERECORDED_ROWS_KEPT}")
        if len(v.rerecorded) > RERECORDED_ROWS_KEPT else v.omitted,
    ),
    lambda v: dataclasses.replace(
        v,
        reason_chars=SHORT_REASON_CHARS,
        omitted=(*v.omitted, f"judge reasons and errors past {SHORT_REASON_CHARS} characters"),
    ),
    lambda v: v.drop(("flaky",), "regressions that are flaky on base"),
    lambda v: v.drop(("noise",), "regressions within noise"),
    lambda v: dataclasses.replace(v, matrix=[], omitted=(*v.omitted, "the case × engine matrix"))
    if v.matrix else v,
)


def _fit(render: Callable[[_View], str], view: _View, max_chars: int, mark: str) -> str:
    """Render, trimming in order of least value, until the comment fits."""
    text = render(view)
    for trim in _TRIMS:
        if len(text) <= max_chars:
            return text
        trimmed = trim(view)
        if trimmed is not view:  # a trim that found nothing to trim would render the same text again
            view, text = trimmed, render(trimmed)
    if len(text) <= max_chars:
        return text
    return _fit_regressions(render, view, max_chars, mark)


def _fit_regressions(render: Callable[[_View], str], view: _View, max_chars: int, mark: str) -> str:
    """Keep as many regression rows as fit (binary search over the row count)."""
    full = view.sections["regressed"]
    if not full:
        return _hard_cut(render(view), mark, max_chars)
    low, high = 0, len(full) - 1  # all of them are known not to fit
    fitting: str | None = None  # the text with `low` rows, once rendered
    while low < high:
        middle = (low + high + 1) // 2
        text = render(view.keep_regressions(middle, full))
        if len(text) <= max_chars:
            low, fitting = middle, text
        else:
            high = middle - 1
    text = fitting if fitting is not None else render(view.keep_regressions(low, full))
    return text if len(text) <= max_chars else _hard_cut(text, mark, max_chars)


def _hard_cut(text: str, mark: str, max_chars: int) -> str:
    """Last resort (a template that is too long on its own): cut at a line end."""
    room = max_chars - len(mark) - 1 - len(HARD_CUT_NOTE)
    body = text.replace(mark, "", 1)[:room]
    if "\n" in body:
        body = body[: body.rindex("\n")]
    return f"{mark}\n{body}{HARD_CUT_NOTE}"
