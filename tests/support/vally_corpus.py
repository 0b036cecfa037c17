"""The vendored Vally corpus (tests/fixtures/vally-corpus), read as a user's run reads it, and the
table docs/vally.md keeps of it.

    python tests/support/vally_corpus.py     # print the table (paste it between the markers)
"""

from __future__ import annotations

import functools
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fixtures/vally-corpus"
BEGIN, END = "<!-- vally-corpus-table: begin -->", "<!-- vally-corpus-table: end -->"


@dataclass
class RepoReading:
    name: str
    repository: str
    commit: str
    specs: int
    stimuli: list[str]
    refused: dict[str, str]
    """Spec file → why it was refused."""
    unseen: dict[str, str]
    """A YAML file with `stimuli` that Vally's discovery does not find → why."""
    suites: dict[str, int]
    """Suite → the stimuli it selects."""
    config_problems: list[str]
    experiments: str
    """Each experiment file: the stimuli it runs with and without their skills, or why none."""


def repos() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if (p / "SOURCE.json").is_file())


@functools.cache
def read(repo: Path) -> RepoReading:
    import yaml

    from aam_eval_action.vally.layout import read as read_layout
    from aam_eval_action.vally.project import read_project

    layout = read_layout(repo)
    project = read_project(repo, layout.skill_dirs)
    source = json.loads((repo / "SOURCE.json").read_text())
    found = {f.rel for f in project.files}
    unseen: dict[str, str] = {}
    names = {n for c in project.configs for n in c.names}
    for path in sorted(repo.rglob("*.y*ml")):
        rel = path.relative_to(repo).as_posix()
        if rel in found or path.name == ".vally.yaml":
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and "stimuli" in data:
            unseen[rel] = _why_unseen(project, rel, names)
    return RepoReading(
        name=repo.name,
        repository=source["repository"],
        commit=source["commit"][:12],
        specs=len(project.files),
        stimuli=[s.item_id for s in project.stimuli()],
        refused={f.rel: f.error or "" for f in project.files if f.error},
        unseen=unseen,
        suites={n: len(project.selected(n)) for n in project.suites()},
        config_problems=[_short(p) for p in project.problems],
        experiments="<br>".join(
            f"`{ex.rel}`: "
            + (
                f"not a without/with pair: {ex.why_not}"
                if ex.why_not
                else f"{sum(s.experiment == ex.rel for s in project.stimuli())} stimuli with and without "
                "their skills"
            )
            for ex in project.experiments
        ),
    )


def _why_unseen(project: object, rel: str, names: set[str]) -> str:
    from aam_eval_action.vally import config as vally_config

    configs = project.configs  # type: ignore[attr-defined]
    owner = vally_config.owner(configs, rel)
    name = rel.rsplit("/", 1)[-1]
    inside = any(re.match(_fn(owner.under(e.rstrip("/"))) + "/", rel) for e in owner.evals)
    if not inside:
        return f"outside paths.evals ({', '.join(owner.evals)}) and named by no experiment"
    if not any(re.fullmatch(_fn(n), name) for n in owner.names):
        return f"name not in evalFilenames ({', '.join(owner.names)})"
    return "under a config that could not be read"


def _fn(pattern: str) -> str:
    return re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")


def _short(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= 160 else text[:157] + "..."


def _reason(error: str) -> str:
    """A refusal's rule, without the file and line (which the test shows in full)."""
    text = re.sub(r"^[^:]+:\d+: ", "", error)
    text = re.sub(r"^[\w\[\].-]+: ", "", text)
    return text


def table() -> str:
    lines = [
        "| Repository | Commit | Specs read | Stimuli listed | Specs refused, why | Not discovered by Vally, why | "
        "Suites: stimuli selected | Experiments |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for repo in repos():
        r = read(repo)
        refused = (
            "<br>".join(f"`{rel}`: {_cell(_short(_reason(why)))}" for rel, why in r.refused.items()) or "none"
        )
        if r.config_problems:
            refused = "<br>".join([*(f"config: {_cell(p)}" for p in r.config_problems), refused])
        reasons: dict[str, int] = {}
        for why in r.unseen.values():
            reasons[why] = reasons.get(why, 0) + 1
        unseen = "<br>".join(f"{n}: {_cell(w)}" for w, n in sorted(reasons.items())) or "none"
        suites = ", ".join(f"{_cell(n)} {c}" for n, c in r.suites.items()) or "none"
        lines.append(
            f"| {r.repository} | `{r.commit}` | {r.specs - len(r.refused)} of {r.specs} | "
            f"{len(r.stimuli)} | {refused} | {unseen} | {suites} | {_cell(r.experiments) or 'none'} |"
        )
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    print(table())
