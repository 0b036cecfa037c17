"""`aam-eval tune`: propose a better description for a skill, and prove it on held-out prompts.

Every session is a real CLI's, recorded: each candidate's sessions in cassettes of their own
(`<cassettes>/tune/<skill>/<candidate digest>/`), the proposer's calls in
`<cassettes>/tune/<skill>/round-<n>.yaml`. `tune --replay` reads them back: the same candidates,
numbers and decision, offline. The result is a suggestion and a patch, never a commit.
"""

from __future__ import annotations

from typing import Any

from aam_eval_action.errors import EXIT_FAILED, EXIT_OK, UsageError
from aam_eval_action.tuning import power
from aam_eval_action.tuning.candidates import Candidate, Prompt, split
from aam_eval_action.tuning.gate import finish, write_record
from aam_eval_action.tuning.search import search
from aam_eval_action.tuning.tuner import CapReached, TuneArgs, Tuner

__all__ = ["TuneArgs", "tune"]


def tune(args: TuneArgs) -> int:
    from aam_eval_action.catalog.installed import read_skill
    from aam_eval_action.loader import load_repo
    from aam_eval_action.settings import Overrides, resolve_matrix, runner_environment
    from aam_eval_action.spec import trigger_expectation

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
            write_record(args, {"skill": args.skill, "decision": "cannot show", "reason": cannot,
                          "spent_usd": t.spent, "split": {p.name: p.split for p in t.prompts}})
            return EXIT_OK
        result = search(t, baseline)
    except CapReached as stop:
        t.say(f"STOPPED: {stop}")
        write_record(args, {"skill": args.skill, "decision": "stopped", "reason": str(stop),
                            "spent_usd": t.spent})
        return EXIT_FAILED
    return finish(t, baseline, result)


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
