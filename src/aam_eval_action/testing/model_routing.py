"""The scripted model server choosing a skill: each CLI's skill listing read back, and the route
step that picks the skill sharing the most words with the prompt."""

from __future__ import annotations

import html
import re
from typing import Any

from aam_eval_action.testing.model_requests import (
    _gemini_system,
    _texts,
    _texts_of_messages,
    is_gemini,
    prompt_text,
)

CATCH_ALL = "*"
"""The `match` of the scenario that answers every agent prompt no other scenario matches."""
REPLY_TO = "reply-to"
"""The key of a scenario that answers a resumed session's follow-up message (see the module)."""


def is_catch_all(scenario: dict[str, Any]) -> bool:
    return scenario.get("match") == CATCH_ALL


CLAUDE_SKILLS = re.compile(r"skills are available[^\n]*\n")
"""The line before Claude Code's `- name: description` skill entries (in a `<system-reminder>`):
"The following skills are available for use with the Skill tool:"."""
SKILL_ENTRY = re.compile(r"^- ([A-Za-z0-9._:-]+): (.*)$")
NAME_ONLY_ENTRY = re.compile(r"^- ([A-Za-z0-9._:-]+)$")
"""Claude Code's entry for a skill its listing budget shows by name only."""
COPILOT_OVERFLOW = re.compile(r"Additional skills available \(invoke by name\): ([^\n<]*)")
"""Copilot CLI's line naming the skills past its listing budget."""
CODEX_SKILL_ENTRY = re.compile(r"^- ([A-Za-z0-9._:-]+): (.*?) ?\(file: [^)]*SKILL\.md\)\s*$")
XML_SKILL = re.compile(r"<skill>(.*?)</skill>", re.S)


def listed_skills(body: dict[str, Any]) -> set[str]:
    """Names of the skills the CLI lists to the model in this request (see `skill_listing`)."""
    return {name for name, _ in skill_listing(body)}


