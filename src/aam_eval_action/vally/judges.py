"""Vally's LLM judges: `prompt` and `panel`, asked of this run's judge; `pairwise` shown, not graded."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence

from aam_eval_action.pipeline.checks import Check
from aam_eval_action.pipeline.plugin_eval import RunInputs, elide
from aam_eval_action.session import Session, ToolCall
from aam_eval_action.vally.grader_kit import Refused, compact_json, option, result, strings, view
from aam_eval_action.vally.grader_model import VallyGrader

# --- LLM judges ---

SCALES = {"binary": 1, "scale_1_5": 5, "scale_1_10": 10}
DEFAULT_RUBRIC = "The agent completed the task it was given correctly and completely."
SHOWN_CALLS = 20
NO_EVIDENCE = "no evidence for the judge: the agent produced no output and called no tool"
ARGS_SHOWN = 300
SCORE_LINE = re.compile(
    r"^[\s>*_#`-]*(?:final\s+)?score\s*[*_`]*\s*[:=]\s*[*_`]*\s*"
    r"(pass|fail|\d+(?:\.\d+)?)\b",
    re.I | re.M,
)
"""The reply's score line: `SCORE: 4`, and markdown around it (`**Score:** 4`)."""
STAMPED = re.compile(r"/[^\s\"'`]*?/aam-eval-[^/\s\"'`]*/(workspace|home)")
"""A path into this run's temp workspace: stamped afresh each run, so shown as `<workspace>`."""


def _scoring(grader: VallyGrader) -> tuple[str, float]:
    scoring = str(grader.options.get("scoring", "scale_1_5"))
    if scoring not in SCALES:
        raise ValueError(f"{grader.type}: `scoring` is binary, scale_1_5 or scale_1_10, not {scoring!r}")
    threshold = grader.options.get("threshold", 0.5)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValueError(f"{grader.type}: `threshold` must be a number in [0, 1], not {threshold!r}")
    return scoring, float(threshold)


def _timeline(calls: Sequence[ToolCall]) -> str:
    """The tool calls, one a line (name, compact arguments, failed or not; results left out, as
    they can differ between runs), the first and last 20 past 40."""

    def line(i: int, call: ToolCall) -> str:
        args = STAMPED.sub(r"<\1>", compact_json(call.input))
        args = args if len(args) <= ARGS_SHOWN else args[:ARGS_SHOWN] + "…"
        return f"{i + 1}. {call.name} {args}" + (" (failed)" if call.is_error else "")

    lines = [line(i, c) for i, c in enumerate(calls)]
    if len(lines) > 2 * SHOWN_CALLS:
        hidden = len(lines) - 2 * SHOWN_CALLS
        lines = [*lines[:SHOWN_CALLS], f"[…{hidden} calls elided…]", *lines[-SHOWN_CALLS:]]
    return "\n".join(lines) or "(none)"


def _task(grader: VallyGrader, run: RunInputs) -> str | None:
    """What the agent was asked: the selected turn's message, each turn's, or the case's prompt."""
    turns = run.session.turns
    if turns and grader.turn is not None:
        return turns[grader.turn].user
    if turns:
        return "\n\n".join(f"Turn {i}: {t.user}" for i, t in enumerate(turns))
    return run.finished.case.input.prompt if run.finished is not None else None


def judge_prompt(grader: VallyGrader, run: RunInputs, scoring: str) -> str:
    """The judge's prompt: the rubric, the grader's own instruction, the task, the tool calls and
    the final answer, then the reply format. Nothing in it changes between runs of one session."""
    session = view(grader, run.session)
    rubric = "\n".join(f"- {c}" for c in grader.rubric) or f"- {DEFAULT_RUBRIC}"
    parts = ["You are grading the work of a coding agent against a rubric.", f"Rubric:\n{rubric}"]
    if grader.options.get("prompt"):
        parts.append(f"Grading instructions:\n{grader.options['prompt']}")
    task = _task(grader, run)
    if task:
        parts.append(f"Task given to the agent:\n{task}")
    parts += [
        f"The agent's tool calls, in order:\n{_timeline(session.tool_calls)}",
        f"The agent's final answer:\n{elide(session.output) or '(empty)'}",
    ]
    if scoring == "binary":
        parts.append(
            "Decide whether the work meets the rubric. Give your reasons in a few sentences, "
            "then end with one line in exactly this form:\nSCORE: PASS\nor\nSCORE: FAIL"
        )
    else:
        top = SCALES[scoring]
        parts.append(
            f"Score the work as a whole from 1 (does not meet the rubric) to {top} (fully meets "
            "it). Give your reasons in a few sentences, then end with one line in exactly this "
            "form:\n"
            f"SCORE: <a whole number from 1 to {top}>"
        )
    return "\n\n".join(parts)


