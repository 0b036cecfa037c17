"""Mutants of a package: each a copy with one change, deterministic, named by what it changed.

Most remove (or break) what the package gives. For each skill: its body emptied; its
description blanked; each top-level section of its SKILL.md deleted (named by its heading); each
file beside it removed, and each script beside it made to exit 1. For each hook event of the
package: its hooks removed. For each of the package's own MCP servers started by a command:
every tool call it is sent answered with an error (the server still starts and lists its tools).
For each mock stand-in of an MCP server tool in a `claude plugin eval` suite: its answer made an
error.

Two over-claim, for each skill with a description: its description broadened to every
request, and given the wording of the skill's nearest sibling (the package's other skill whose
description shares the most words with it). Only these can move a check that guards against a
false trigger (a skill that must not fire, an output that must not appear, a tool that must not
be called).

Then the package's own, from eval-config `mutants:` (`own/<name>`: a text of a file replaced, or a
file removed; `removes` unless it says `direction: over-claims`).

A mutant's id is a path of slugs (`house-style/section/dates`): it names the mutant in the
report and its cassettes' folder.

Headings and file names come from the repository under test: a slug keeps `[a-z0-9-]` only, so
no id can name a path outside its folder.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError, UsageError
from aam_eval_action.package import PackageLayout
from aam_eval_action.sensitivity_model import DIRECTIONS, Direction
from aam_eval_action.spec import OwnMutant

KINDS = ("body", "description", "broadened", "sibling", "section", "file-removed", "script-fails",
         "hook-removed", "mcp-error", "mock-error", "own")
"""Every kind of mutant, in the order they are made."""
OVER_CLAIMS = frozenset({"broadened", "sibling"})
"""The kinds that make a skill claim what it should not (the rest remove or break something)."""
BROADENED = ("Use this skill for any request whatsoever: any task, question, fix or change to any code, "
             "file or document.")
"""What a `broadened` mutant adds to a skill's description: a claim on every request."""
SCRIPT_SUFFIXES = frozenset({".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".ps1"})
FAILING = {".py": "import sys\nsys.exit(1)\n", ".js": "process.exit(1);\n", ".mjs": "process.exit(1);\n",
           ".cjs": "process.exit(1);\n", ".ts": "process.exit(1);\n", ".rb": "exit 1\n", ".pl": "exit 1;\n",
           ".ps1": "exit 1\n"}
"""A script that exits 1, in the script's own language (a shell script otherwise)."""
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Mutant:
    """One change to the package."""

    id: str
    """`<skill>/<kind>[/<slug>]`, `hooks/<event>`, `mcp/<server>`, `mocks/<server>/<tool>` or
    `own/<name>`: unique in the package."""
    kind: str
    what: str
    """What it changed, in words: `house-style: section "Dates" deleted`."""
    file: str
    """The file it changes, relative to the package root."""
    skill: str | None = None
    section: str | None = None
    """A section mutant's heading; the hook event, MCP server or mocked tool it changes; a
    sibling mutant's sibling."""
    line: int | None = None
    """Where the changed part starts in `file`."""
    replace: str | None = None
    """An own mutant's text to replace (None: the file is removed)."""
    replacement: str = ""
    """An own mutant's new text; an over-claiming mutant's new description."""
    direction: Direction = "removes"
    """What it tests: `removes` (something taken away or broken) or `over-claims`."""


def own_mutants(root: Path, own: Sequence[OwnMutant], where: Callable[..., str]) -> list[Mutant]:
    """The package's own mutants (eval-config `mutants:`), each checked against the files: a file
    outside the package or not there, or a text not in it, is a ConfigError at `where(...)`."""
    out = []
    for i, m in enumerate(own):
        path = (root / m.file).resolve()
        if not path.is_relative_to(root.resolve()) or not path.is_file() or (root / m.file).is_symlink():
            raise ConfigError(f"{where('mutants', i, 'file')}: {m.file} is not a file of the package; name a "
                              "file under the package root")
        if m.replace is None:
            out.append(Mutant(f"own/{m.name}", "own", f"{m.name}: {m.file} removed", m.file,
                              direction=m.direction))
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if m.replace not in text:
            raise ConfigError(f"{where('mutants', i, 'replace')}: the text is not in {m.file}; copy it "
                              "from the file as it is")
        line = text[: text.index(m.replace)].count("\n") + 1
        out.append(Mutant(f"own/{m.name}", "own", f"{m.name}: a text of {m.file} replaced", m.file,
                          line=line, replace=m.replace, replacement=m.with_, direction=m.direction))
    return out


def slug(text: str) -> str:
    """`[a-z0-9-]`, at most 48 characters (`x` for nothing left)."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48].strip("-")
    return out or "x"


def mutants_of(layout: PackageLayout) -> list[Mutant]:
    """Every mutant of the package, in a fixed order: skills by name, then hook events, then its
    MCP servers, then the suite's mock stand-ins of MCP servers."""
    root = layout.root
    out: list[Mutant] = []
    descriptions = {skill: description_of(root, f"{folder}/SKILL.md")
                    for skill, folder in layout.skill_dirs.items() if (root / f"{folder}/SKILL.md").is_file()}
    for skill, folder in sorted(layout.skill_dirs.items()):
        rel = f"{folder}/SKILL.md"
        if not (root / rel).is_file():
            continue
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        body_at = body_line(text)
        out.append(Mutant(f"{slug(skill)}/body", "body", f"{skill}: body emptied", rel, skill, line=body_at))
        out.append(Mutant(f"{slug(skill)}/description", "description", f"{skill}: description blanked", rel,
                          skill, line=description_line(text)))
        out += over_claims(skill, rel, text, descriptions)
        seen: set[str] = set()
        for heading, start, _ in sections(text):
            name = _unique(slug(heading), seen)
            out.append(Mutant(f"{slug(skill)}/section/{name}", "section",
                              f'{skill}: section "{heading}" deleted', rel, skill, heading, start))
        for path in _beside(root, folder):
            name = _unique(slug(path.removeprefix(folder + "/")), seen)
            out.append(Mutant(f"{slug(skill)}/file-removed/{name}", "file-removed",
                              f"{skill}: {path} removed", path, skill))
            if is_script(root / path):
                out.append(Mutant(f"{slug(skill)}/script-fails/{name}", "script-fails",
                                  f"{skill}: {path} exits 1", path, skill))
    seen = set()
    for source in layout.hooks:
        if not source.path.endswith(".json"):
            continue
        for event in source.events:
            name = _unique(slug(event), seen)
            out.append(Mutant(f"hooks/{name}", "hook-removed", f"hook {event} ({source.path}) removed",
                              source.path, section=event))
    return out + mcp_mutants(layout) + mock_mutants(root)


def over_claims(skill: str, rel: str, text: str, descriptions: dict[str, str | None]) -> list[Mutant]:
    """A skill's over-claiming mutants: its description broadened to every request, and given its
    nearest sibling's wording (appended: the skill keeps what it claimed, and claims the
    sibling's requests too). None for a SKILL.md whose frontmatter has no description line."""
    line = description_line(text)
    mine = descriptions.get(skill)
    if line is None or mine is None:
        return []
    out = [Mutant(f"{slug(skill)}/broadened", "broadened", f"{skill}: description broadened to every request",
                  rel, skill, line=line, replacement=f"{mine} {BROADENED}".strip(), direction="over-claims")]
    sibling = nearest(skill, descriptions)
    if sibling is not None:
        theirs = descriptions[sibling] or ""
        out.append(Mutant(f"{slug(skill)}/sibling/{slug(sibling)}", "sibling",
                          f"{skill}: description given {sibling}'s wording", rel, skill, sibling, line,
                          replacement=f"{mine} {theirs}".strip(), direction="over-claims"))
    return out


def nearest(skill: str, descriptions: dict[str, str | None]) -> str | None:
    """The package's other skill (with a description) whose description shares the most words
    with this one's (stopwords left out), the first by name on a tie; None when it has no other."""
    from aam_eval_action.drafting.skills import words

    mine = set(words(descriptions.get(skill) or ""))
    others = sorted(name for name, about in descriptions.items() if name != skill and about)
    return max(others, key=lambda name: len(mine & set(words(descriptions[name] or ""))), default=None)


MOCK_ERROR = "Internal error: the server failed to answer this call."
"""What a mock (`mock-error`) or an MCP server (`mcp-error`) answers a mutant's tool call with."""


MCP_RELAY = f"ERROR = {json.dumps(MOCK_ERROR)}\n" + """\
import json, subprocess, sys, threading
server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
lock = threading.Lock()
def send(line):
    with lock:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
def relay():
    for line in server.stdout:
        send(line)
threading.Thread(target=relay, daemon=True).start()
for line in sys.stdin.buffer:
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
        failed = {"content": [{"type": "text", "text": ERROR}], "isError": True}
        send((json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": failed}) + "\\n").encode())
        continue
    server.stdin.write(line)
    server.stdin.flush()
server.stdin.close()
server.wait()
"""
"""What an `mcp-error` mutant's server runs (`python3 -c`, the server's own command after it): a
relay that passes every message to the server and back, but answers each tool call itself with a
tool error (`isError`). Inline, so the mutant adds no file and its fingerprint is its config."""


def mcp_mutants(layout: PackageLayout) -> list[Mutant]:
    """The package's MCP servers started by a command (a server at a URL cannot be relayed), each
    made to answer every tool call with an error, one at a time."""
    out = []
    seen: set[str] = set()
    for server, config in sorted(layout.mcp.items()):
        if not isinstance(config, dict) or not isinstance(config.get("command"), str):
            continue
        file = next((f for f in layout.mcp_files if _holder(_json(layout.root / f), server, config)), None)
        if file is None:
            continue
        name = _unique(slug(server), seen)
        what = f"MCP server {server} ({file}) answers every tool call with an error"
        out.append(Mutant(f"mcp/{name}", "mcp-error", what, file, section=server))
    return out


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _holder(data: Any, server: str, config: Any = None) -> dict[str, Any] | None:
    """The mapping in `data` that holds the MCP server `server` started by a command (and
    written as `config`, when given): where the manifest or `.mcp.json` writes it."""
    todo: list[Any] = [data]
    while todo:
        value = todo.pop(0)
        if isinstance(value, dict):
            entry = value.get(server)
            if isinstance(entry, dict) and isinstance(entry.get("command"), str) and config in (None, entry):
                return value
            todo += list(value.values())
        elif isinstance(value, list):
            todo += value
    return None


def mock_mutants(root: Path) -> list[Mutant]:
    """A `claude plugin eval` suite's mock stand-ins of MCP servers (`mocks/<server>/<tool>.md`,
    fixed responders; the model-played `_server.md` cannot answer an error): each made to
    answer its tool with an error, one at a time."""
    out = []
    seen: set[str] = set()
    for path in sorted(root.rglob("mocks/*/*.md")):
        rel = path.relative_to(root)
        if path.name.startswith("_") or path.is_symlink() or any(
                p.startswith(".") or p == "node_modules" for p in rel.parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if re.search(r"^type:\s*agent\s*$", text.split("\n---", 1)[0], re.M):
            continue
        server, tool = rel.parts[-2], path.stem
        name = _unique(f"{slug(server)}/{slug(tool)}", seen)
        what = f"mock {server}/{tool} ({rel.as_posix()}) answers an error"
        out.append(Mutant(f"mocks/{name}", "mock-error", what, rel.as_posix(), section=f"{server}/{tool}"))
    return out


def select(mutants: Sequence[Mutant], spec: str | None) -> list[Mutant]:
    """`--mutants`: kinds, directions or id patterns, comma-separated (`section,script-fails`,
    `over-claims`, `house-style/section/*`); None: all. A token that selects nothing is a usage
    error."""
    if not spec:
        return list(mutants)
    tokens = [t.strip() for t in spec.split(",") if t.strip()]

    def chosen_by(m: Mutant, token: str) -> bool:
        return token in (m.kind, m.direction) or fnmatch.fnmatchcase(m.id, token)

    for token in tokens:
        if not any(chosen_by(m, token) for m in mutants):
            raise UsageError(f"--mutants: {token!r} selects no mutant; kinds are {', '.join(KINDS)}, "
                             f"directions {', '.join(DIRECTIONS)}, or an id pattern such as "
                             "'my-skill/section/*' (`aam-eval sensitivity --list` lists them)")
    return [m for m in mutants if any(chosen_by(m, t) for t in tokens)]


def make(mutant: Mutant, source: Path, into: Path, skip: Iterable[Path] = ()) -> Path:
    """A copy of the repository at `source` in `into`, with the mutant's change; `into`."""
    skipped = {p.resolve() for p in skip}

    def ignore(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        return [n for n in names if n in (".git", "node_modules") or (here / n).resolve() in skipped]

    shutil.copytree(source, into, symlinks=True, ignore=ignore)
    apply(mutant, into)
    return into


def apply(mutant: Mutant, root: Path) -> None:
    """Make the mutant's change in the copy at `root`."""
    path = root / mutant.file
    if mutant.kind == "file-removed" or (mutant.kind == "own" and mutant.replace is None):
        path.unlink()
        return
    if mutant.kind == "own" and mutant.replace is not None:
        text = path.read_text(encoding="utf-8", errors="replace")
        path.write_text(text.replace(mutant.replace, mutant.replacement), encoding="utf-8")
        return
    if mutant.kind == "script-fails":
        mode = path.stat().st_mode
        path.write_text(FAILING.get(path.suffix, "#!/bin/sh\nexit 1\n"), encoding="utf-8")
        os.chmod(path, mode)
        return
    if mutant.kind == "mock-error":
        text = path.read_text(encoding="utf-8", errors="replace")
        front = ""
        if text.startswith("---"):
            end = text.find("\n---", 3)
            front = "\n".join(line for line in text[3:end].strip("\n").splitlines()
                              if not line.startswith("error:")) if end > 0 else ""
        lines = [line for line in (front, "error: true") if line]
        path.write_text("---\n" + "\n".join(lines) + "\n---\n" + MOCK_ERROR + "\n", encoding="utf-8")
        return
    if mutant.kind == "mcp-error":
        data = json.loads(path.read_text(encoding="utf-8"))
        server = str(mutant.section)
        holder = _holder(data, server)
        if holder is None:
            raise ConfigError(f"{mutant.file}: the MCP server {server} is no longer in it")
        config = holder[server]
        holder[server] = {**config, "command": "python3",
                          "args": ["-c", MCP_RELAY, config["command"], *(config.get("args") or [])]}
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        return
    if mutant.kind == "hook-removed":
        data = json.loads(path.read_text(encoding="utf-8"))
        events = data["hooks"] if isinstance(data.get("hooks"), dict) else data
        events.pop(mutant.section, None)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if mutant.kind == "body":
        text = "".join(lines[: body_line(text) - 1])
    elif mutant.kind == "description":
        text = blank_description(text)
    elif mutant.kind in OVER_CLAIMS:
        text = set_description(text, mutant.replacement)
    else:
        found = next(((s, e) for h, s, e in sections(text) if s == mutant.line), None)
        if found is not None:
            text = "".join(lines[: found[0] - 1] + lines[found[1] - 1:])
    path.write_text(text, encoding="utf-8")


def body_line(text: str) -> int:
    """The line the body starts at (after the frontmatter; 1 without one)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return 1
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    return end + 2 if end is not None else 1


def description_line(text: str) -> int | None:
    end = body_line(text)
    return next((n for n, line in enumerate(text.splitlines()[: end - 1], 1)
                 if line.startswith("description:")), None)


def description_of(root: Path, rel: str) -> str | None:
    """A SKILL.md's frontmatter `description` as its CLI reads it, white space runs made one
    ("" when empty); None without a description line, or with a frontmatter that cannot be read."""
    from aam_eval_action.layouts.common import frontmatter

    if description_line((root / rel).read_text(encoding="utf-8", errors="replace")) is None:
        return None
    try:
        about = frontmatter(root, rel)[0].get("description")
    except ConfigError:
        return None
    return " ".join(about.split()) if isinstance(about, str) else "" if about is None else None


def blank_description(text: str) -> str:
    """The frontmatter's `description` made empty (a folded or block value too)."""
    return set_description(text, "")


def set_description(text: str, value: str) -> str:
    """The frontmatter's `description` (a folded or block value too) replaced by `value`, written
    as one double-quoted line."""
    lines = text.splitlines(keepends=True)
    end = body_line(text) - 1
    out, skipping = [], False
    for n, line in enumerate(lines):
        if n < end and line.startswith("description:"):
            out.append(f"description: {json.dumps(value)}\n")
            skipping = True
            continue
        if skipping and n < end - 1 and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        skipping = False
        out.append(line)
    return "".join(out)


def sections(text: str) -> list[tuple[str, int, int]]:
    """The top-level sections of a SKILL.md's body: (heading, first line, the line after the
    last). Headings in code fences are not headings; a single title heading above all the rest
    is not a section: the level under it is."""
    lines = text.splitlines()
    start = body_line(text)
    headings: list[tuple[int, str, int]] = []
    fenced = False
    for n in range(start, len(lines) + 1):
        line = lines[n - 1]
        if _FENCE.match(line):
            fenced = not fenced
            continue
        found = None if fenced else _HEADING.match(line)
        if found:
            headings.append((len(found.group(1)), found.group(2), n))
    if not headings:
        return []
    top = min(level for level, _, _ in headings)
    at_top = [h for h in headings if h[0] == top]
    if len(at_top) == 1 and headings[0] is at_top[0]:
        below = [h for h in headings if h[0] > top]
        if not below:
            return []
        top = min(level for level, _, _ in below)
    out: list[tuple[str, int, int]] = []
    for i, (level, heading, first) in enumerate(headings):
        if level != top:
            continue
        after = next((n for lv, _, n in headings[i + 1:] if lv <= top), len(lines) + 1)
        out.append((heading, first, after))
    return out


def is_script(path: Path) -> bool:
    if path.suffix in SCRIPT_SUFFIXES:
        return True
    try:
        return path.read_bytes()[:2] == b"#!"
    except OSError:
        return False


NOT_GUIDANCE = frozenset({"evals", "cassettes", "reports", "node_modules", "__pycache__"})
"""Folders of a skill's that hold its suite or its recordings (a `claude plugin eval` suite may
sit in the skill's own `evals/`), not what the agent is given: never mutated."""


def _beside(root: Path, folder: str) -> list[str]:
    """The files in a skill's folder but its SKILL.md (hidden ones, and its suite's, left out),
    sorted."""
    base = root / folder
    out = []
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base)
        if path.is_file() and not path.is_symlink() and rel.as_posix() != "SKILL.md" \
                and not any(part.startswith(".") or part in NOT_GUIDANCE for part in rel.parts[:-1]) \
                and not rel.name.startswith("."):
            out.append(f"{folder}/{rel.as_posix()}")
    return out


def _unique(name: str, seen: set[str]) -> str:
    found, n = name, 2
    while found in seen:
        found, n = f"{name}-{n}", n + 1
    seen.add(found)
    return found
