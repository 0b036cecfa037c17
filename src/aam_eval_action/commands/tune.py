"""`aam-eval tune`: propose a better description for a skill, and prove it on held-out prompts.

Every session is a real CLI's, recorded: each candidate's sessions in cassettes of their own
(`<cassettes>/tune/<skill>/<candidate digest>/`), the proposer's calls in
`<cassettes>/tune/<skill>/round-<n>.yaml`. `tune --replay` reads them back: the same candidates,
numbers and decision, offline. The result is a suggestion and a patch, never a commit.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.errors import EXIT_FAILED, EXIT_OK, ConfigError, UsageError
from aam_eval_action.render.console import neutralize_commands
from aam_eval_action.tuning import power
from aam_eval_action.tuning.candidates import Candidate, Prompt, handoffs, lint, proposals, split
from aam_eval_action.tuning.stats import Paired, detectable


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
        from aam_eval_action.commands.run import RunArgs, execute
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


def tune(args: TuneArgs) -> int:
    from aam_eval_action.catalog.installed import read_skill
    from aam_eval_action.loader import load_repo
    from aam_eval_action.pipeline.checks import trigger_expectation
    from aam_eval_action.settings import Overrides, resolve_matrix, runner_environment

    repo = load_repo(args.package, args.plugins)
    owners = [p for p in repo.packages if args.skill in p.layout.skill_dirs]
    if not owners:
        known = sorted({s for p in repo.packages for s in p.layout.skills()})
        raise UsageError(f"--skill {args.skill}: no such skill (skills: {', '.join(known) or 'none'})")
    loaded = owners[0]
    layout = loaded.layout
    overrides = Overrides(engine=",".join(args.engines) or None, model=",".join(args.models) or None)
    runs = resolve_matrix(loaded, overrides, runner_environment())
    pairs = [(s.engine, s.model) for s in runs]
    skills = {
        name: read_skill(layout.skill_dir(name), name, "package", layout.skill_dirs[name]).description
        for name in layout.skills()
    }
    found = []
    drafts = _drafts_to_redo(args, loaded)
    for lc in loaded.cases:
        if lc.file == drafts:  # drafted again below, the same from their recording
            continue
        should = trigger_expectation(lc.case.expected)
        if should is None or not lc.case.target:
            continue
        target = lc.case.target.removeprefix("skill:")
        expected = target if should else (lc.case.expected.expected_skill or "none")
        tag = next(
            (
                t
                for t in lc.case.tags
                if t in ("split:train", "split:select", "split:selection", "split:validation", "split:test")
            ),
            None,
        )
        from aam_eval_action.tuning.candidates import SPLIT_TAGS

        found.append(
            (
                loaded.qualified(lc.case.name),
                lc.case.name,
                lc.case.input.prompt,
                expected,
                SPLIT_TAGS.get(tag) if tag else None,
            )
        )
    if not any(e == args.skill for *_, e, _ in found):
        raise UsageError(
            f"--skill {args.skill}: no trigger case belongs to it; `aam-eval init --skill "
            f"{args.skill}` drafts some"
        )
    prompts, note, to_store = split(found)
    t = Tuner(args, loaded, pairs, skills, prompts)
    if to_store:
        _keep_split(loaded, prompts)
    if to_store or (loaded.stored_split and all(p.name in loaded.stored_split for p in prompts)):
        note = _kept_note(loaded, prompts)
    baseline = Candidate(skills[args.skill], "baseline")
    counts = {s: sum(p.split == s for p in prompts) for s in ("train", "select", "test")}
    t.say(
        f"tune {args.skill}: {len(prompts)} trigger prompts (train {counts['train']}, selection "
        f"{counts['select']}, test {counts['test']}) on {', '.join(f'{e} · {m}' for e, m in pairs)}"
    )
    if note:
        t.say(f"  note: {note}")
    if not counts["select"]:
        raise UsageError(
            "tune needs selection prompts: tag more trigger cases split:select (or split:train, to carve "
            "them from), or draft more with `aam-eval init`"
        )
    sessions = len(pairs) * (
        len(prompts) + counts["test"]
        + (counts["select"] + counts["train"]) * (len(args.given) + args.candidates * args.rounds)
    )
    said = f"  at most about {sessions} session(s) (each a trigger prompt's runs)"
    t.say(said + _estimate(runs, sessions, args))
    try:
        cannot = power.check(t, baseline.text)
        if cannot is not None:
            t.say(cannot)
            _write(args, {"skill": args.skill, "decision": "cannot show", "reason": cannot,
                          "spent_usd": t.spent, "split": {p.name: p.split for p in t.prompts}})
            return EXIT_OK
        result = _search(t, baseline)
    except CapReached as stop:
        t.say(f"STOPPED: {stop}")
        _write(args, {"skill": args.skill, "decision": "stopped", "reason": str(stop), "spent_usd": t.spent})
        return EXIT_FAILED
    return _finish(t, baseline, result)


TRIGGER_SESSION_TOKENS = (20_000, 500)
"""A trigger session's input and output tokens, for the estimate up front (a listing, a prompt,
one skill loaded): what the scripted sessions of the test suite report, rounded up."""


def _estimate(runs: list[Any], sessions: int, args: TuneArgs) -> str:
    """The cost estimate said before anything runs: the sessions at each model's price."""
    from aam_eval_action.pricing import price_of, tokens_cost
    from aam_eval_action.providers import provider_for_model
    from aam_eval_action.session import Usage

    usage = Usage(input_tokens=TRIGGER_SESSION_TOKENS[0], output_tokens=TRIGGER_SESSION_TOKENS[1])
    each = []
    for s in runs:
        price = price_of(s.model, s.config.prices)
        if price is None:
            return f"; {s.model} has no known price, so no estimate" + (
                ", and max-usd cannot hold it" if args.max_usd is not None else ""
            )
        each.append(tokens_cost(usage, price, provider_for_model(s.model, "anthropic")))
    usd = sessions / max(len(runs), 1) * sum(each) * max(s.trigger_runs for s in runs)
    said = f", estimated at most ${usd:.2f} (a trigger session's tokens at each model's price)"
    if args.max_usd is not None:
        said += f"; held to max-usd ${args.max_usd:.4g}" + (
            ": the cap will stop it before the end" if usd > args.max_usd else ""
        )
    return said


