"""The skills a run installs, read as the CLIs read them: the package's, and its neighbours.

A neighbour is a skill installed beside the package for its trigger cases: the skills users
have next to it (eval-config `neighbors:`, `--with`). An entry names a skill folder, a folder of
skills (a plugin's `skills/`, a vendored repository's), a plugin folder, or `marketplace`: every
other plugin of the repository's marketplaces. They are installed as project skills, beside the
package's, so the CLI lists them as it lists those.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

from aam_eval_action.catalog.listing import Origin, Skill
from aam_eval_action.errors import ConfigError
from aam_eval_action.package import PackageLayout

MARKETPLACE = "marketplace"
"""The `neighbors:` entry that means every other plugin of the repository's marketplaces."""
MAX_NEIGHBORS = 2000


@dataclass(frozen=True)
class Neighbor:
    """A skill installed beside the package."""

    name: str
    folder: Path
    """Its folder (absolute)."""
    label: str
    """Its folder as given: relative to the package root when inside it."""


def read_skill(folder: Path, name: str, origin: Origin, label: str) -> Skill:
    """A skill as the CLIs read it: its description (a frontmatter that is not valid YAML read
    as the lenient CLIs read it), `when_to_use`, the description's line and its body's size."""
    from aam_eval_action.layouts.common import frontmatter

    try:
        front, body_line = frontmatter(folder, "SKILL.md")
    except ConfigError:
        front, body_line = {}, 1
    text = (folder / "SKILL.md").read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    head = "\n".join(lines[1:max(1, body_line - 2)])
    try:
        strict = isinstance(yaml.safe_load(head) if head.strip() else {}, dict)
    except yaml.YAMLError:
        strict = False
    line = next((i + 1 for i, row in enumerate(lines[:body_line]) if row.startswith("description:")), None)
    description = front.get("description")
    when = front.get("when_to_use")
    return Skill(
        name=name, description=description.strip() if isinstance(description, str) else "",
        origin=origin, when_to_use=when.strip() if isinstance(when, str) and when.strip() else None,
        file=f"{label}/SKILL.md" if label else "SKILL.md", line=line,
        body=len("\n".join(lines[body_line - 1:])), strict_yaml=strict,
    )


def package_skills(layout: PackageLayout, engine: str) -> list[Skill]:
    """The package's skills (and, for Claude Code, its commands, which share the listing)."""
    skills = [read_skill(layout.skill_dir(name), name, "package", layout.skill_dirs[name])
              for name in layout.skills()]
    from aam_eval_action.engines.registry import ENGINES

    if ENGINES[engine].claude_native:  # its slash commands share the listing
        from aam_eval_action.engines.install import _command_parts

        for command in layout.commands:
            try:
                description, _ = _command_parts(layout, command)
            except ConfigError:
                description = ""
            skills.append(Skill(command.name, description, "package", file=command.path, command=True))
    return skills


def neighbor_skills(neighbors: tuple[Neighbor, ...]) -> list[Skill]:
    return [read_skill(n.folder, n.name, "neighbor", n.label) for n in neighbors]


def resolve(
    layout: PackageLayout, entries: list[str], where: str, outside: bool = False
) -> tuple[Neighbor, ...]:
    """The neighbour skills `entries` name. Paths are relative to the package root and must stay
    inside it, unless `outside` (`--with`, given by the person running, relative to the working
    folder). `where` names the setting in errors."""
    found: dict[str, Neighbor] = {}
    own = set(layout.skills())
    for entry in entries:
        for name, folder in _entry(layout, entry, where, outside):
            label = _label(layout.root, folder)
            if name in own:
                raise ConfigError(f"{where}: {entry!r}: its skill {name!r} ({label}) has the name of one of "
                                  "the package's own skills; a neighbour must be another skill")
            if name in found and found[name].folder != folder:
                raise ConfigError(f"{where}: two neighbour skills are named {name!r} ({found[name].label} "
                                  f"and {label}); a CLI lists one of them; name one folder only")
            found[name] = Neighbor(name, folder, label)
    if len(found) > MAX_NEIGHBORS:
        raise ConfigError(f"{where}: {len(found)} neighbour skills; at most {MAX_NEIGHBORS}")
    return tuple(sorted(found.values(), key=lambda n: n.name))


def _entry(layout: PackageLayout, entry: str, where: str, outside: bool) -> list[tuple[str, Path]]:
    from aam_eval_action.layouts.common import inside, skill_folders

    if entry == MARKETPLACE and not outside:
        return _marketplace(layout, where)
    if outside:
        folder = Path(entry).expanduser().resolve()
        if not folder.is_dir():
            raise ConfigError(f"{where} {entry}: no such folder")
    else:
        rel = inside(layout.root, "", entry, f"{where}: {entry!r}", within="")
        folder = layout.root / rel if rel else layout.root
        if not folder.is_dir():
            raise ConfigError(f"{where}: {entry!r}: no such folder under the package ({layout.root})")
    for base in (folder, folder / "skills"):
        skills = skill_folders(base, "")
        if skills:
            return [(name, (base / sub).resolve()) for name, sub in skills.items()]
    raise ConfigError(f"{where}: {entry!r}: no skill found; name a folder with SKILL.md, a folder of such "
                      f"folders, a plugin with skills/, or {MARKETPLACE!r}")


def _marketplace(layout: PackageLayout, where: str) -> list[tuple[str, Path]]:
    """Every skill of the repository's other plugins (a marketplace's plugins beside this one)."""
    from aam_eval_action.layouts.detect import detect

    try:
        repo = detect(layout.root)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {MARKETPLACE}: {exc}") from None
    plugins = [p for p in repo.packages if (p.base, p.name) != (layout.base, layout.name)]
    if not plugins:
        raise ConfigError(f"{where}: {MARKETPLACE!r}: the repository at {layout.root} has no other plugin")
    return [(name, p.skill_dir(name).resolve()) for p in plugins for name in p.skills()]


def _label(root: Path, folder: Path) -> str:
    try:
        return folder.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return folder.as_posix()


def draw(pool: tuple[Neighbor, ...], count: int, seed: str = "") -> tuple[Neighbor, ...]:
    """`count` neighbours drawn from the pool, the same every time: the pool is shuffled by a seed
    of its names (and `seed`), and every size takes the first ones, so a bigger draw holds every
    smaller one."""
    if count >= len(pool):
        return pool
    digest = hashlib.sha256(("\n".join(n.name for n in pool) + "\0" + seed).encode()).digest()
    order = list(pool)
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return tuple(sorted(order[:count], key=lambda n: n.name))
