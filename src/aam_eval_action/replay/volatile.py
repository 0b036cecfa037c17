"""Volatile values a recording finds for itself: learnt masks.

A CLI stamps values into its requests that change from run to run although nothing else did:
durations, clock times, ids it makes up. `traffic.VOLATILE_TEXT` and `traffic.MINTED` know
the ones seen so far, written against the text of the pinned CLI versions; another release
moves a value (`duration_ms: 714` from its own line into a `<usage>` block) or mints an id of a
new shape, and every re-execution would diverge on it.

So a recording checks itself (`pipeline/self_check.py`): it is re-executed once against its
own traffic, where any request that differs is volatile by definition. `learn` turns each
such difference into a **mask**: the shape of the value (a number, a duration, a clock time,
a date-time, a UUID, a hex or alphanumeric id of a length range) and the literal text right
before it (`duration_ms: `), or right after it when nothing usable comes before. A mask is
kept only when it makes the two requests equal; a difference no narrow mask explains (free
text, a changed structure, a placeholder normalisation put in: `$AGENT2` where `$AGENT1` was is
another sub-agent reporting there) is not learnt, and the recording is reported unstable instead.

Masks are data, never regular expressions taken from a file: a cassette store comes from the
repository under test, so a mask is checked against the fixed shapes and length limits and
its context is escaped (`compile`). They are stored per CLI version in the cassettes' shared
store (`traffic_store`) and applied like `rerun-ignore`: to both sides of every comparison.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Shape = Literal["uuid", "datetime", "clock", "duration", "number", "hex", "id"]
SHAPES: dict[str, str] = {
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "datetime": r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    "clock": r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?",
    "duration": r"\d+(?:\.\d+)?(?:ms|s|m|h)",
    "number": r"\d+(?:\.\d+)?",
    "hex": r"[0-9a-f]{%d,%d}",
    "id": r"[A-Za-z0-9]{%d,%d}",
}
"""The values a mask may cover, most specific first. `hex` and `id` carry the length range
seen; an `id` needs a digit and a letter (a word that changed is text, not an id)."""
SIZED = ("hex", "id")
MAX_ID = 64
MIN_ID = 6
"""The shortest `hex` or `id` value learnt: a shorter one is a name or a word that changed
(`Count a.txt` → `Count b.txt`), not an id a CLI made up."""
PLACEHOLDER = re.compile(r"\$[A-Z]+\d*(?![A-Za-z0-9])|(?<![A-Za-z0-9])[A-Za-z]+_aam\d+(?![A-Za-z0-9])")
"""What normalisation put in place of a per-run value (`$AGENT1`, `$UUID2`, the API's `toolu_aam002`):
each stands for one agent, call or file of the session, so another one in its place is another
agent or call answered there (sub-agents finishing in another order), never a volatile value."""
CONTEXT_MAX = 40
"""The longest key kept as a mask's context (the patterns below spell it out)."""
BOUND_L, BOUND_R = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
# The key-like word and separator right before a value (`duration_ms: `, `<elapsed>`,
# `"took":`), and right after one (` ms`, `</usage>` has none: `</` then a word).
_BEFORE = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z_][A-Za-z0-9_.-]{1,40}[^A-Za-z0-9\n]{1,3}\Z")
_AFTER = re.compile(r"\A[^A-Za-z0-9\n]{0,3}[A-Za-z_][A-Za-z0-9_]{1,40}(?![A-Za-z0-9_])")
_WORD = re.compile(r"[A-Za-z0-9]")
_LETTER, _DIGIT = re.compile(r"[A-Za-z]"), re.compile(r"\d")
MAX_DIFFERENCES = 16
"""Differing strings in one request beyond which it is not learnt from (a changed session)."""
SEQUENCE_MAX = 20_000
"""Longer differing middles are compared as one region (difflib is quadratic)."""


