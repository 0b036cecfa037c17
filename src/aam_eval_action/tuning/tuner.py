"""The tuner: a description run through the real CLIs on a set of trigger prompts, recorded per
candidate (`<cassettes>/tune/<skill>/<candidate digest>/`), with what it spent."""

from __future__ import annotations

import io
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.render.console import neutralize_commands
from aam_eval_action.tuning.candidates import Candidate, Prompt


@dataclass(frozen=True)
class TuneArgs:
    package: Path
    skill: str
    engines: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    candidates: int = 4
    rounds: int = 3
    given: list[str] = field(default_factory=list)
    propose: bool = True
    max_usd: float | None = None
    replay: bool = False
    output: Path | None = None
    patch: Path | None = None
    plugins: list[str] | None = None
    suggest: str | None = None
    """`OWNER/REPO#N`: post the suggestion as a review comment on that pull request."""
    api_url: str = "https://api.github.com"
    token: str | None = None
    draft_test: int | None = None
    """Draft this many held-out test prompts at a time until the gate can show a gain."""


EXTRA_RUNS = 3
"""A prompt whose fire rate sits near the threshold runs this many times the suite's runs."""


class CapReached(Exception):
    """`max-usd` stopped the tuning: what was spent is said."""


@dataclass
class Tuner:
    args: TuneArgs
    loaded: Any
    pairs: list[tuple[str, str]]
    skills: dict[str, str]
    prompts: list[Prompt]
    spent: float = 0.0
    sessions: int = 0
    lines: list[str] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    routed: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)
    """(candidate digest, pair, set) → case → the skill its prompt went to."""
    drafted: list[dict[str, Any]] = field(default_factory=list)
    """The test cases `--draft-test` drafted on this run, as written."""

    def say(self, text: str) -> None:
        self.lines.append(text)
        print(neutralize_commands(text), flush=True)

    # --- running a description through the real CLIs ---

    def evaluate(self, text: str, which: list[str], engine: str, model: str) -> dict[str, str]:
        """Case name → the skill its prompt went to, with the target's description `text`."""
        key = (Candidate(text, "").digest, f"{engine} · {model}", ",".join(which))
        if key not in self.routed:
            self.routed[key] = self._evaluate(text, which, engine, model)
        return self.routed[key]

    def _evaluate(self, text: str, which: list[str], engine: str, model: str) -> dict[str, str]:
        chosen = [p for p in self.prompts if p.split in which]
        if not chosen:
            return {}
        report = self._run(text, [p.case for p in chosen], engine, model, None)
        routed = {c.name: c.routed_to or "none" for c in report.cases}
        # Extra runs only where a prompt's fire rate sits near the threshold: one run either way
        # would flip it. Elsewhere the suite's runs decide.
        threshold = self.loaded.config.triggers.threshold
        near = [
            c
            for c in report.cases
            if c.fire_rate is not None
            and 0 < c.fire_rate < 1
            and abs(c.fire_rate - threshold) <= 1 / max(len(c.attempts or [None]), 1) + 1e-9
        ]
        if near:
            runs = max(len(c.attempts or [None]) for c in near) * EXTRA_RUNS
            cases = [next(p.case for p in chosen if p.name == c.name) for c in near]
            again = self._run(text, cases, engine, model, runs)
            routed |= {c.name: c.routed_to or "none" for c in again.cases}
            rates = ", ".join(f"{c.name} {c.fire_rate:.0%}" for c in near)
            self.say(
                f"  extra runs on {engine} · {model}: {len(near)} prompt(s) near the threshold ({rates}) "
                f"ran {runs} times each"
            )
        return routed

    def _run(self, text: str, cases: list[str], engine: str, model: str, runs: int | None) -> Any:
        """The cases through the real CLI (or their recordings) with the target's description
        `text`; `runs`: that many runs each, in cassettes of their own."""
        from aam_eval_action.pipeline.suite import RunArgs, execute
        from aam_eval_action.render.console import Console
        from aam_eval_action.settings import Overrides

        layout = self.loaded.layout
        digest = Candidate(text, "").digest
        cassettes = (
            layout.evals_dir / self.loaded.config.cassettes / "tune" / self.args.skill / digest
        ).resolve()
        if runs is not None:
            cassettes = cassettes / f"runs-{runs}"
        with tempfile.TemporaryDirectory(prefix="aam-eval-tune-") as tmp:
            copy = Path(tmp) / layout.root.name
            shutil.copytree(layout.root, copy, symlinks=True, ignore=self._ignored)
            skill_md = copy / layout.skill_dirs[self.args.skill] / "SKILL.md"
            skill_md.write_text(
                with_description(skill_md.read_text(encoding="utf-8"), text), encoding="utf-8"
            )
            left = None if self.args.max_usd is None else max(self.args.max_usd - self.spent, 0.0)
            if left is not None and left <= 0 and not self.args.replay:
                raise CapReached(self._cap())
            overrides = Overrides(
                engine=engine,
                model=model,
                mode="replay" if self.args.replay else "auto",
                cassettes=cassettes,
                max_usd=left if not self.args.replay else None,
                sweep=(),
                self_check=False,
                repeat=runs,
            )
            run_args = RunArgs(
                package=copy,
                cases=cases,
                overrides=overrides,
                plugins=[self.loaded.plugin] if self.loaded.several else None,
            )
            report, _ = execute(run_args, Console(io.StringIO(), environ={}))
        if report is None:
            raise ConfigError(f"tune: no report for {engine}")
        self.sessions += sum(len(c.attempts or [None]) for c in report.cases if c.replay_kind == "live")
        self.spent += report.summary.spent_usd or report.summary.run_cost_usd or 0.0
        if report.summary.over_budget:
            raise CapReached(self._cap())
        missing = [c.name for c in report.cases if c.verdict == "ERROR" or c.routed_to is None]
        if missing:
            errors = "; ".join(f"{c.name}: {c.error}" for c in report.cases if c.name in missing)[:600]
            raise ConfigError(f"tune: {len(missing)} session(s) gave no routing on {engine} ({errors})")
        return report

    def _ignored(self, folder: str, names: list[str]) -> set[str]:
        """What the copy leaves out: git, recordings, reports, and tune's own output files."""
        outputs = {p.resolve() for p in (self.args.output, self.args.patch) if p is not None}
        return {
            n
            for n in names
            if n in (".git", "reports", "cassettes", "node_modules")
            or (Path(folder) / n).resolve() in outputs
        }

    def _cap(self) -> str:
        return (
            f"max-usd ${self.args.max_usd:.4g} stopped the tuning: spent ${self.spent:.4f} on "
            f"{self.sessions} session(s)"
        )

    # --- scores ---

    def scores(self, routed: dict[str, str], which: str) -> dict[str, Any]:
        chosen = [p for p in self.prompts if p.split == which and p.name in routed]
        target = self.args.skill
        right = [p for p in chosen if routed[p.name] == p.expected]
        mine = [p for p in chosen if p.expected == target]
        fired = [p for p in chosen if routed[p.name] == target]
        sibling = {}
        for name in sorted({p.expected for p in chosen} - {target, "none"}):
            theirs = [p for p in chosen if p.expected == name]
            sibling[name] = sum(routed[p.name] == name for p in theirs) / len(theirs)
        return {
            "prompts": len(chosen),
            "right": len(right),
            "recall": sum(routed[p.name] == target for p in mine) / len(mine) if mine else None,
            "precision": sum(p.expected == target for p in fired) / len(fired) if fired else None,
            "siblings": sibling,
        }


def with_description(text: str, description: str) -> str:
    """SKILL.md with its frontmatter's `description:` entry (and any lines beneath it) replaced by
    one line holding `description` (a double-quoted YAML string)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise ConfigError("SKILL.md has no frontmatter to put a description in")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise ConfigError("SKILL.md: no closing '---' line")
    start = next((i for i in range(1, end) if re.match(r"description\s*:", lines[i])), None)
    quoted = "description: " + json.dumps(description, ensure_ascii=False)
    if start is None:
        return "\n".join(lines[:end] + [quoted] + lines[end:])
    stop = start + 1
    while stop < end and (lines[stop].startswith((" ", "\t")) or not lines[stop].strip()):
        stop += 1
    return "\n".join(lines[:start] + [quoted] + lines[stop:])