def skill_listing(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, description) of each skill the CLI lists to the model in this request, in its
    order (a name listed twice counts once, where it came first): the `- name: description`
    entries of Claude Code's skills reminder, the `- name: description (file: ...)` lines of
    Codex's `<skills_instructions>`, the `<skill>` elements of Copilot's and Gemini CLI's
    `<available_skills>` in their system prompt."""
    found: list[tuple[str, str]] = []
    for text in _texts_of_messages(body):
        claude = CLAUDE_SKILLS.search(text)
        if "<skills_instructions>" in text:
            listing = text.split("<skills_instructions>", 1)[1].split("</skills_instructions>", 1)[0]
            found += [(m.group(1), m.group(2).strip()) for line in listing.splitlines()
                      if (m := CODEX_SKILL_ENTRY.match(line))]
        elif claude:
            found += _claude_skills(text[claude.end():].split("</system-reminder>", 1)[0])
    system = _texts(body.get("system")) + _texts(body.get("instructions"))
    system += _texts(_gemini_system(body)) if is_gemini(body) else []
    for text in system:  # Copilot (`instructions` with a GPT model), Gemini (`systemInstruction`)
        for listing in re.findall(r"<available_skills>(.*?)</available_skills>", text, re.S):
            for skill in XML_SKILL.findall(listing):
                name = re.search(r"<name>\s*([^<]*?)\s*</name>", skill)
                about = re.search(r"<description>(.*?)</description>", skill, re.S)
                if name and re.fullmatch(r"[A-Za-z0-9._:-]+", html.unescape(name.group(1))):
                    found.append((html.unescape(name.group(1)),
                                  html.unescape(about.group(1)).strip() if about else ""))
            for line in COPILOT_OVERFLOW.findall(listing):  # past the budget: by name only
                names = re.sub(r"\.\.\. and \d+ more$", "", line.strip()).split(", ")
                found += [(n.strip(), "") for n in names if re.fullmatch(r"[A-Za-z0-9._:-]+", n.strip())]
    first: dict[str, str] = {}
    for skill_name, description in found:
        first.setdefault(skill_name, description)
    return list(first.items())


def _claude_skills(listing: str) -> list[tuple[str, str]]:
    """Claude Code's entries: a `- name: description` line, and the lines after it up to the
    next entry (a long description goes on over several)."""
    entries: list[tuple[str, str]] = []
    lines: list[str] = []
    for line in listing.splitlines():
        entry = SKILL_ENTRY.match(line) or NAME_ONLY_ENTRY.match(line)
        if entry:
            if entries:
                entries[-1] = (entries[-1][0], " ".join(lines))
            entries.append((entry.group(1), ""))
            lines = [entry.group(2).strip()] if entry.re is SKILL_ENTRY else []
        elif entries and line.strip():
            lines.append(line.strip())
    if entries:
        entries[-1] = (entries[-1][0], " ".join(lines))
    return entries


ROUTE_MIN_OVERLAP = 2
NO_SKILL_FITS = "No skill fits; answering directly."
ROUTE_STOPWORDS = frozenset({
    "the", "and", "for", "with", "from", "into", "onto", "that", "this", "these", "those", "then",
    "than", "there", "here", "what", "which", "who", "whom", "whose", "when", "where", "why",
    "how", "are", "was", "were", "been", "being", "has", "have", "had", "does", "did", "doing",
    "done", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "not",
    "but", "nor", "any", "all", "each", "every", "some", "such", "own", "our", "ours", "your",
    "yours", "you", "they", "them", "their", "its", "his", "her", "hers", "she", "him", "also",
    "just", "only", "very", "too", "more", "most", "other", "about", "above", "after", "again",
    "against", "before", "below", "between", "during", "over", "under", "out", "off", "once",
    "same", "both", "few", "via", "per", "use", "used", "uses", "using", "please", "want", "need",
    "like", "get", "got", "let", "make", "made", "new", "one", "two", "way", "ask", "asked",
    "without", "within", "while",
})
"""Words that say nothing about which skill fits (they are in every description and prompt)."""


def route_words(text: str) -> set[str]:
    """The words a route compares: lowercase runs of 3+ letters, less the stopwords, with a
    trailing plural `s` dropped (`commits` and `commit` are one word; `class` stays `class`)."""
    words: set[str] = set()
    for word in re.findall(r"[a-z]+", text.lower()):
        if len(word) < 3 or word in ROUTE_STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word not in ROUTE_STOPWORDS:
            words.add(word)
    return words


def route_prompt(body: dict[str, Any]) -> str:
    """The prompt a route reads: the user's prompt less what a CLI wraps into the same text
    (Copilot CLI's `<current_datetime>` element)."""
    return re.sub(r"<current_datetime>.*?</current_datetime>", "", prompt_text(body), flags=re.S).strip()


def route_scores(prompt: str, skills: list[tuple[str, str]]) -> list[tuple[str, int]]:
    """Each listed skill with the number of distinct words its name and description share with
    the prompt (the name split at its hyphens), in the listing's order."""
    asked = route_words(prompt)
    return [(name, len(asked & route_words(f"{name.replace('-', ' ')} {about}"))) for name, about in skills]


def route_skill(
    prompt: str, skills: list[tuple[str, str]], min_overlap: int = ROUTE_MIN_OVERLAP
) -> str | None:
    """The skill a route picks: the best score of at least `min_overlap`, the first listed on a
    tie; None when none reaches it."""
    best: tuple[str, int] | None = None
    for name, score in route_scores(prompt, skills):
        if score >= min_overlap and (best is None or score > best[1]):
            best = (name, score)
    return best[0] if best else None


def routed_step(step: dict[str, Any], prompt: str, skills: list[tuple[str, str]]) -> dict[str, Any]:
    """A `route` step as the step it stands for: `skill: <picked>`, or the no-skill text (other
    keys of the step, such as `sleep`, stay)."""
    options = step.get("route")
    minimum = ROUTE_MIN_OVERLAP
    if isinstance(options, dict):
        minimum = int(options.get("min-overlap", ROUTE_MIN_OVERLAP))
    picked = route_skill(prompt, skills, minimum)
    rest = {k: v for k, v in step.items() if k != "route"}
    return {**rest, "skill": picked} if picked else {**rest, "text": NO_SKILL_FITS}




def agent_step(
    scenario: dict[str, Any], turn: int, skills: set[str] | None = None, waits: bool = False
) -> dict[str, Any]:
    """The step for this turn; past the end, the last text step (or `Done.`).

    A scenario with `needs-skill` plays `without-skill` when the request does not list that skill.
    With `waits` (a CLI whose sub-agent call returns the sub-agent's answer: Gemini CLI, Claude
    Code 2.1.197), the steps marked `background: true` (said while sub-agents run in the
    background) are left out.
    """
    key = "agent"
    needed = scenario.get("needs-skill")
    bare = {name.rsplit(":", 1)[-1] for name in skills or ()}  # a plugin's skill: `plugin:skill`
    if needed and skills is not None and str(needed) not in skills | bare:
        key = "without-skill"
    steps = [s for s in scenario.get(key) or [] if not (waits and s.get("background"))]
    if turn < len(steps):
        return dict(steps[turn])
    texts = [s["text"] for s in steps if "text" in s]
    return {"text": texts[-1] if texts else "Done."}