class Mask(BaseModel):
    """One learnt volatile value: its shape and the literal text beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shape: Shape
    """What the value looks like (see `SHAPES`)."""
    before: str = ""
    """The literal text right before the value (a key and its separator)."""
    after: str = ""
    """The literal text right after it, when nothing usable comes before."""
    length: tuple[int, int] | None = None
    """For `hex` and `id`: the shortest and longest value seen."""
    example: str = ""
    """The two values that taught it, `714 → 702` (shown to reviewers; never matched)."""
    case: str = ""
    """The case whose self-check learnt it."""

    @field_validator("before", "after")
    @classmethod
    def _context(cls, value: str) -> str:
        if len(value) > CONTEXT_MAX + 3 or "\n" in value:
            raise ValueError(f"at most {CONTEXT_MAX + 3} characters on one line")
        return value

    @field_validator("length")
    @classmethod
    def _length(cls, value: tuple[int, int] | None) -> tuple[int, int] | None:
        if value is not None and not 1 <= value[0] <= value[1] <= MAX_ID:
            raise ValueError(f"a range within 1..{MAX_ID}")
        return value

    @property
    def key(self) -> tuple[str, str, str, tuple[int, int] | None]:
        """What makes two masks the same mask (not the example or the case)."""
        return self.shape, self.before, self.after, self.length

    def pattern(self) -> re.Pattern[str]:
        """The mask as a regular expression matching only the value (contexts escaped)."""
        shape = SHAPES[self.shape]
        if self.shape in SIZED:
            low, high = self.length or (1, MAX_ID)
            shape = shape % (low, high)
        before = f"(?<={re.escape(self.before)})" if self.before else BOUND_L
        after = f"(?={re.escape(self.after)})" if self.after else BOUND_R
        return re.compile(before + f"(?:{shape})" + (BOUND_R if self.after else "") + after)

    def describe(self) -> str:
        """One line for `check`, the report and the HTML page."""
        what = {"uuid": "a UUID", "datetime": "a date and time", "clock": "a clock time",
                "duration": "a duration", "number": "a number"}.get(self.shape)
        if what is None:
            low, high = self.length or (1, MAX_ID)
            size = f"{low}" if low == high else f"{low}-{high}"
            what = f"a {size}-character {'hex' if self.shape == 'hex' else 'alphanumeric'} id"
        where = f"after `{self.before}`" if self.before else f"before `{self.after}`"
        seen = f" (seen: {self.example})" if self.example else ""
        return f"{what} {where}{seen}"


def compile_masks(masks: Iterable[Mask]) -> list[re.Pattern[str]]:
    """Each mask's pattern, in order, once per distinct mask."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for mask in masks:
        if mask.key not in seen:
            seen.add(mask.key)
            out.append(mask.pattern())
    return out


def merge(known: Sequence[Mask], new: Iterable[Mask]) -> list[Mask]:
    """`known` then the masks of `new` it lacks; a sized mask of the same context widens."""
    out = list(known)
    for mask in new:
        same = next((i for i, m in enumerate(out) if m.key[:3] == mask.key[:3]), None)
        if same is None:
            out.append(mask)
        elif mask.length and out[same].length and mask.length != out[same].length:
            low = min(mask.length[0], out[same].length[0])  # type: ignore[index]
            high = max(mask.length[1], out[same].length[1])  # type: ignore[index]
            out[same] = out[same].model_copy(update={"length": (low, high)})
    return out


# --- learning ------------------------------------------------------------------------------


def learn(
    recorded: Any, live: Any, ignore: Sequence[re.Pattern[str]] = (), case: str = ""
) -> list[Mask] | None:
    """The masks that make a live request equal to the recorded one, or None when a narrow
    mask cannot explain every difference (`ignore`: patterns already applied to both)."""
    from aam_eval_action.replay.traffic import comparable

    pairs: list[tuple[str, str]] = []
    if not _differences(comparable(recorded, ignore), comparable(live, ignore), pairs):
        return None
    if not pairs or len(pairs) > MAX_DIFFERENCES:
        return None
    masks: list[Mask] = []
    for old, new in pairs:
        found = learn_text(old, new, case)
        if found is None:
            return None
        masks = merge(masks, found)
    return masks


