"""Regular expressions as JavaScript reads them (ECMA-262, Annex B included): what `claude plugin
eval` compiles a `regex` grader's `pattern` and a `tool_used`/`tool_order` `input_match` as.

That runner is a compiled Bun binary: its graders call JavaScriptCore's `new RegExp(pattern,
flags)`. Here the pattern is compiled and matched by QuickJS-ng (the `quickjs-ng` package, an
embedded JavaScript engine, imported on first use), so what matches, what does not and what
throws follow ECMA-262 as there: `$` only at the very end without `m`, `\\d`/`\\w`/`\\b` ASCII,
`.` stopping at `\\r`, `\\u2028`, `\\u2029`, `(?i)` a syntax error, `\\p{L}` a literal without `u`,
`]` and `{` literals without `u` (Annex B), named groups, lookbehind, the `u`, `v`, `s`, `y`, `g`
and `d` flags. A refusal is a `JsRegexError` in that runner's words (JavaScriptCore's), mapped
from QuickJS-ng's by `WORDS`, each entry seen on the runner (tests/test_js_regex.py holds the
table of patterns the pinned runner was run on).

Where QuickJS-ng departs from ECMA-262, the pattern is corrected first (`_annex_b_braces`,
`_negated_strings`). A match that runs past `TIME_LIMIT` raises `JsRegexTimeout`.

This project's own `expected.regex` checks are Python's `re`, as documented: this module is for
the formats whose runner is JavaScript.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PREFIX = "Invalid regular expression: "
FLAGS_REFUSED = "Invalid flags supplied to RegExp constructor."
TIME_LIMIT = 10.0
"""Seconds one compile or match may take (a catastrophic backtracking pattern stops there)."""

# JavaScriptCore's words, as that runner writes them after "grader threw: Invalid regular expression: ".
PAREN_TYPE = "unrecognized character after (?"
MISSING_PAREN = "missing )"
UNMATCHED_PAREN = "unmatched parentheses"
MODIFIER = "invalid regular expression modifier"
GROUP_NAME = "invalid group specifier name"
DUPLICATE_NAME = "duplicate group specifier name"
NAMED_REFERENCE = "invalid \\k<> named backreference"
BACKREFERENCE = "invalid backreference for Unicode pattern"
IDENTITY_ESCAPE = "invalid escaped character for Unicode pattern"
CONTROL_ESCAPE = "invalid \\c escape for Unicode pattern"
OCTAL_ESCAPE = "invalid octal escape for Unicode pattern"
UNICODE_ESCAPE = "invalid Unicode \\u escape"
CODE_POINT_ESCAPE = "invalid Unicode code point \\u{} escape"
PROPERTY = "invalid property expression"
BACKSLASH_AT_END = "\\ at end of pattern"
NOTHING_TO_REPEAT = "nothing to repeat"
CANT_QUANTIFY = "invalid quantifier"
OUT_OF_ORDER = "numbers out of order in {} quantifier"
INCOMPLETE = "incomplete {} quantifier for Unicode pattern"
LONE_BRACKET = "unmatched ] or } bracket for Unicode pattern"
CLASS_UNTERMINATED = "missing terminating ] for character class"
RANGE_ORDER = "range out of order in character class"
RANGE_ESCAPE = "invalid range in character class for Unicode pattern"
SET_OPERATION = "invalid operation in class set"
SET_CHARACTER = "invalid class set character"
NEGATED_STRINGS = "negated class set may contain strings"

WORDS: dict[str, tuple[str, ...]] = {
    "expecting ')'": (MISSING_PAREN,),
    "extraneous characters at the end": (UNMATCHED_PAREN,),
    "invalid group": (PAREN_TYPE,),
    "expecting ':'": (PAREN_TYPE, MISSING_PAREN),
    "invalid modifiers": (MODIFIER, PAREN_TYPE, MISSING_PAREN),
    "duplicate modifier": (MODIFIER, PAREN_TYPE, MISSING_PAREN),
    "invalid group name": (GROUP_NAME, NAMED_REFERENCE, IDENTITY_ESCAPE),
    "duplicate group name": (DUPLICATE_NAME,),
    "expecting group name": (NAMED_REFERENCE, IDENTITY_ESCAPE),
    "group name not defined": (NAMED_REFERENCE,),
    "back reference out of range": (BACKREFERENCE,),
    "invalid decimal escape": (OCTAL_ESCAPE,),
    "invalid escape sequence": (IDENTITY_ESCAPE, CONTROL_ESCAPE, UNICODE_ESCAPE, CODE_POINT_ESCAPE,
                                OCTAL_ESCAPE),
    "unknown unicode": (PROPERTY,),
    "expecting '{' after \\p": (PROPERTY,),
    "expecting '}'": (INCOMPLETE, PROPERTY),
    "unexpected end": (CLASS_UNTERMINATED, BACKSLASH_AT_END),
    "nothing to repeat": (NOTHING_TO_REPEAT, CANT_QUANTIFY),
    "invalid repetition count": (INCOMPLETE, OUT_OF_ORDER),
    "syntax error": (LONE_BRACKET, INCOMPLETE, NOTHING_TO_REPEAT),
    "invalid class range": (RANGE_ORDER, RANGE_ESCAPE),
    "invalid class set operation": (SET_OPERATION, SET_CHARACTER),
    "invalid operation": (SET_OPERATION, SET_CHARACTER),
    "invalid character in class": (SET_CHARACTER, SET_OPERATION),
    "negated character class with strings": (NEGATED_STRINGS,),
}
"""QuickJS-ng's words (the start of its message) → the runner's. Where one of QuickJS-ng's words
covers several of the runner's, the pattern decides: the first construct in it that the runner
refuses with one of them (`_faults`). A message not listed here keeps QuickJS-ng's words."""