def _drafts_to_redo(args: TuneArgs, loaded: Any) -> str | None:
    """With `--draft-test`, the file of an earlier run's drafted test prompts (its cases are
    drafted again, from the recording): refused when a person has edited it."""
    path = power.drafts_file(loaded, args.skill)
    if not args.draft_test or not path.is_file():
        return None
    rel = path.relative_to(loaded.layout.root).as_posix()
    if not power.unedited(path.read_text(encoding="utf-8")):
        raise UsageError(f"{rel} was edited after tune drafted it (reviewed?): run without --draft-test to "
                         "use its prompts as they are, or delete it to draft again")
    return str(rel)


def _keep_split(loaded: Any, prompts: list[Prompt]) -> None:
    """The split tune made, kept beside the cases (`splits.py`): the case files are left as they
    are, whichever tool wrote them and however many cases each holds."""
    from aam_eval_action import splits
    from aam_eval_action.fsutil import atomic_write
    from aam_eval_action.tuning.candidates import SEED

    path = splits.path_of(loaded.layout.evals_dir)
    old = splits.read(path, path.name) if path.is_file() else {}
    atomic_write(path, splits.text_of(old | {p.name: p.split for p in prompts}, SEED), None)


def _kept_note(loaded: Any, prompts: list[Prompt]) -> str:
    """The same words whether the split was made on this run or read back on a later one, so a
    replay prints what the live run printed."""
    from aam_eval_action import splits
    from aam_eval_action.tuning.candidates import SEED

    counts = {s: sum(p.split == s for p in prompts) for s in ("train", "select", "test")}
    path = splits.path_of(loaded.layout.evals_dir)
    rel = path.relative_to(loaded.layout.root).as_posix()
    return (f"the suite has no split: tags: tune's split, stratified by the skill each prompt belongs to "
            f"(seed {SEED}): train {counts['train']}, selection {counts['select']}, test {counts['test']}, "
            f"kept in {rel} for every later run: review and commit it (a case's own split: tag wins)")


