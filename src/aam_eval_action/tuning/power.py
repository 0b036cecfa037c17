"""Power before spend: can the final gate show a gain with the test prompts the suite has?

The gate (`stats.py`) shows an improvement only when at least `least_moves()` test prompts go
from wrong to right with none going back (6 at the 95% level). So before any candidate is
tried, tune says how many test prompts the target gets wrong now, and the smallest gain the
gate could show; where even a perfect candidate could not pass (too few test prompts, or too
few of them wrong), it stops before spending on candidates. With `--draft-test N` it drafts N
held-out test prompts at a time instead, through `init`'s drafting (the skill and its
siblings, each prompt citing the skill's own text), recorded like init's drafts, written for a
person to review, and never shown to the proposer, until the gate can speak.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from aam_eval_action.tuning.candidates import Prompt
from aam_eval_action.tuning.stats import least_moves

if TYPE_CHECKING:
    from aam_eval_action.tuning.tuner import Tuner

DRAFT_ROUNDS = 3
"""Drafting rounds at most: each drafts N more prompts."""


def drafts_file(loaded: Any, skill: str) -> Any:
    """Where tune's drafted test prompts for `skill` are written: beside the suite's cases."""
    return loaded.cases_dir / f"{skill}-test-drafts.yaml"


def check(t: Tuner, baseline: str) -> str | None:
    """None when the gate can show a gain; else why not (said before any candidate's session).
    With `--draft-test`, drafts test prompts until it can, or says why it still cannot."""
    k = least_moves()
    n = sum(p.split == "test" for p in t.prompts)
    rounds = 0
    if n < k:
        t.say(f"power: the gate shows a gain only when at least {k} test prompts go from wrong to right with "
              f"none going back; the suite has {n}: even a perfect candidate could not pass it")
        if not t.args.draft_test:
            return ("cannot show: stopped before any session; tag more trigger cases split:test, or draft "
                    "held-out ones with --draft-test N")
    wrong = _wrong(t, baseline) if n else {}
    while not wrong or min(wrong.values()) < k:
        if wrong:
            _say_power(t, wrong, k)
        if not t.args.draft_test:
            return ("cannot show: even a perfect candidate could not pass the gate; stopped before any "
                    "candidate's session; tag more trigger cases split:test, or draft held-out ones with "
                    "--draft-test N")
        if rounds == DRAFT_ROUNDS:
            return (f"cannot show: after {rounds} drafting round(s) the baseline still gets fewer than {k} "
                    "test prompts wrong; review the drafts, and draft more (a larger --draft-test N)")
        rounds += 1
        if not _draft(t, rounds):
            return f"cannot show: drafting round {rounds} kept no new prompt"
        wrong = _wrong(t, baseline)
    _say_power(t, wrong, k)
    return None


def _wrong(t: Tuner, baseline: str) -> dict[str, int]:
    """Per engine · model, the test prompts the baseline gets wrong."""
    out = {}
    tests = [p for p in t.prompts if p.split == "test"]
    for engine, model in t.pairs:
        routed = t.evaluate(baseline, ["test"], engine, model)
        out[f"{engine} · {model}"] = sum(routed[p.name] != p.expected for p in tests)
    return out


def _say_power(t: Tuner, wrong: dict[str, int], k: int) -> None:
    n = sum(p.split == "test" for p in t.prompts)
    for pair, w in wrong.items():
        gain = f"the smallest gain it could show is {k} prompts ({k / n:.0%})" if w >= k else (
            "even a perfect candidate could not pass it")
        t.say(f"power on {pair}: the baseline gets {w} of {n} test prompts wrong; the gate needs at least "
              f"{k} to go from wrong to right with none going back: {gain}")


def _draft(t: Tuner, round_no: int) -> list[Prompt]:
    """One round of drafted test prompts, written beside the cases and added to the test set."""
    from aam_eval_action.drafting.cases import Draw, build, case_name
    from aam_eval_action.drafting.record import recorded_draft
    from aam_eval_action.drafting.request import Counts, DraftRefused, build_text
    from aam_eval_action.drafting.skills import read_skills
    from aam_eval_action.errors import ConfigError
    from aam_eval_action.fsutil import atomic_write
    from aam_eval_action.settings import Overrides, resolve, runner_environment

    args, loaded = t.args, t.loaded
    skill, want = args.skill, int(args.draft_test or 0)
    s = resolve(loaded, Overrides(engine=t.pairs[0][0], model=t.pairs[0][1]), runner_environment())
    provider, model = s.judge_provider, s.judge_model
    docs = {d.name: d for d in read_skills(loaded.layout)}
    target = docs[skill]
    sibs = [docs[n] for n in sorted({p.expected for p in t.prompts} - {skill, "none"}) if n in docs]
    positives = math.ceil(want / 2) if sibs else want
    near = math.ceil((want - positives) / len(sibs)) if sibs else 0
    path = s.cassettes / "tune" / skill / f"draft-test-{round_no}.yaml"
    redo = f"run `aam-eval tune --skill {skill} --draft-test {want}` with a key"
    try:
        text = build_text(target, sibs, Counts(positives, near, 0, 0))
        answer = recorded_draft(s, path, provider, model, text, args.replay,
                                {"skill": skill, "model": model, "for": "tune --draft-test"}, redo, auto=True)
    except DraftRefused as exc:
        raise ConfigError(f"--draft-test: {exc}") from None
    drafted = build(answer, Draw(model, target, sibs, positives, near, 0, 0))
    seen = {p.text.strip().lower() for p in t.prompts}
    added, kept = [], []
    counters: dict[str, int] = {}
    for case in drafted.triggers:
        kind, prompt = case["draft"]["kind"], case["input"]["prompt"]
        if kind == "canary" or prompt.strip().lower() in seen:
            continue
        seen.add(prompt.strip().lower())
        counters[kind] = counters.get(kind, 0) + 1
        case["name"] = case_name(f"{skill}-test{round_no}", kind, counters[kind])
        case["tags"] = [x for x in case["tags"] if not x.startswith("split:")] + ["split:test", "tune-test"]
        expected = skill if kind == "positive" else case["expected"].get("expected-skill", "none")
        kept.append(case)
        added.append(Prompt(loaded.qualified(case["name"]), case["name"], prompt, expected, "test"))
    for reason in drafted.dropped:
        t.say(f"  drafting round {round_no}: dropped {reason}")
    if not added:
        return []
    t.drafted += kept
    where = drafts_file(loaded, skill)
    head = [
        f"Drafted by `aam-eval tune --draft-test` with {model} from {target.path} "
        f"(sha256 {target.sha256[:12]}): held-out test prompts for {skill}; tune's proposer never sees them.",
        "Not reviewed yet: read each case, fix or delete it, then set `reviewed: true` in its `draft`.",
        f"Drafted again offline from the recordings: aam-eval tune --skill {skill} --draft-test {want} "
        "--replay",
    ]
    where.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(where, _signed(head, t.drafted), None)
    t.prompts.extend(added)
    t.routed = {key: routed for key, routed in t.routed.items() if "test" not in key[2].split(",")}
    kinds = {k: sum(c["draft"]["kind"] == k for c in kept) for k in ("positive", "near-miss")}
    t.say(f"drafted {len(added)} held-out test prompt(s) (round {round_no}, {model}): {kinds['positive']} "
          f"for {skill}, {kinds['near-miss']} near misses of {', '.join(d.name for d in sibs) or 'none'}; "
          f"written to {where.relative_to(loaded.layout.root).as_posix()}, to review")
    return added


SIGNED = "Unedited drafts: sha256 "


def _signed(head: list[str], cases: list[dict[str, Any]]) -> str:
    """The drafts file, its last header line the digest of the cases as drafted: a later
    `--draft-test` redrafts the file only while nobody has edited it."""
    import hashlib

    from aam_eval_action.drafting.cases import file_text
    from aam_eval_action.fsutil import dump_yaml

    digest = hashlib.sha256(dump_yaml(cases, sort_keys=False).encode()).hexdigest()
    return file_text([*head, SIGNED + digest], cases)


def unedited(text: str) -> bool:
    """Whether a drafts file is as tune wrote it (its cases match the digest in its header)."""
    import hashlib

    lines = text.splitlines(keepends=True)
    head = [line for line in lines if line.startswith("# ")]
    signed = [line[2 + len(SIGNED):].strip() for line in head if line.startswith("# " + SIGNED)]
    body = "".join(lines[len(head):])
    return bool(signed) and hashlib.sha256(body.encode()).hexdigest() == signed[0]