def parse_score(reply: str, scoring: str) -> tuple[float, str]:
    """(normalised score, as the judge gave it) from the reply's last `SCORE:` line: binary
    PASS/FAIL (or 1/0) is 1/0, a scale's s is (s-1)/(max-1); Refused when there is none."""
    found = SCORE_LINE.findall(reply)
    if not found:
        raise Refused(f"the judge's reply has no 'SCORE: …' line: {_preview(reply)}")
    given = found[-1].upper()
    if scoring == "binary":
        if given in ("PASS", "1"):
            return 1.0, "PASS"
        if given in ("FAIL", "0"):
            return 0.0, "FAIL"
        raise Refused(f"the judge's binary score {found[-1]!r} is not PASS or FAIL")
    top = SCALES[scoring]
    if given in ("PASS", "FAIL") or not 1 <= float(given) <= top:
        raise Refused(f"the judge's score {found[-1]!r} is not a number from 1 to {top}")
    return (float(given) - 1) / (top - 1), f"{given}/{top}"


def _preview(reply: str) -> str:
    text = " ".join(reply.split())
    return repr(text if len(text) <= 200 else text[:200] + "…")


def _evidence_missing(session: Session) -> bool:
    """Nothing for a judge to read (Vally 0.16: LLM grading fails on empty evidence)."""
    return not session.output.strip() and not session.tool_calls


def _ask_all(run: RunInputs, grader: VallyGrader, prompt: str, n: int) -> list[str]:
    if run.ask is None:
        raise RuntimeError(f"no judge for a {grader.type} grader")
    ask = run.ask
    asking: list[Callable[[], str]] = [lambda: ask(prompt)] * n
    return run.votes(asking) if run.votes is not None else [call() for call in asking]


def _model_note(grader: VallyGrader) -> str:
    model = grader.options.get("model")
    return f" (config model {model} not used: graded by this run's judge model)" if model else ""


def grade_prompt(grader: VallyGrader, run: RunInputs) -> Check:
    """The judge scores the run against the stimulus's rubric on `scoring`'s scale (default scale_1_5);
    passed when the normalised score reaches `threshold` (0.5). `model` is not used: this run's
    judge model grades. (https://microsoft.github.io/vally/reference/graders/prompt/, 0.17)"""
    scoring, threshold = _scoring(grader)
    if _evidence_missing(view(grader, run.session)):
        return result(grader, False, NO_EVIDENCE)
    (reply,) = _ask_all(run, grader, judge_prompt(grader, run, scoring), 1)
    score, given = parse_score(reply, scoring)
    passed = score >= threshold
    detail = (
        f"judge score {given} ({score:.2f} {'≥' if passed else '<'} threshold {threshold:g})"
        + _model_note(grader)
    )
    return result(grader, passed, detail, score, votes=(passed,))


AGGREGATE: dict[str, Callable[[list[float]], float]] = {
    "mean": statistics.fmean,
    "median": statistics.median,
    "min": min,
}


def grade_panel(grader: VallyGrader, run: RunInputs) -> Check:
    """One judge per `models` entry on the rubric (default scale_1_5), their scores aggregated by
    `aggregation` (mean; median; min; majority: the share of judges that passed, passed over half).
    A judge whose reply cannot be read is left out, and named. Every entry is asked of this run's
    judge model. (https://microsoft.github.io/vally/reference/graders/panel/, 0.17)"""
    models = strings(option(grader, "models"))
    aggregation = str(grader.options.get("aggregation", "mean"))
    if aggregation not in (*AGGREGATE, "majority"):
        raise ValueError(f"panel: `aggregation` is majority, mean, median or min, not {aggregation!r}")
    scoring, threshold = _scoring(grader)
    if _evidence_missing(view(grader, run.session)):
        return result(grader, False, NO_EVIDENCE)
    replies = _ask_all(run, grader, judge_prompt(grader, run, scoring), len(models))
    scores, shown = [], []
    for model, reply in zip(models, replies, strict=True):
        try:
            score, given = parse_score(reply, scoring)
        except Refused as exc:
            shown.append(f"{model}: {exc}")
            continue
        scores.append(score)
        shown.append(f"{model}: {given}")
    head = f"panel of {len(models)} (each asked of this run's judge model): " + "; ".join(shown)
    if not scores:
        return result(grader, False, head + "; no judge gave a score")
    votes = tuple(s >= threshold for s in scores)
    if aggregation == "majority":
        score = sum(votes) / len(votes)
        passed = score > 0.5
    else:
        score = AGGREGATE[aggregation](scores)
        passed = score >= threshold
    verdict = f"{aggregation} {score:.2f} ({'passed' if passed else 'failed'}, threshold {threshold:g})"
    return result(grader, passed, f"{head}; {verdict}", score, votes=votes)


def grade_pairwise(grader: VallyGrader, run: RunInputs) -> Check:
    """Vally runs it only in `vally compare`; `vally eval` leaves it out.
    (https://microsoft.github.io/vally/reference/graders/pairwise/, 0.17)"""
    return Check(
        grader.name,
        True,
        "pairwise: Vally runs it only in vally compare; not graded by vally eval",
        type=grader.type,
        weight=grader.weight,
        scored=False,
    )