class JsRegexError(ValueError):
    """A pattern or flags JavaScript refuses; `str()` is the runner's explanation."""


class JsRegexTimeout(RuntimeError):
    """A compile or match ran past TIME_LIMIT."""


@dataclass(frozen=True)
class JsRegex:
    """A compiled pattern: `search` and `count` as the runner's regex grader uses them."""

    pattern: str
    flags: str = ""
    source: str = field(default="", repr=False)
    """The pattern QuickJS-ng compiles (corrected where it departs from ECMA-262)."""

    def search(self, text: str) -> bool:
        """`RegExp.prototype.test` from the start (with `y`, only at the start)."""
        return bool(_run("test", self.source, self.flags, text))

    def count(self, text: str) -> int:
        """How many matches `String.prototype.match` finds with `g` added (`y`: only adjacent
        ones from the start; an empty match steps one code unit, or one code point with `u`/`v`)."""
        return int(_run("count", self.source, self.flags, text))


def compile(pattern: str, flags: str = "") -> JsRegex:
    """`new RegExp(pattern, flags)`, or JsRegexError in the runner's words."""
    source = pattern if _unicode(flags) else _annex_b_braces(pattern)
    refused = _run("check", source, flags)
    if isinstance(refused, str):
        raise JsRegexError(runner_words(refused, pattern, flags))
    if "v" in flags and _negated_strings(pattern):
        raise JsRegexError(PREFIX + NEGATED_STRINGS)
    return JsRegex(pattern, flags, source)


def error(pattern: str, flags: str = "") -> str | None:
    """Why the runner cannot compile the pattern (its words), or None."""
    try:
        compile(pattern, flags)
    except JsRegexError as exc:
        return str(exc)
    return None


VALLY_PREFIX = re.compile(r"\(\?([ims]+)\)")


def vally(pattern: str) -> tuple[str, str]:
    """Vally's rule for a regex: its leading `(?i)`, `(?m)`, `(?s)` groups (or `(?im)`…) become
    JavaScript RegExp flags. Returns (the pattern without them, the flags)."""
    flags = ""
    found = VALLY_PREFIX.match(pattern)
    while found:
        flags += "".join(f for f in found.group(1) if f not in flags)
        pattern = pattern[found.end():]
        found = VALLY_PREFIX.match(pattern)
    return pattern, "".join(f for f in "dgimsuvy" if f in flags)


# --- the engine ---

_JS = r"""
var cache = new Map();
function compiled(p, f) {
  var key = f + "/" + p, r = cache.get(key);
  if (r === undefined) {
    r = new RegExp(p, f);
    if (cache.size >= 64) cache.clear();
    cache.set(key, r);
  }
  r.lastIndex = 0;
  return r;
}
function rx(args) {
  var a = JSON.parse(args), op = a[0], p = a[1], f = a[2], once, every;
  try {
    once = compiled(p, f);
    every = compiled(p, f.indexOf("g") < 0 ? f + "g" : f);
  } catch (e) {
    if (e instanceof SyntaxError) return e.message;
    throw e;
  }
  if (op === "test") return once.test(a[3]) ? 1 : 0;
  if (op === "count") { var m = a[3].match(every); return m === null ? 0 : m.length; }
  return -1;
}
"""
# The runner compiles both (`new RegExp(pattern, flags)` and the `g` one) whatever the match mode.
_local = threading.local()


