"""The final gate on the test prompts (paired, exact), the table, the patch, the JSON record and
the suggested change on a pull request."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from aam_eval_action.errors import EXIT_FAILED, EXIT_OK, ConfigError, UsageError
from aam_eval_action.tuning.candidates import Candidate
from aam_eval_action.tuning.search import summary
from aam_eval_action.tuning.stats import Paired, detectable
from aam_eval_action.tuning.tuner import TuneArgs, Tuner, with_description


def finish(t: Tuner, baseline: Candidate, best: Candidate | None) -> int:
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
        write_record(args, record)
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
    t.say(f"  characters: {len(baseline.text)} → {len(best.text)}; selection: {summary(best)}")
    if not shown:
        t.say(
            "no significant improvement: on the test prompts the interval of the improvement does not "
            "exclude no change on every engine; " + detectable(n_test)
        )
        record |= {"decision": "no significant improvement", "detectable": detectable(n_test)}
        write_record(args, record)
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
    write_record(args, record, patch)
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


def write_record(args: TuneArgs, record: dict[str, Any], patch: str | None = None) -> None:
    from aam_eval_action.fsutil import atomic_write

    if args.output:
        atomic_write(args.output, json.dumps(record, indent=2, sort_keys=True) + "\n", None)
    if args.patch and patch:
        atomic_write(args.patch, patch, None)
