"""The PR comment: a report diff rendered from a sandboxed Jinja template.

Everything a template prints is escaped for Markdown unless a filter of this module made
it (those return `Markup`), so a user template cannot leak an unescaped case name, judge
reason or error into the comment by forgetting a filter. The comment carries a hidden
marker so the action edits its own comment in place, and never exceeds `max_chars`.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from aam_eval_action.diff import CATEGORIES, CaseDiff, DivergedCase, ReportDiff, StaleCase
from aam_eval_action.errors import ConfigError
from aam_eval_action.github.comments import MAX_COMMENT_CHARS
from aam_eval_action.render import text as d

MARKER = "<!-- aam-eval-action:comment -->"
MIN_COMMENT_CHARS = 1_024
BUILTIN_NAME = "comment.md.j2"
USER_NAME = "user-template"
REASON_CHARS = 300
SHORT_REASON_CHARS = 100
HARD_CUT_NOTE = "\n\n> [!WARNING]\n> This comment was cut to fit GitHub's size limit.\n"

_MARKER_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
_WHITESPACE = re.compile(r"\s+")
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
) -> str:
    """The comment body for `diff`, from the built-in template or a user template.

    A user template may `{% extends "comment.md.j2" %}` and override its blocks. Whatever
    the template does, the result carries the marker and is at most `max_chars` long.
    """
    if max_chars < MIN_COMMENT_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_COMMENT_CHARS}")
    mark = marker(marker_id)
    tmpl = _template(template)

    def render(view: _View) -> str:
        context: dict[str, object] = {
            "diff": diff,
            "marker": Markup(mark),
            "run_url": run_url,
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
    zero-width space so nobody is pinged; `limit` truncates with an ellipsis first.
    """
    if value is None:
        return Markup("")
    text = _WHITESPACE.sub(" ", _INVISIBLE.sub(" ", str(value)))
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    escaped = text.translate(_MARKDOWN_ESCAPES).replace("://", ":&#47;&#47;")
    return Markup(escaped)


def md_join(values: Iterable[object], separator: str = ", ") -> Markup:
    """Escape each item and join them."""
    return Markup(separator.join(md(v) for v in values))


def shell_arg(value: object) -> Markup:
    """A case name quoted for a shell line inside a fenced code block.

    Backticks and line breaks are dropped so the fence cannot be closed from inside.
    """
    cleaned = _INVISIBLE.sub("", str(value)).replace("`", "")
    return Markup(shlex.quote(cleaned))


def case_cell(c: CaseDiff) -> Markup:
    """The case name, with its file and line underneath."""
    where = d.location(c)
    name = md(c.name, 100)
    return Markup(f"{name}<br><sub>{md(where, 120)}</sub>") if where else name


def count(number: int, noun: str) -> Markup:
    """`1 case`, `2 cases`."""
    return Markup(f"{number} {noun}" if number == 1 else f"{number} {noun}s")


def safe_url(url: str | None) -> Markup:
    """An http(s) URL usable as a Markdown link target, or '' for anything else."""
    if not url or not re.fullmatch(r"https?://[^\s<>()\[\]`\"']+", url):
        return Markup("")
    return Markup(url)


def _plain(fn: Callable[..., str]) -> Callable[..., Markup]:
    """A formatter of ours whose output needs no escaping."""
    return lambda *args, **kwargs: Markup(fn(*args, **kwargs))


FILTERS: dict[str, Callable[..., Markup]] = {
    "md": md,
    "md_join": md_join,
    "shell_arg": shell_arg,
    "case_cell": case_cell,
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
    "thousands": _plain("{:,}".format),
}


def _finalize(value: object) -> object:
    """Escape every printed string that no filter of ours produced."""
    if value is None:
        return ""
    if isinstance(value, str) and not isinstance(value, Markup):
        return md(value)
    return value


# --- templates ---


def _template(path: Path | None) -> jinja2.Template:
    sources = {BUILTIN_NAME: _builtin_source()}
    if path is not None:
        sources[USER_NAME] = _read_user_template(path)
    env = SandboxedEnvironment(
        loader=jinja2.DictLoader(sources),
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    try:
        return env.get_template(USER_NAME if path else BUILTIN_NAME)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: comment template: {exc.message}") from None


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
    reason_chars: int = REASON_CHARS
    omitted: tuple[str, ...] = ()
    regressions_cut: int = 0
    diverged: list[DivergedCase] = dataclasses.field(default_factory=list)

    @classmethod
    def full(cls, diff: ReportDiff) -> _View:
        sections: dict[str, list[CaseDiff]] = {section_key(c): [] for c in CATEGORIES}
        sections["flaky"] = []
        for c in diff.cases:
            key = "flaky" if c.category == "regressed" and c.flaky else section_key(c.category)
            sections[key].append(c)
        return cls(sections=sections, stale=list(diff.stale), diverged=list(diff.diverged))

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
        return {
            "sections": self.sections,
            "stale": self.stale,
            "diverged": self.diverged,
            "reason_chars": self.reason_chars,
            "omitted": list(self.omitted),
            "regressions_cut": self.regressions_cut,
        }


def section_key(category: str) -> str:
    """The template's name for a category's list: `still-failing` → `still_failing`.

    `stale` is `stale_cases`, since `stale` is the list of re-record entries.
    """
    return "stale_cases" if category == "stale" else category.replace("-", "_")

_TRIMS: tuple[Callable[[_View], _View], ...] = (
    lambda v: v.drop(("unchanged",), "unchanged cases"),
    lambda v: v.drop(("still_failing",), "still-failing cases"),
    lambda v: v.drop(
        ("fixed", "new", "removed", "no_baseline"),
        "fixed, new, removed, no-baseline, stale and diverged cases (counts kept)",
        stale=True,
    ),
    lambda v: dataclasses.replace(
        v,
        reason_chars=SHORT_REASON_CHARS,
        omitted=(*v.omitted, f"judge reasons and errors past {SHORT_REASON_CHARS} characters"),
    ),
    lambda v: v.drop(("flaky",), "regressions that are flaky on base"),
)


def _fit(render: Callable[[_View], str], view: _View, max_chars: int, mark: str) -> str:
    """Render, trimming in order of least value, until the comment fits."""
    text = render(view)
    for trim in _TRIMS:
        if len(text) <= max_chars:
            return text
        view = trim(view)
        text = render(view)
    if len(text) <= max_chars:
        return text
    return _fit_regressions(render, view, max_chars, mark)


def _fit_regressions(render: Callable[[_View], str], view: _View, max_chars: int, mark: str) -> str:
    """Keep as many regression rows as fit (binary search over the row count)."""
    full = view.sections["regressed"]
    if not full:
        return _hard_cut(render(view), mark, max_chars)
    low, high = 0, len(full) - 1  # all of them are known not to fit
    while low < high:
        middle = (low + high + 1) // 2
        if len(render(view.keep_regressions(middle, full))) <= max_chars:
            low = middle
        else:
            high = middle - 1
    text = render(view.keep_regressions(low, full))
    return text if len(text) <= max_chars else _hard_cut(text, mark, max_chars)


def _hard_cut(text: str, mark: str, max_chars: int) -> str:
    """Last resort (a template that is too long on its own): cut at a line end."""
    room = max_chars - len(mark) - 1 - len(HARD_CUT_NOTE)
    body = text.replace(mark, "", 1)[:room]
    if "\n" in body:
        body = body[: body.rindex("\n")]
    return f"{mark}\n{body}{HARD_CUT_NOTE}"
