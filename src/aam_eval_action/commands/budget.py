"""`aam-eval budget`: what each CLI shows the model of the package's skills, and what it cuts.

Per engine and model: the skill listing's size against its budget (the context window follows
from the model, as the CLI sizes it), each skill's always-on cost (its listing entry) and
on-invoke cost (its SKILL.md body), and which skills are cut short, shown by name only or left
out, with the neighbours (`--with`, eval-config `neighbors`) installed beside it. No agent runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.catalog import Entry, Listing, Skill, predict
from aam_eval_action.engines.registry import ENGINES, check_engine_name, engine_names
from aam_eval_action.errors import EXIT_OK, UsageError
from aam_eval_action.render.console import neutralize_commands

SHOWN = {"full": "in full", "truncated": "cut short", "name-only": "NAME ONLY", "left-out": "NOT LISTED"}


def context(value: str) -> int:
    """`200k`, `1m`, `1000000`: a context window in tokens."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*", value)
    if not found:
        raise UsageError(f"--context {value!r}: write a number of tokens, like 200k or 1m")
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[found.group(2).lower()]
    tokens = int(float(found.group(1)) * scale)
    if not 1_000 <= tokens <= 100_000_000:
        raise UsageError(f"--context {value!r}: between 1k and 100m tokens")
    return tokens


@dataclass(frozen=True)
class BudgetArgs:
    package: Path
    engines: list[str]
    models: list[str]
    window: int | None = None
    with_dirs: tuple[str, ...] = ()
    plugins: list[str] | None = None
    json: bool = False


def listings(skills: list[Skill], engines: list[str], models: list[str], window: int | None) -> list[Listing]:
    """One listing per engine (each with its default model when none is given) and model it serves."""
    from aam_eval_action.settings import serves

    out = []
    for engine in engines:
        chosen = [m for m in models if serves(engine, m)] if models else [ENGINES[engine].default_model]
        out += [predict(engine, skills, model, window) for model in chosen]
    return out


def budget(args: BudgetArgs) -> int:
    from aam_eval_action.catalog.installed import neighbor_skills, package_skills
    from aam_eval_action.loader import load_repo
    from aam_eval_action.settings import Overrides, crowding

    for name in args.engines:
        check_engine_name(name, "--engine")
    repo = load_repo(args.package, args.plugins)
    engines = args.engines or list(engine_names())
    out: list[dict[str, Any]] = []
    for loaded in repo.packages:
        neighbors = crowding(loaded, Overrides(with_dirs=args.with_dirs)).get("neighbors", ())
        for engine in engines:
            skills = package_skills(loaded.layout, engine) + neighbor_skills(neighbors)
            for listing in listings(skills, [engine], args.models, args.window):
                out.append({"plugin": loaded.plugin if repo.several else None, "listing": listing})
    if args.json:
        print(json.dumps([as_json(o["plugin"], o["listing"]) for o in out], indent=2))
        return EXIT_OK
    for item in out:
        for line in lines(item["listing"], item["plugin"]):
            print(neutralize_commands(line))
    return EXIT_OK


ORDER = ("full", "truncated", "name-only", "left-out")
HEADLINE = {"full": "in full", "truncated": "cut short", "name-only": "by name only",
            "left-out": "not at all"}


def counts(entries: list[Entry]) -> dict[str, int]:
    """How many entries are shown each way, every way named."""
    return {way: sum(e.shown == way for e in entries) for way in ORDER}


def shown_as(entries: list[Entry]) -> str:
    """`57 by name only, 3 in full`: the ways that hold any entry, the worst first."""
    found = counts(entries)
    return ", ".join(f"{found[way]} {HEADLINE[way]}" for way in reversed(ORDER) if found[way]) or "none"


def headline(listing: Listing, plugin: str | None = None) -> str:
    """The one line a person came for: how the CLI shows the package's skills, and all it has."""
    mine, every, own = listing.of("package"), listing.entries, len(listing.of("cli"))
    where = f"{listing.engine} · {listing.model}" + (f" · plugin {plugin}" if plugin else "")
    also = f" (the CLI's own {own} included)" if own else ""
    return (f"{where}: of your {len(mine)} skill{'' if len(mine) == 1 else 's'}, {shown_as(mine)}; "
            f"of all {len(every)} installed{also}, {shown_as(every)}")


def lines(listing: Listing, plugin: str | None = None) -> list[str]:
    """The listing in words: the headline, size against budget, who takes it, then each of the
    package's skills."""
    mine, theirs = listing.of("package"), listing.of("neighbor")
    window = f" · context {listing.window:,} tokens" if listing.window else ""
    head = f"  {listing.engine} {listing.cli} · {listing.model}{window}"
    if listing.budget is None:
        size = f"listing {listing.used:,} {listing.unit}, no budget"
    else:
        over = " (over budget)" if listing.over else ""
        size = (f"listing {listing.used:,} of {listing.budget:,} {listing.unit}{over}: its own skills take "
                f"{listing.cli_used:,}, yours {sum(e.size for e in mine):,}, neighbours "
                f"{sum(e.size for e in theirs):,}")
    out = [headline(listing, plugin), head, f"  {size}", f"  rule: {listing.rule}"]
    out += [f"  note: {note}" for note in listing.notes]
    width = max([len(e.skill.name) for e in mine] + [5])
    unit = "tok" if listing.unit == "tokens" else "ch"
    out.append(f"  {'skill':<{width}}  {'always-on':>10}  {'on-invoke':>10}  shown")
    for e in sorted(mine, key=lambda e: e.skill.name):
        cut = f" ({e.description_shown:,} of {len(e.skill.description):,} characters)" \
            if e.shown == "truncated" else ""
        out.append(f"  {e.skill.name:<{width}}  {f'{e.size:,} {unit}':>10}  {f'{e.skill.body:,} ch':>10}  "
                   f"{SHOWN[e.shown]}{cut}")
    if theirs:
        counts = {k: sum(e.shown == k for e in theirs) for k in SHOWN}
        said = ", ".join(f"{n} {SHOWN[k].lower()}" for k, n in counts.items() if n)
        out.append(f"  neighbours: {len(theirs)} ({said})")
    out.append(f"  counted in {ENGINES[listing.engine].listing_unit}")
    return out


def as_json(plugin: str | None, listing: Listing) -> dict[str, Any]:
    return {
        "plugin": plugin, "engine": listing.engine, "cli": listing.cli, "model": listing.model,
        "context_window": listing.window, "budget": listing.budget, "unit": listing.unit,
        "used": listing.used, "headline": headline(listing, plugin),
        "shown": {"package": counts(listing.of("package")), "all": counts(listing.entries)},
        "cli_skills": listing.cli_used, "rule": listing.rule, "notes": listing.notes,
        "skills": [{"name": e.skill.name, "origin": e.skill.origin, "shown": e.shown, "always_on": e.size,
                    "on_invoke_chars": e.skill.body, "description_chars": len(e.skill.description),
                    "description_shown": e.description_shown, "file": e.skill.file, "line": e.skill.line}
                   for e in listing.entries if e.skill.origin != "cli"],
    }