def _differences(a: Any, b: Any, out: list[tuple[str, str]]) -> bool:
    """Collect the differing string pairs of two like-shaped values; False when they differ
    otherwise (a key, a length, a type, a number)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_differences(a[k], b[k], out) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_differences(x, y, out) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str):
        if a != b:
            out.append((a, b))
        return len(out) <= MAX_DIFFERENCES
    return bool(type(a) is type(b) and a == b)


def learn_text(old: str, new: str, case: str = "") -> list[Mask] | None:
    """The masks under which two strings are equal, or None."""
    masks: list[Mask] = []
    for region in _regions(old, new):
        mask = _mask_for(old, new, *region, case)
        if mask is None:
            return None
        masks = merge(masks, [mask])
    patterns = compile_masks(masks)
    if not masks or _masked(old, patterns) != _masked(new, patterns):
        return None
    return masks


def _masked(text: str, patterns: Sequence[re.Pattern[str]]) -> str:
    for pattern in patterns:
        text = pattern.sub("$IGNORED", text)
    return text


def _regions(old: str, new: str) -> list[tuple[int, int, int, int]]:
    """The differing regions (old start, old end, new start, new end)."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[-1 - end] == new[-1 - end]:
        end += 1
    a, b = old[start: len(old) - end], new[start: len(new) - end]
    if len(a) + len(b) > SEQUENCE_MAX:
        return [(start, len(old) - end, start, len(new) - end)]
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return [(start + i1, start + i2, start + j1, start + j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


def _mask_for(old: str, new: str, i1: int, i2: int, j1: int, j2: int, case: str) -> Mask | None:
    """The narrowest mask covering one differing region in both strings."""
    # Out to whole words: `71[4]` against `70[2]` is the number 714 against 702.
    while i1 > 0 and j1 > 0 and old[i1 - 1] == new[j1 - 1] and _WORD.match(old[i1 - 1]):
        i1, j1 = i1 - 1, j1 - 1
    while i2 < len(old) and j2 < len(new) and old[i2] == new[j2] and _WORD.match(old[i2]):
        i2, j2 = i2 + 1, j2 + 1
    if _placeholder_at(old, i1, i2) or _placeholder_at(new, j1, j2):
        return None
    for shape in SHAPES:
        found_old = _covering(old, i1, i2, shape)
        found_new = _covering(new, j1, j2, shape)
        if found_old is None or found_new is None:
            continue
        (s1, e1), (s2, e2) = found_old, found_new
        values = old[s1:e1], new[s2:e2]
        if shape in SIZED and min(map(len, values)) < MIN_ID:
            continue
        if shape == "id" and not all(_LETTER.search(v) and _DIGIT.search(v) for v in values):
            continue
        context = _context(old, new, s1, e1, s2, e2)
        if context is None:
            continue
        before, after = context
        length = (min(map(len, values)), max(map(len, values))) if shape in SIZED else None
        example = f"{values[0][:24]} → {values[1][:24]}"
        return Mask(shape=shape, before=before, after=after, length=length, example=example, case=case)
    return None


def _placeholder_at(text: str, start: int, end: int) -> bool:
    """Whether [start, end) (a point when empty) touches a normalisation placeholder."""
    for found in PLACEHOLDER.finditer(text, max(0, start - CONTEXT_MAX), end + CONTEXT_MAX):
        if found.start() < max(end, start + 1) and start < found.end():
            return True
    return False


def _covering(text: str, start: int, end: int, shape: str) -> tuple[int, int] | None:
    """The bounds of the one value of this shape in `text` that covers [start, end)."""
    body = SHAPES[shape] % (1, MAX_ID) if shape in SIZED else SHAPES[shape]
    pattern = re.compile(BOUND_L + f"(?:{body})" + BOUND_R)
    for found in pattern.finditer(text, max(0, start - 48)):
        if found.start() > start:
            break
        if found.end() >= end and found.end() > found.start():
            return found.start(), found.end()
    return None


def _context(old: str, new: str, s1: int, e1: int, s2: int, e2: int) -> tuple[str, str] | None:
    """(before, after) literal context shared by both values: a key before it, else one after."""
    head = _BEFORE.search(old[max(0, s1 - CONTEXT_MAX - 4): s1])
    if head and new[:s2].endswith(head.group(0)):
        return head.group(0), ""
    tail = _AFTER.match(old[e1: e1 + CONTEXT_MAX + 4])
    if tail and new[e2:].startswith(tail.group(0)):
        return "", tail.group(0)
    return None


class StoredMasks(BaseModel):
    """The `volatile` list of a shared store, as read from a (possibly hostile) file."""

    model_config = ConfigDict(extra="forbid")

    masks: list[Mask] = Field(default_factory=list)