def _search(t: Tuner, baseline: Candidate) -> Candidate | None:
    """Rounds of proposals, each linted and then scored on the selection prompts; the best that
    beats the baseline there without a veto, or None."""
    args = t.args
    train_text = [p.text for p in t.prompts if p.split == "train"]
    engines = [(e, m) for e, m in t.pairs]
    for engine, model in t.pairs:
        baseline.scores[f"{engine} · {model}"] = t.scores(
            t.evaluate(baseline.text, ["select"], engine, model), "select"
        )
    best: Candidate | None = None
    tried: list[Candidate] = [Candidate(text, "yours") for text in args.given]
    current = baseline
    for round_no in range(1, args.rounds + 1):
        routed = {}
        for engine, model in t.pairs:
            routed.update(
                {f"{engine}\0{k}": v for k, v in t.evaluate(current.text, ["train"], engine, model).items()}
            )
        missed, stolen = _failures(t, routed)
        pool = list(tried) if round_no == 1 else []
        tried = []
        if missed or stolen:
            counts: dict[str, int] = {}
            for _, sibling in stolen:
                counts[sibling] = counts.get(sibling, 0) + 1
            pool += handoffs(args.skill, current.text, counts, t.skills)
            if args.propose:
                pool += _propose(t, current.text, missed, stolen, round_no)
        if not pool:
            t.say(f"  round {round_no}: no train failure left and no candidate to try")
            break
        for cand in pool:
            cand.refused = lint(cand.text, args.skill, baseline.text, train_text, t.skills, engines)
            if cand.refused:
                t.say(f"  refused ({cand.source}): {cand.refused}")
                t.candidates.append(cand)
                continue
            for engine, model in t.pairs:
                routed_sel = t.evaluate(cand.text, ["select"], engine, model)
                cand.scores[f"{engine} · {model}"] = t.scores(routed_sel, "select")
                t.evaluate(cand.text, ["train"], engine, model)  # for the veto: every prompt but a test one
                t.evaluate(baseline.text, ["train"], engine, model)
            cand.vetoed = _veto(t, baseline, cand)
            t.candidates.append(cand)
            shown = _summary(cand)
            t.say(
                f"  {'vetoed' if cand.vetoed else 'scored'} ({cand.source}, {len(cand.text)} characters): "
                f"{shown}" + (f"; {cand.vetoed}" if cand.vetoed else "")
            )
        ranked = sorted((c for c in t.candidates if not c.refused and not c.vetoed), key=_rank, reverse=True)
        if ranked and _rank(ranked[0]) > _rank(best or baseline):
            best = ranked[0]
            current = best
        else:
            break
    return best


def _failures(t: Tuner, routed: dict[str, str]) -> tuple[list[str], list[tuple[str, str]]]:
    target = t.args.skill
    missed, stolen = [], []
    for key, went in sorted(routed.items()):
        name = key.split("\0", 1)[1]
        prompt = next(p for p in t.prompts if p.name == name)
        if prompt.expected == target and went != target and prompt.text not in missed:
            missed.append(prompt.text)
        elif (
            prompt.expected not in (target, "none")
            and went == target
            and (prompt.text, prompt.expected) not in stolen
        ):
            stolen.append((prompt.text, prompt.expected))
    return missed, stolen