def _engine() -> Any:
    """This thread's engine: a QuickJS-ng context is used only on the thread that made it."""
    function = getattr(_local, "rx", None)
    if function is None or _local.limit != TIME_LIMIT:
        import quickjs  # type: ignore[import-untyped]  # QuickJS-ng: loaded when a pattern is first read

        context = quickjs.Context()
        context.eval(_JS)
        context.set_time_limit(TIME_LIMIT)
        _local.context, _local.rx, _local.limit = context, context.get("rx"), TIME_LIMIT
        function = _local.rx
    return function


def _run(op: str, pattern: str, flags: str, text: str = "") -> int | str:
    """One call into the engine: a number, or the engine's words for a pattern it refuses. The
    arguments go as JSON, so that any string (a lone surrogate too) reaches it as it is."""
    try:
        result = _engine()(json.dumps([op, pattern, flags, text]))
    except Exception as exc:
        if "interrupted" in str(exc):
            raise JsRegexTimeout(f"the pattern {pattern!r} ran past {TIME_LIMIT:g} s on a text of "
                                 f"{len(text)} characters") from None
        raise
    return result if isinstance(result, str) else int(result)


def _unicode(flags: str) -> bool:
    return "u" in flags or "v" in flags


def runner_words(said: str, pattern: str, flags: str) -> str:
    """The runner's explanation for a refusal QuickJS-ng words as `said`."""
    if said.startswith("invalid regular expression flags"):
        return FLAGS_REFUSED
    words = next((w for key, w in WORDS.items()
                  if said == key or (key != "invalid group" and said.startswith(key))), None)
    if words is None:
        return PREFIX + said
    if len(words) > 1:
        return PREFIX + next((w for _, w in _faults(pattern, flags) if w in words), words[0])
    return PREFIX + words[0]


# --- where QuickJS-ng departs from ECMA-262 ---

_QUANTIFIER = re.compile(r"\{(\d+)(,(\d*))?\}")


