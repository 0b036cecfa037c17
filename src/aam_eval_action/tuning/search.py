"""The search: rounds of proposals, each linted, then scored on the train and selection prompts,
vetoed where it takes a sibling's prompt, and ranked; the proposer's calls recorded in
`<cassettes>/tune/<skill>/round-<n>.yaml`."""

from __future__ import annotations

from aam_eval_action.errors import ConfigError
from aam_eval_action.tuning.candidates import Candidate, handoffs, lint, proposals
from aam_eval_action.tuning.tuner import CapReached, Tuner


def search(t: Tuner, baseline: Candidate) -> Candidate | None:
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
            shown = summary(cand)
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


def summary(c: Candidate) -> str:
    parts = []
    for pair, v in c.scores.items():
        recall = "n/a" if v["recall"] is None else f"{v['recall']:.0%}"
        precision = "n/a" if v["precision"] is None else f"{v['precision']:.0%}"
        parts.append(f"{pair}: recall {recall}, precision {precision}, {v['right']}/{v['prompts']} right")
    return "; ".join(parts)