def _propose(
    t: Tuner, current: str, missed: list[str], stolen: list[tuple[str, str]], round_no: int
) -> list[Candidate]:
    """One structured call through the judge's SDK, recorded (or played back with --replay)."""
    from aam_eval_action.drafting.record import call_model
    from aam_eval_action.fsutil import runner_checkout
    from aam_eval_action.replay.judge_cassette import JudgeCassette
    from aam_eval_action.settings import Overrides, resolve, runner_environment
    from aam_eval_action.tuning.candidates import request_params, request_text

    s = resolve(t.loaded, Overrides(engine=t.pairs[0][0], model=t.pairs[0][1]), runner_environment())
    provider, model = s.judge_provider, s.judge_model
    text = request_text(t.args.skill, current, t.skills, missed, stolen, t.args.candidates)
    params = request_params(provider, model, text)
    path = s.cassettes / "tune" / t.args.skill / f"round-{round_no}.yaml"
    mode = "replay" if t.args.replay else "record"
    try:
        jc = JudgeCassette(
            path,
            mode,
            provider,
            s.redactor().text,
            s.cassettes,
            s.network,
            checkout=runner_checkout(s.runner_env),
        )
    except Exception as exc:
        raise ConfigError(
            f"{path}: no usable recording ({str(exc)[:200]}); run tune without --replay"
        ) from None
    if t.args.replay:
        body = jc.play_recorded(
            provider, "/v1/messages" if provider == "anthropic" else "/v1/responses", params
        )
        if body is None:
            raise ConfigError(
                f"{path} has no recording of this request: the skill, its siblings or the train "
                "failures changed; run tune without --replay"
            )
    else:
        if t.args.max_usd is not None and t.spent >= t.args.max_usd:
            raise CapReached(t._cap())
        from aam_eval_action.drafting.request import DraftRefused

        try:
            body = call_model(s, provider, params, jc)
        except DraftRefused as exc:
            raise ConfigError(f"tune: the proposer's call failed: {exc}") from None
        jc.save({"skill": t.args.skill, "round": round_no, "model": model})
    found = proposals(provider, body, round_no, t.args.candidates)
    t.say(
        f"  round {round_no}: {len(missed)} missed and {len(stolen)} stolen train prompt(s); "
        f"{len(found)} proposal(s) from {model}"
    )
    return found


def _not_test(t: Tuner, cand: Candidate, pair: str) -> dict[str, str]:
    """Where every prompt that is not a test prompt went (train and selection) with `cand`."""
    return {**t.routed.get((cand.digest, pair, "train"), {}), **t.routed[(cand.digest, pair, "select")]}


def _veto(t: Tuner, baseline: Candidate, cand: Candidate) -> str | None:
    """A sibling's prompt taken by the skill, a sibling losing more than one prompt, or any engine
    getting fewer prompts right."""
    target = t.args.skill
    for pair, mine in cand.scores.items():
        base = baseline.scores[pair]
        before_routed, after_routed = _not_test(t, baseline, pair), _not_test(t, cand, pair)
        taken = [
            p
            for p in t.prompts
            if p.split in ("select", "train")
            and p.expected not in (target, "none")
            and before_routed.get(p.name) == p.expected
            and after_routed.get(p.name) == target
        ]
        if taken:
            first = min(taken, key=lambda p: p.name)
            return (
                f"it takes {first.expected}'s prompt {first.name} on {pair} ({len(taken)} of the train and "
                f"selection prompts, e.g. {first.text[:80]!r})"
            )
        for sibling, recall in mine["siblings"].items():
            before = base["siblings"].get(sibling)
            theirs = sum(p.expected == sibling for p in t.prompts if p.split == "select")
            if before is not None and theirs and before - recall > 1 / theirs + 1e-9:
                return (
                    f"{sibling} loses prompts on {pair}: its recall {before:.0%} → {recall:.0%} (more than "
                    "one prompt)"
                )
        if mine["right"] < base["right"]:
            return f"fewer prompts right on {pair} ({base['right']} → {mine['right']} of {mine['prompts']})"
    return None


