"""The skills a suite is drafted for, as the drafting model sees them, and their nearest siblings.

A skill is shown to the model with its name and description withheld (its frontmatter is left
out and its name masked in the body), so drafted prompts describe a user's situation instead of
parroting the description. Siblings are the package's other skills ranked by BM25 over their
descriptions and bodies (the `bm25s` library): the near misses of a skill are drafted from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.fsutil import sha256_bytes
from aam_eval_action.layouts.common import frontmatter
from aam_eval_action.package import PackageLayout

STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "into",
    "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "will", "with", "you",
    "your", "use", "used", "using", "when", "what", "which", "who", "how", "can", "may", "must",
    "should", "not", "no", "do", "does", "if", "then", "than", "so", "such", "these", "those",
    "each", "any", "all", "our", "we", "they", "them", "their", "there", "here", "also", "more",
    "most", "other", "skill", "skills",
))
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class SkillDoc:
    """One skill's text: what the drafting model is shown, and what citations are checked against."""

    name: str
    description: str
    body: str
    """SKILL.md after its frontmatter, the name masked (line for line, so lines still match)."""
    body_line: int
    """The line of SKILL.md the body starts at."""
    path: str
    """SKILL.md, relative to the repository root."""
    sha256: str
    """Of SKILL.md's bytes."""
    masks: tuple[str, ...] = field(default=())
    """The spellings of the name that were masked."""

    def line_of(self, passage: str) -> int | None:
        """The line of SKILL.md where a (whitespace-normalised) passage of the body starts."""
        flat, starts = _flatten(self.body)
        at = flat.find(normalise_space(passage))
        if at < 0:
            return None
        return self.body_line + sum(1 for s in starts if s <= at) - 1

    def quotes(self, passage: str) -> bool:
        """Whether the passage is the body's text, verbatim but for runs of white space."""
        wanted = normalise_space(passage)
        return bool(wanted) and wanted in _flatten(self.body)[0]


def read_skills(layout: PackageLayout) -> list[SkillDoc]:
    """Every skill of the package, read from its SKILL.md."""
    return [read_skill(layout.root, layout.skill_dir(name) / "SKILL.md", name) for name in layout.skills()]


def read_neighbors(layout: PackageLayout, neighbors: tuple[Any, ...]) -> list[SkillDoc]:
    """The neighbour skills inside the repository (eval-config `neighbors`, the marketplace's other
    plugins), read as the package's are: their prompts are near misses too."""
    root = layout.root.resolve()
    return [read_skill(root, n.folder / "SKILL.md", n.name) for n in neighbors
            if (n.folder / "SKILL.md").resolve().is_relative_to(root)]


def read_skill(root: Path, skill_md: Path, name: str) -> SkillDoc:
    rel = skill_md.resolve().relative_to(root.resolve()).as_posix()
    front, body_line = frontmatter(root, rel)
    lines = skill_md.read_text(encoding="utf-8", errors="replace").splitlines()
    body = "\n".join(lines[body_line - 1 :])
    description = front.get("description")
    masks = _spellings(name)
    return SkillDoc(
        name=name,
        description=description.strip() if isinstance(description, str) else "",
        body=mask(body, masks, "this skill"),
        body_line=body_line,
        path=rel,
        sha256=sha256_bytes(skill_md.read_bytes()),
        masks=masks,
    )


def _spellings(name: str) -> tuple[str, ...]:
    """The name as written (`pdf-tools`): its words alone (`pdf tools`) are ordinary words a
    body and a user may well write, so they stay."""
    return (name,)


def _title(body: str, name: str) -> str:
    """A heading that is the name in words (`# Pdf tools`) masked like the name."""
    spaced = re.escape(re.sub(r"[-_]+", " ", name))
    return re.sub(r"(?im)^(#+[ \t]*)" + spaced + r"[ \t]*$", r"\1this skill", body)


def mask(text: str, spellings: tuple[str, ...], replacement: str) -> str:
    """Every spelling of a name replaced, case-insensitively, on word boundaries."""
    for spelling in sorted(spellings, key=len, reverse=True):
        text = re.sub(r"(?<![\w-])" + re.escape(spelling) + r"(?![\w-])", replacement, text, flags=re.I)
    return text


def normalise_space(text: str) -> str:
    return " ".join(text.split())


def _flatten(body: str) -> tuple[str, list[int]]:
    """The body with white space collapsed, and where each of its lines starts in that text."""
    flat, starts = "", []
    for line in body.split("\n"):
        starts.append(len(flat))
        words = line.split()
        if words:
            flat += (" " if flat else "") + " ".join(words)
    return flat, starts


def words(text: str) -> list[str]:
    """Lower-case word tokens, stopwords and one- and two-letter words left out."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS]


_NOT_PROSE = (
    re.compile(r"```.*?(?:```|\Z)", re.S),  # fenced code
    re.compile(r"`[^`\n]*`"),  # inline code
    re.compile(r"\b[a-z][a-z0-9+.-]*://\S*", re.I),  # URLs
    re.compile(r"\S*[/\\]\S*"),  # paths, and anything else with a slash
    re.compile(r"\S*[A-Za-z0-9][._$=@][A-Za-z0-9]\S*"),  # dotted names, files, code: api.example.com, x=y
)
"""What is not prose in a skill: its words (`com`, `api`, `https`) say nothing of what it does."""


def prose(text: str) -> str:
    """The text less its code, URLs, paths and dotted or code-like tokens."""
    for pattern in _NOT_PROSE:
        text = pattern.sub(" ", text)
    return text


@dataclass(frozen=True)
class Sibling:
    """A skill near another one, and why: its BM25 score and the words they share most."""

    name: str
    score: float
    shared: tuple[str, ...]


def siblings(docs: list[SkillDoc], count: int) -> dict[str, list[Sibling]]:
    """For each skill, the `count` other skills most similar to it by BM25 (description and
    body), best first; a skill sharing no word with it is never a sibling."""
    try:
        import bm25s  # type: ignore[import-untyped]  # only `init` ranks skills: kept out of start-up
    except ImportError:  # the action's image leaves it out: the action never drafts
        from aam_eval_action.errors import UsageError

        raise UsageError("aam-eval init needs the bm25s package to rank sibling skills: pip install "
                         "bm25s (it is a dependency of `pip install aam-eval-action`)") from None

    if len(docs) < 2 or count < 1:
        return {d.name: [] for d in docs}
    corpus = [words(prose(f"{d.name} {d.description} {d.body}")) for d in docs]
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    found: dict[str, list[Sibling]] = {}
    for i, doc in enumerate(docs):
        scores = index.get_scores(list(dict.fromkeys(corpus[i])))
        ranked = sorted(
            (j for j in range(len(docs)) if j != i and scores[j] > 0),
            key=lambda j: (-float(scores[j]), docs[j].name),
        )
        found[doc.name] = [
            Sibling(docs[j].name, round(float(scores[j]), 2), _shared(index, corpus[i], corpus[j], j))
            for j in ranked[:count]
        ]
    return found


def _shared(index: Any, mine: list[str], theirs: list[str], j: int) -> tuple[str, ...]:
    """The three shared words that weigh most in the sibling's score."""
    common = sorted(set(mine) & set(theirs))
    weight = {w: float(index.get_scores([w])[j]) for w in common}
    return tuple(sorted(common, key=lambda w: (-weight[w], w))[:3])