def _annex_b_braces(pattern: str) -> str:
    """Without `u`/`v`, a `{` that does not start a quantifier is a literal (Annex B): QuickJS-ng
    refuses `a{2,1` ("invalid repetition count"), so such a brace is escaped (`\\{`, the same
    literal) before it compiles."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "{" and not _QUANTIFIER.match(pattern, i):
            c = "\\{"
        out.append(c)
        i += 1
    return "".join(out)


STRING_PROPERTIES = frozenset({"Basic_Emoji", "Emoji_Keycap_Sequence", "RGI_Emoji_Modifier_Sequence",
                               "RGI_Emoji_Flag_Sequence", "RGI_Emoji_Tag_Sequence", "RGI_Emoji_ZWJ_Sequence",
                               "RGI_Emoji"})
"""The properties of strings (`v` only)."""


def _negated_strings(pattern: str) -> bool:
    """With `v`, a negated class that may contain strings is refused, by its syntax (ECMA-262's
    MayContainStrings); QuickJS-ng looks at the set's value instead, and lets
    `[^\\q{ab|c}--\\q{ab}]` through."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern[i] == "[":
            try:
                i = _set(pattern, i)[1]
            except _MayContainStrings:
                return True
        else:
            i += 1
    return False


class _MayContainStrings(Exception):
    pass


def _set(p: str, i: int) -> tuple[bool, int]:
    """(whether the `v` class at `i` may contain strings, where it ends); raises
    _MayContainStrings for a negated one that may."""
    i += 1
    negated = p.startswith("^", i)
    i += negated
    operands: list[bool] = []
    operator = ""
    while i < len(p) and p[i] != "]":
        if p.startswith(("&&", "--"), i):
            operator, i = p[i:i + 2], i + 2
        elif p[i] == "[":
            may, i = _set(p, i)
            operands.append(may)
        elif p.startswith("\\q{", i):
            end = p.find("}", i)
            end = len(p) if end < 0 else end
            operands.append(any(len(re.findall(r"\\u\{[^}]*\}|\\u.{4}|\\x..|\\.|.", alt, re.S)) != 1
                                for alt in re.split(r"(?<!\\)\|", p[i + 3:end])))
            i = end + 1
        elif p.startswith("\\p{", i):
            end = p.find("}", i)
            end = len(p) if end < 0 else end
            operands.append(p[i + 3:end] in STRING_PROPERTIES)
            i = end + 1
        else:
            operands.append(False)
            i += 2 if p[i] == "\\" else 1
    may = all(operands) if operator == "&&" else operands[:1] == [True] if operator == "--" else any(operands)
    if negated and may:
        raise _MayContainStrings
    return may and not negated, i + 1


# --- which of the runner's words: the first construct it refuses ---

_NAME = re.compile(r"<([^>]*)>")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_CODE_POINT = re.compile(r"\{([0-9A-Fa-f]+)\}")
_MODIFIERS = re.compile(r"([ims]*)(?:-([ims]*))?")
_SYNTAX = frozenset("^$\\.*+?()[]{}|/")
_SET_PUNCTUATION = frozenset("&-!#%,:;<=>@`~")
_DOUBLED = frozenset("&!#$%*+,.:;<=>?@^`~")


def _identifier(name: str) -> bool:
    """A group name JavaScript takes (an identifier; `$` allowed)."""
    return name.replace("$", "_").isidentifier()


@dataclass
class _Scan:
    """A walk over a pattern, noting each construct the runner refuses: (where, its words)."""

    p: str
    unicode: bool
    sets: bool
    faults: list[tuple[int, str]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    groups: int = 0

    def fault(self, at: int, words: str) -> None:
        self.faults.append((at, words))

    @property
    def named(self) -> bool:
        return self.unicode or bool(self.names)


def _faults(pattern: str, flags: str) -> list[tuple[int, str]]:
    """Every construct of the pattern the runner refuses, in order, with its words."""
    scan = _Scan(pattern if _unicode(flags) else _units(pattern), _unicode(flags), "v" in flags)
    scan.names = set(re.findall(r"\(\?<([^=!>][^>]*)>", scan.p))
    scan.groups = len(re.findall(r"(?<!\\)\((?!\?)|\(\?<[^=!]", scan.p))
    _walk(scan)
    return sorted(scan.faults, key=lambda f: f[0])


def _units(text: str) -> str:
    """The text as UTF-16 code units (what a pattern without `u` is made of)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(data[k:k + 2], "little")) for k in range(0, len(data), 2))


def _walk(scan: _Scan) -> None:
    p, n, i = scan.p, len(scan.p), 0
    opened: list[str] = []
    last = ""  # what a quantifier here would repeat: "" nothing, "atom", "lookahead", "lookbehind"
    while i < n:
        c = p[i]
        if c == "\\":
            i, last = _escape(scan, i, in_class=False)
        elif c == "[":
            i, last = _class(scan, i), "atom"
        elif c == "(":
            kind, i = _open(scan, i)
            opened.append(kind)
            last = ""
        elif c == ")":
            if not opened:
                scan.fault(i, UNMATCHED_PAREN)
            last = opened.pop() if opened else "atom"
            i += 1
        elif c in "*+?" or (c == "{" and _QUANTIFIER.match(p, i)):
            i = _quantifier(scan, i, last)
            last = ""
        elif c == "{" or c in "}]":
            if scan.unicode:
                scan.fault(i, INCOMPLETE if c == "{" else LONE_BRACKET)
            i, last = i + 1, "atom"
        else:
            i, last = i + 1, "" if c in "^$|" else "atom"
    if opened:
        scan.fault(n, MISSING_PAREN)


def _quantifier(scan: _Scan, i: int, last: str) -> int:
    p = scan.p
    found = _QUANTIFIER.match(p, i)
    end = found.end() if found else i + 1
    if found and found.group(3) and int(found.group(3)) < int(found.group(1)):
        scan.fault(i, OUT_OF_ORDER)
    if not last or (last == "lookahead" and scan.unicode):
        scan.fault(i, NOTHING_TO_REPEAT)
    elif last == "lookbehind":
        scan.fault(i, CANT_QUANTIFY)
    return end + (p[end:end + 1] == "?")


def _open(scan: _Scan, i: int) -> tuple[str, int]:
    """A group's kind (what closing it leaves to repeat) and where its body starts."""
    p = scan.p
    if not p.startswith("(?", i):
        return "atom", i + 1
    rest = p[i + 2:]
    if rest.startswith(":"):
        return "atom", i + 3
    if rest.startswith(("=", "!")):
        return "lookahead", i + 3
    if rest.startswith(("<=", "<!")):
        return "lookbehind", i + 4
    if rest.startswith("<"):
        name = _NAME.match(rest)
        if not name or not _identifier(name.group(1)):
            scan.fault(i, GROUP_NAME)
            return "atom", i + 3
        return "atom", i + 3 + name.end()
    flags = _MODIFIERS.match(rest)
    assert flags is not None  # it matches the empty string
    after = rest[flags.end():flags.end() + 1]
    if not flags.group(0):
        scan.fault(i, PAREN_TYPE)
    elif not after:
        scan.fault(i, MISSING_PAREN)
    elif after != ":":
        scan.fault(i, PAREN_TYPE)
    else:
        added, removed = flags.group(1), flags.group(2) or ""
        if not (added or removed) or len(set(added)) < len(added) or len(set(removed)) < len(removed) \
                or set(added) & set(removed):
            scan.fault(i, MODIFIER)
    return "atom", i + 2 + flags.end() + 1


def _escape(scan: _Scan, i: int, in_class: bool) -> tuple[int, str]:
    """An escape at `i`: where it ends, and what a quantifier after it repeats."""
    p, u = scan.p, scan.unicode
    if i + 1 >= len(p):
        scan.fault(i, BACKSLASH_AT_END)
        return i + 1, "atom"
    c = p[i + 1]
    if c in "bB" and not in_class:
        return i + 2, ""
    handle: Callable[[_Scan, int, bool], int] | None = _ESCAPES.get(c)
    if handle is not None:
        return handle(scan, i, in_class), "atom"
    allowed = c in "dDwWsSfnrtv" or c in _SYNTAX or (c == "-" and in_class) or (
        scan.sets and in_class and c in _SET_PUNCTUATION) or (c == "b" and in_class)
    if u and not allowed:
        scan.fault(i, IDENTITY_ESCAPE)
    return i + 2, "atom"


def _control(scan: _Scan, i: int, in_class: bool) -> int:
    after = scan.p[i + 2:i + 3]
    if after.isascii() and after.isalpha():
        return i + 3
    if scan.unicode:
        scan.fault(i, CONTROL_ESCAPE if after else IDENTITY_ESCAPE)
    return i + 2


def _u(scan: _Scan, i: int, in_class: bool) -> int:
    p = scan.p
    if scan.unicode and p.startswith("{", i + 2):
        found = _CODE_POINT.match(p, i + 2)
        if found and int(found.group(1), 16) <= 0x10FFFF:
            return found.end()
        scan.fault(i, CODE_POINT_ESCAPE)
        return i + 2
    if _HEX4.match(p, i + 2):
        return i + 6
    if scan.unicode:
        scan.fault(i, UNICODE_ESCAPE)
    return i + 2


def _x(scan: _Scan, i: int, in_class: bool) -> int:
    if re.match(r"[0-9A-Fa-f]{2}", scan.p[i + 2:i + 4]):
        return i + 4
    if scan.unicode:
        scan.fault(i, IDENTITY_ESCAPE)
    return i + 2


def _property(scan: _Scan, i: int, in_class: bool) -> int:
    if not scan.unicode:
        return i + 2
    found = re.compile(r"\{[^}]*\}").match(scan.p, i + 2)
    if not found:
        scan.fault(i, PROPERTY)
        return i + 2
    return found.end()


def _reference(scan: _Scan, i: int, in_class: bool) -> int:
    if not scan.named or in_class:
        if scan.unicode and in_class:
            scan.fault(i, IDENTITY_ESCAPE)
        return i + 2
    bad = IDENTITY_ESCAPE if scan.unicode else NAMED_REFERENCE
    name = _NAME.match(scan.p, i + 2)
    if not name or not _identifier(name.group(1)):
        scan.fault(i, bad)
        return i + 2
    if name.group(1) not in scan.names:
        scan.fault(i, NAMED_REFERENCE)
    return name.end()


def _digits(scan: _Scan, i: int, in_class: bool) -> int:
    """`\\0`, a back reference, or (without `u`, Annex B) an octal escape."""
    found = re.compile(r"\d+").match(scan.p, i + 1)
    assert found is not None
    digits = found.group(0)
    if scan.unicode:
        if (in_class and digits != "0") or (digits.startswith("0") and len(digits) > 1):
            scan.fault(i, OCTAL_ESCAPE)
        elif not in_class and digits != "0" and int(digits) > scan.groups:
            scan.fault(i, BACKREFERENCE)
        return i + 2 if in_class else found.end()
    return found.end()


_ESCAPES: dict[str, Callable[[_Scan, int, bool], int]] = {
    "c": _control, "u": _u, "x": _x, "p": _property, "P": _property, "k": _reference,
    **{d: _digits for d in "0123456789"},
}


def _class(scan: _Scan, i: int) -> int:
    """A class at `i`: its faults noted; where it ends."""
    p, n = scan.p, len(scan.p)
    start = i
    i += 1 + p.startswith("^", i + 1)
    while i < n and p[i] != "]":
        if scan.sets:
            if _set_fault(scan, i):
                return _skip_class(p, i)
            if p.startswith(("&&", "--"), i):
                i += 2
                continue
            if p[i] == "[":
                i = _class(scan, i)
                continue
            if p.startswith("\\q{", i):
                end = p.find("}", i)
                if end < 0 or re.search(r"(?<!\\)[\[\]()/{]", p[i + 3:end]):
                    scan.fault(i, SET_CHARACTER)
                    return n
                i = end + 1
                continue
        first, i = _class_atom(scan, i)
        if p.startswith("-", i) and not p.startswith("-]", i) and not (scan.sets and p.startswith("--", i)) \
                and i + 1 < n:
            second, end = _class_atom(scan, i + 1)
            if first is None or second is None:
                if scan.unicode:
                    scan.fault(i - 1, RANGE_ESCAPE)
            elif ord(second[0]) < ord(first[0]):
                scan.fault(i - 1, RANGE_ORDER)
            i = end
    if i >= n and not (scan.faults and scan.faults[-1][1] == BACKSLASH_AT_END):
        scan.fault(start, CLASS_UNTERMINATED)
    return i + 1


def _class_atom(scan: _Scan, i: int) -> tuple[str | None, int]:
    """The character a class atom at `i` stands for (None for a class escape), and its end."""
    p = scan.p
    if p[i] != "\\":
        return p[i], i + 1
    end, _ = _escape(scan, i, in_class=True)
    kind = p[i + 1:i + 2]
    return (None if kind and kind in "dDwWsSpP" else _value(p[i:end])), end


_OPERAND = re.compile(r"\\[pPq]\{[^}]*\}|\\u\{[^}]*\}|\\u.{4}|\\x..|\\c.|\\.|\[[^\]]*\]|.", re.S)


def _set_fault(scan: _Scan, i: int) -> bool:
    """A `v` class's misplaced operator or syntax character at `i`: noted, True."""
    p = scan.p
    if p.startswith("&&&", i):
        scan.fault(i, SET_CHARACTER)
        return True
    if p.startswith(("&&", "--"), i):
        if p.startswith("]", i + 2):
            scan.fault(i, SET_CHARACTER)
            return True
        operand = re.split(r"&&|--", p[p.rfind("[", 0, i) + 1:i].lstrip("^"))[-1]
        parts = _OPERAND.findall(operand)
        if len(parts) > 1:  # a union or a range before an operator
            scan.fault(i, SET_OPERATION)
            return True
        return False
    if p[i] in _DOUBLED and p.startswith(p[i] * 2, i):
        scan.fault(i, SET_OPERATION)
        return True
    if p[i] in "(){}/|-":
        scan.fault(i, SET_CHARACTER)
        return True
    return False


def _skip_class(p: str, i: int) -> int:
    end = p.find("]", i)
    return len(p) if end < 0 else end + 1


_SIMPLE = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0", "b": "\b"}


def _value(escape: str) -> str | None:
    """The character an escape inside a class stands for."""
    c = escape[1:2]
    if c in _SIMPLE and len(escape) == 2:
        return _SIMPLE[c]
    if c in "ux" and len(escape) > 2:
        digits = escape[2:].strip("{}")
        return chr(int(digits, 16)) if digits and int(digits, 16) <= 0x10FFFF else None
    if c == "c" and len(escape) == 3:
        return chr(ord(escape[2]) % 32)
    return c or None