def _rank(c: Candidate) -> tuple[float, float, int, int]:
    """Target recall, then precision, then prompts right (the worst engine), then shorter."""
    if not c.scores:
        return (-1.0, -1.0, -1, 0)
    values = list(c.scores.values())
    return (
        min(v["recall"] or 0 for v in values),
        min(v["precision"] or 0 for v in values),
        min(v["right"] for v in values),
        -len(c.text),
    )


def _summary(c: Candidate) -> str:
    parts = []
    for pair, v in c.scores.items():
        recall = "n/a" if v["recall"] is None else f"{v['recall']:.0%}"
        precision = "n/a" if v["precision"] is None else f"{v['precision']:.0%}"
        parts.append(f"{pair}: recall {recall}, precision {precision}, {v['right']}/{v['prompts']} right")
    return "; ".join(parts)


def _finish(t: Tuner, baseline: Candidate, best: Candidate | None) -> int:
    """The final gate on the test prompts, the table, the patch and the JSON."""
    from aam_eval_action.stats import wilson

    args = t.args
    n_test = sum(p.split == "test" for p in t.prompts)
    record: dict[str, Any] = {
        "skill": args.skill,
        "baseline": baseline.text,
        "spent_usd": round(t.spent, 6),
        "split": {p.name: p.split for p in t.prompts},
        "candidates": [
            {"text": c.text, "source": c.source, "refused": c.refused, "vetoed": c.vetoed, "scores": c.scores}
            for c in t.candidates
        ],
    }
    if best is None:
        t.say(
            "no significant improvement: no candidate beat the baseline on the selection prompts "
            "without a veto; " + detectable(n_test)
        )
        record |= {"decision": "no significant improvement", "detectable": detectable(n_test)}
        _write(args, record)
        return EXIT_OK
    gates: dict[str, dict[str, Any]] = {}
    verdicts: list[Paired] = []
    t.say(f"final gate on {n_test} test prompt(s), paired by prompt (McNemar, exact 95% interval):")
    t.say(f"  {'engine · model':<32} {'baseline':>16} {'candidate':>16}  improvement (95% CI)")
    for engine, model in t.pairs:
        base = t.evaluate(baseline.text, ["test"], engine, model)
        cand = t.evaluate(best.text, ["test"], engine, model)
        names = [p.name for p in t.prompts if p.split == "test"]
        expected = {p.name: p.expected for p in t.prompts}
        right_b = {n: base[n] == expected[n] for n in names}
        right_c = {n: cand[n] == expected[n] for n in names}
        paired = Paired(
            len(names),
            sum(right_c[n] and not right_b[n] for n in names),
            sum(right_b[n] and not right_c[n] for n in names),
        )
        verdicts.append(paired)
        lo, hi = paired.interval
        pair = f"{engine} · {model}"
        gates[pair] = {
            "n": paired.n,
            "better": paired.better,
            "worse": paired.worse,
            "interval": [lo, hi],
            "p_value": paired.p_value,
            "baseline_right": sum(right_b.values()),
            "candidate_right": sum(right_c.values()),
        }
        cb, cc = wilson(sum(right_b.values()), len(names)), wilson(sum(right_c.values()), len(names))
        t.say(
            f"  {pair:<32} {sum(right_b.values()):>3}/{len(names)} ({cb[0]:.0%}–{cb[1]:.0%}) "
            f"{sum(right_c.values()):>3}/{len(names)} ({cc[0]:.0%}–{cc[1]:.0%})  "
            f"{paired.improvement:+.0%} ({lo:+.0%} to {hi:+.0%}), {paired.better} better, "
            f"{paired.worse} worse"
        )
    shown = all(p.shown for p in verdicts)
    record |= {"candidate": best.text, "source": best.source, "gate": gates}
    t.say(f"  characters: {len(baseline.text)} → {len(best.text)}; selection: {_summary(best)}")
    if not shown:
        t.say(
            "no significant improvement: on the test prompts the interval of the improvement does not "
            "exclude no change on every engine; " + detectable(n_test)
        )
        record |= {"decision": "no significant improvement", "detectable": detectable(n_test)}
        _write(args, record)
        return EXIT_OK
    patch = _patch(t, best.text)
    t.say(f"suggested ({best.source}): {best.text}")
    t.say(
        "a suggestion, not a change: review it, then apply the patch"
        + (f" ({args.patch})" if args.patch else ":")
    )
    if not args.patch:
        for line in patch.splitlines():
            t.say(line)
    record |= {"decision": "suggested", "patch": patch}
    _write(args, record, patch)
    if args.suggest:
        return _suggest(t, best, gates)
    return EXIT_OK


def _suggest(t: Tuner, best: Candidate, gates: dict[str, dict[str, Any]]) -> int:
    """The suggestion as a review comment on the pull request, on the `description:` line(s)."""
    from aam_eval_action.github.comments import post_suggestion

    args = t.args
    found = re.fullmatch(r"([\w.-]+/[\w.-]+)#(\d+)", args.suggest or "")
    if not found:
        raise UsageError(f"--suggest {args.suggest!r}: write OWNER/REPO#NUMBER")
    layout = t.loaded.layout
    skill_md = layout.skill_dir(args.skill) / "SKILL.md"
    start, end = description_lines(skill_md.read_text(encoding="utf-8"))
    top = next((p for p in [layout.root, *layout.root.parents] if (p / ".git").exists()), layout.root)
    path = skill_md.resolve().relative_to(top.resolve()).as_posix()
    from aam_eval_action.render.comment import md

    rows = "\n".join(
        f"| {md(pair)} | {g['baseline_right']}/{g['n']} | {g['candidate_right']}/{g['n']} | "
        f"{g['interval'][0]:+.0%} to {g['interval'][1]:+.0%} |"
        for pair, g in gates.items()
    )
    body = (
        f"**`aam-eval tune` suggests a description for {md(args.skill, 80)}**: on {len(gates)} "
        "engine(s), the held-out test prompts reach the right skill more often, and the 95% interval of "
        "the improvement is above 0 on each (paired by prompt, McNemar exact).\n\n"
        "| Engine · model | Baseline right | Candidate right | Improvement (95% CI) |\n"
        "| --- | --- | --- | --- |\n"
        f"{rows}\n\nA suggestion, not a change: commit it if it reads right to you."
    )
    result = post_suggestion(
        api_url=args.api_url,
        token=args.token or "",
        repository=found.group(1),
        pr_number=int(found.group(2)),
        path=path,
        line=end,
        start_line=start,
        new_line="description: " + json.dumps(best.text, ensure_ascii=False),
        body=body,
    )
    if result.warning:
        t.say(f"warning: {result.warning}")
        return EXIT_FAILED
    t.say(f"suggestion posted on {args.suggest}: {result.url}")
    return EXIT_OK


def description_lines(text: str) -> tuple[int, int]:
    """The first and last line (1-based) of a SKILL.md's `description:` entry."""
    lines = text.split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), len(lines))
    start = next((i for i in range(1, end) if re.match(r"description\s*:", lines[i])), None)
    if start is None:
        raise ConfigError("SKILL.md has no description line to suggest on")
    stop = start + 1
    while stop < end and (lines[stop].startswith((" ", "\t")) or not lines[stop].strip()):
        stop += 1
    return start + 1, stop


def _patch(t: Tuner, text: str) -> str:
    layout = t.loaded.layout
    rel = f"{layout.skill_dirs[t.args.skill]}/SKILL.md"
    old = (layout.root / rel).read_text(encoding="utf-8")
    new = with_description(old, text)
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
        )
    )


def _write(args: TuneArgs, record: dict[str, Any], patch: str | None = None) -> None:
    from aam_eval_action.fsutil import atomic_write

    if args.output:
        atomic_write(args.output, json.dumps(record, indent=2, sort_keys=True) + "\n", None)
    if args.patch and patch:
        atomic_write(args.patch, patch, None)
