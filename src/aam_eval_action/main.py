"""The `aam-eval` command line: builds argparse and dispatches to one function per verb."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aam_eval_action import __version__
from aam_eval_action.engines.registry import ENGINE_NAMES, RESERVED_NAMES
from aam_eval_action.error_handler import error_handler
from aam_eval_action.errors import UsageError
from aam_eval_action.modes import MODES
from aam_eval_action.pipeline.select import parse_shard


def _shard(value: str) -> tuple[int, int]:
    try:
        return parse_shard(value)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _share(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a score from 0 to 1 (e.g. 0.8)") from None
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError("must be from 0 to 1")
    return share


def _confidence(value: str) -> float:
    share = _share(value)
    if not 0.5 <= share < 1:
        raise argparse.ArgumentTypeError("must be at least 0.5 and below 1 (e.g. 0.95)")
    return share


def _usd(value: str) -> float:
    try:
        amount = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an amount in USD (e.g. 2.50)") from None
    if not amount > 0 or amount == float("inf"):
        raise argparse.ArgumentTypeError("must be more than 0")
    return amount


def _positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run (or replay) eval cases and write the report")
    p.add_argument("cases", nargs="*", metavar="CASE", help="case names (default: all)")
    p.add_argument("--case", action="append", default=[], dest="case_globs", metavar="GLOB",
                   help="cases whose name matches (* any characters, ? one), as `claude plugin eval "
                        "--case`; may be given again")
    p.add_argument("--package", type=Path, default=Path("."), help="package root (default: .)")
    p.add_argument("--engine", metavar="ENGINE[,ENGINE...]",
                   help=f"agent engine(s): {', '.join(ENGINE_NAMES + RESERVED_NAMES)}; several, "
                        "comma-separated, run every case on each")
    p.add_argument("--model", metavar="MODEL[,MODEL...]",
                   help="the agent's model(s); several, comma-separated, run every case with each "
                        "(on each engine that serves it)")
    p.add_argument("--judge", help="the judge model (default: the agent's model)")
    p.add_argument("--target", help="only cases with this target (skill:NAME, hook:EVENT, agent:NAME)")
    p.add_argument("--tags", metavar="EXPR", help="only cases whose tags satisfy EXPR, e.g. 'sql && !slow'")
    p.add_argument("--suite", metavar="NAME", help="only the stimuli this .vally.yaml suite selects")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--replay", dest="mode", action="store_const", const="replay",
                      help="cassettes only: no key, no CLI, no network")
    mode.add_argument("--record", dest="mode", action="store_const", const="record",
                      help="always live, overwrite cassettes")
    mode.add_argument("--mode", dest="mode", choices=MODES, help="replay, auto, record or live")
    rerun = p.add_mutually_exclusive_group()
    rerun.add_argument("--rerun", dest="rerun", action="store_const", const="always",
                       help="replay by re-executing the real CLI against the recorded model traffic")
    rerun.add_argument("--no-rerun", dest="rerun", action="store_const", const="never",
                       help="replay snapshots only (the recorded outcome read back)")
    p.add_argument("--dry-run", action="store_true", help="list what would run; no model call")
    p.add_argument("--jobs", "-j", type=_positive, help="cases run concurrently")
    p.add_argument("--repeat", type=_positive, help="attempts of every case, over its own repeat or runs")
    p.add_argument("--max-runs", type=_positive, metavar="N",
                   help="live: attempts a changed case may take until the evidence decides (default 12)")
    p.add_argument("--confidence", type=_confidence, metavar="C",
                   help="the confidence a blamed regression needs (default 0.95)")
    p.add_argument("--timeout", type=float, help="seconds per case (overrides eval-config)")
    p.add_argument("--cassettes", type=Path, help="cassette directory (default: evals/cassettes)")
    p.add_argument("--report", action="store_true", help="write evals/reports/<timestamp>.json")
    p.add_argument("-o", "--output", type=Path, help="write the report to this path")
    p.add_argument("--junit", type=Path, help="write JUnit XML to this path")
    p.add_argument("--vally-results", type=Path, metavar="PATH",
                   help="write Vally's results.jsonl (trial results, then the run summary) to this path")
    p.add_argument("--html", type=Path, help="write the self-contained HTML report to this path")
    p.add_argument("--shard", type=_shard, help="run shard I of N (e.g. 1/4)")
    p.add_argument("--keep-workspaces", action="store_true", help="keep workspaces for debugging")
    p.add_argument("--baseline", action="store_true", default=None,
                   help="also run each case without the skill, to measure its lift")
    p.add_argument("--max-usd", type=_usd, metavar="USD",
                   help="spend at most this much on model calls: a stale case whose estimated cost "
                        "does not fit is not run (not graded: budget)")
    p.add_argument("--threshold", type=_share, metavar="SCORE",
                   help="the score a claude plugin eval case passes at, as that runner's --threshold "
                        "(default: eval-config threshold, else 1.0)")
    p.add_argument("--ablation", choices=("none", "with-without"),
                   help="claude plugin eval cases: with-without also runs each without the plugin and "
                        "reports the score's delta (default: eval-config ablation, else with-without); "
                        "none runs one arm")
    p.add_argument("--scaffold", action="store_true", default=None,
                   help="run claude plugin eval cases' scaffold scripts (inside the sandbox) before their "
                        "sessions; a repository's scripts run only when the operator says so")
    p.add_argument("--allow-tools", action="append", default=[], metavar="TOOL[,TOOL...]",
                   help="grant claude plugin eval cases these tools beyond the read-only ones (Bash, Write, "
                        "Edit, WebFetch, mcp__*), as that runner's --allow-tools; a tool a case lists and no "
                        "grant covers is withheld, and the case says so")
    p.add_argument("--mocks", choices=("record", "off"),
                   help="claude plugin eval cases' mocks: record (default: their stand-ins answer) or "
                        "off (no stand-in; the plugin's real servers start, inside the sandbox), as that "
                        "runner's --mocks")
    p.add_argument("--allow-real-servers", action="store_true", default=None,
                   help="start the plugin's MCP servers a claude plugin eval case does not mock (inside the "
                        "sandbox); without it they are not started, as that runner's --allow-real-servers")
    p.add_argument("--runs", type=int, dest="runs", metavar="N",
                   help="runs of every case, over its own runs:, as claude plugin eval's --runs "
                        "(the same as --repeat)")
    p.add_argument("--judge-gate", choices=("always", "calibrated", "never"),
                   help="whether a judge FAIL fails its case: always, calibrated (only when the judge "
                        "agrees with human labels: eval-config judge-calibration) or never (advisory)")
    p.add_argument("--sandbox-enforce", choices=("best-effort", "required"),
                   help="required: refuse to run a session the OS cannot confine as eval-config's sandbox "
                        "asks (default: best-effort, reporting what was enforced)")
    p.add_argument("--no-self-check", dest="self_check", action="store_false", default=None,
                   help="do not re-execute a new recording once against itself to learn its "
                        "volatile values")
    p.add_argument("--allow-empty", action="store_true",
                   help="a run that selects no case passes (default: it fails, saying why)")
    p.add_argument("--with", dest="with_dirs", action="append", default=[], metavar="DIR",
                   help="neighbour skills installed beside the package for its trigger cases (a skill "
                        "folder, a folder of skills, a plugin); repeatable; with eval-config neighbors")
    p.add_argument("--sweep", type=_sweep, metavar="N[,N...]",
                   help="a crowding sweep: also run the trigger cases with each number of neighbours "
                        "installed, drawn from the neighbours (or the marketplace's other plugins)")
    _add_package_flags(p)


def _sweep(value: str) -> tuple[int, ...]:
    from aam_eval_action.spec import check_sweep

    try:
        return tuple(check_sweep([int(part) for part in value.split(",") if part.strip()]))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {exc}; write sizes like 0,20,100") from None


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _plugins(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _add_package_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", type=_plugins, metavar="NAME[,NAME...]",
                   help="only these plugins of a marketplace (default: every plugin with a local source)")
    p.add_argument("--strict", action="store_true",
                   help="the package's lint warnings (SKILL.md, manifests, hooks) are errors")


def _count(value: str) -> int:
    n = int(value)
    if not 0 <= n <= 50:
        raise argparse.ArgumentTypeError("must be between 0 and 50")
    return n


def _add_init(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    n = sub.add_parser("init", help="draft a starter suite (trigger prompts, near misses, tasks) for each "
                                    "skill without cases, to review")
    n.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    n.add_argument("--plugin", type=_plugins, metavar="NAME[,NAME...]", help="only these plugins")
    n.add_argument("--skill", action="append", metavar="SKILL", help="only this skill (repeatable)")
    n.add_argument("--engine", help="the engine the suite is for (its eval-config is written when none is)")
    n.add_argument("--model", help="the drafting model (default: the judge's model)")
    n.add_argument("--positives", type=_count, default=10,
                   help="trigger prompts that should fire, the canary included (default: 10)")
    n.add_argument("--negatives", type=_count, default=10,
                   help="prompts that should not fire: near misses of its siblings and one or two out of "
                        "scope (default: 10)")
    n.add_argument("--tasks", type=_count, default=2,
                   help="tasks with checks and judge criteria (default: 2)")
    n.add_argument("--siblings", type=_count, default=2,
                   help="nearest sibling skills (BM25) its near misses are drafted from (default: 2)")
    n.add_argument("--replay", action="store_true",
                   help="redraft from the recorded drafting calls: no key, no network")
    n.add_argument("--dry-run", action="store_true",
                   help="print the plan (skills, siblings and why, counts); no model call")
    n.add_argument("--format", choices=("aam", "claude-plugin-eval"), default="aam",
                   help="claude-plugin-eval: write each case as claude plugin eval reads it "
                        "(evals/<case>/case.yaml), so the suite runs in both tools (default: aam)")
    n.add_argument("--force", action="store_true",
                   help="redraft skills that have cases; replace drafted files")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aam-eval", description="Record, replay and diff LLM-judged agent evals."
    )
    parser.add_argument("--version", action="version", version=f"aam-eval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_run(sub)
    d = sub.add_parser("diff", help="compare two reports (one: a report alone, its engines side by side)")
    d.add_argument("reports", nargs="+", type=Path, metavar="[BASE] HEAD")
    d.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    b = sub.add_parser("budget", help="what each CLI's skill listing shows of the package: its size against "
                                      "the budget, and the skills cut short or shown by name only")
    b.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    b.add_argument("--engine", metavar="ENGINE[,ENGINE...]", help="the engine(s) (default: all four)")
    window = b.add_mutually_exclusive_group()
    window.add_argument("--model", metavar="MODEL[,MODEL...]",
                        help="the model(s): the context window follows from each, as the CLI sizes it "
                             "(default: each engine's default model)")
    window.add_argument("--context", metavar="TOKENS", help="a context window instead, like 200k or 1m")
    b.add_argument("--with", dest="with_dirs", action="append", default=[], metavar="DIR",
                   help="neighbour skills installed beside the package (a skill folder, a folder of "
                        "skills, a plugin); repeatable")
    b.add_argument("--plugin", type=_plugins, metavar="NAME[,NAME...]", help="only these plugins")
    b.add_argument("--json", action="store_true", help="print the listings as JSON")
    t = sub.add_parser("tune", help="propose a better description for a skill, proven on held-out trigger "
                                    "prompts; a suggestion and a patch, never a commit")
    t.add_argument("--skill", required=True, help="the skill whose description to tune")
    t.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    t.add_argument("--engine", metavar="ENGINE[,ENGINE...]", help="the engine(s) (default: eval-config's)")
    t.add_argument("--model", metavar="MODEL[,MODEL...]", help="the agent's model(s)")
    t.add_argument("--candidates", type=_positive, default=4, help="proposals per round (default: 4)")
    t.add_argument("--rounds", type=_positive, default=3, help="rounds of proposals (default: 3)")
    t.add_argument("--candidate", dest="given", action="append", default=[], metavar="TEXT",
                   help="a description of yours, through the same lint, scoring and gate; repeatable")
    t.add_argument("--no-propose", dest="propose", action="store_false",
                   help="no proposer: only the --candidate descriptions (and rule-made hand-offs)")
    t.add_argument("--max-usd", type=_usd, metavar="USD",
                   help="spend at most this much on sessions and proposals")
    t.add_argument("--draft-test", type=_positive, metavar="N",
                   help="when the test prompts are too few for the gate to show a gain, draft N held-out "
                        "test prompts at a time (as init drafts, recorded, for review) until it can")
    t.add_argument("--replay", action="store_true", help="from the recordings only: no key, no network")
    t.add_argument("-o", "--output", type=Path, help="write the candidates, scores and decision as JSON here")
    t.add_argument("--patch", type=Path, help="write the suggested change as a patch here")
    t.add_argument("--plugin", type=_plugins, metavar="NAME[,NAME...]", help="only these plugins")
    t.add_argument("--suggest", metavar="OWNER/REPO#N",
                   help="post a winning description as a suggested change on that pull request (a review "
                        "comment on the description line; token from GITHUB_TOKEN)")
    t.add_argument("--api-url", default="https://api.github.com", help="GitHub API URL")
    se = sub.add_parser("sensitivity", help="would the suite notice if the package broke? Each mutant of "
                                            "the package (a section deleted, a script failing…) run through "
                                            "the suite; which checks tell it apart, what nothing covers")
    se.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    se.add_argument("--engine", metavar="ENGINE[,ENGINE...]", help="the engine(s) (default: eval-config's)")
    se.add_argument("--mutants", metavar="KIND|DIRECTION|ID[,...]",
                    help="only these mutants: kinds (body, description, broadened, sibling, section, "
                         "file-removed, script-fails, hook-removed, mcp-error, mock-error, own), directions "
                         "(removes, over-claims) or id patterns such as 'my-skill/section/*' (default: all)")
    se.add_argument("--list", dest="list_only", action="store_true", help="list the mutants and stop")
    se.add_argument("--max-usd", type=_usd, metavar="USD",
                    help="spend at most this much; what does not fit is said")
    se.add_argument("--replay", action="store_true", help="from the recordings only: no key, no network")
    se.add_argument("--tags", metavar="EXPR", help="only cases whose tags satisfy this expression")
    se.add_argument("--cassettes", type=Path, metavar="DIR",
                    help="cassettes directory (default: eval-config's)")
    se.add_argument("--jobs", type=_positive, metavar="N", help="cases run in parallel")
    se.add_argument("-o", "--output", type=Path, help="write the kill matrix as JSON here")
    se.add_argument("--html", type=Path, help="write the kill matrix as one self-contained HTML page here")
    se.add_argument("--plugin", type=_plugins, metavar="NAME", help="the plugin, in a repository of several")
    se.add_argument("--model", help="the agent's model (default: eval-config's)")
    se.add_argument("--judge", help="the judge model (default: the agent's model)")
    se.add_argument("--repeat", type=_positive,
                    help="attempts per case: with more than one, each check's difference with and without "
                         "the package gets an interval")
    se.add_argument("--timeout", type=float, help="seconds per case (overrides eval-config)")
    se.add_argument("--scaffold", action="store_true", default=None,
                    help="run claude plugin eval cases' scaffold scripts, as `run --scaffold`")
    se.add_argument("--allow-tools", action="append", default=[], metavar="TOOL[,TOOL...]",
                    help="grant claude plugin eval cases these tools, as `run --allow-tools`")
    se.add_argument("--mocks", choices=("record", "off"),
                    help="claude plugin eval cases' mocks, as `run --mocks` (off: the real servers start)")
    se.add_argument("--allow-real-servers", action="store_true", default=None,
                    help="start the plugin's MCP servers a claude plugin eval case does not mock, as `run "
                         "--allow-real-servers` (an mcp-error mutant of such a server is measured only then)")
    c = sub.add_parser("check", help="validate the package statically: no agent, no model")
    c.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    _add_package_flags(c)
    dr = sub.add_parser("doctor", help="report what can run here (CLIs, Node, keys, sandbox layers, the "
                                       "recordings' CLI versions); changes nothing, calls no model")
    dr.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    _add_init(sub)
    i = sub.add_parser("import", help="write other tools' eval files out as case YAML (evals/cases/)")
    i.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    i.add_argument("--plugin", type=_plugins, metavar="NAME[,NAME...]", help="only these plugins")
    i.add_argument("--force", action="store_true", help="replace case files that differ")
    lb = sub.add_parser("label", help="record a person's verdict on the output in a case's cassette "
                                      "(evals/labels.yaml)")
    lb.add_argument("case", metavar="CASE", help="the case (<plugin>/<case> in a repository of plugins)")
    lb.add_argument("--verdict", required=True, choices=("PASS", "FAIL"), help="the person's verdict")
    lb.add_argument("--reason", required=True, help="why, in a sentence: shown wherever it decides")
    lb.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    lb.add_argument("--engine", help="the engine whose recorded output is labelled (default: eval-config's)")
    lb.add_argument("--model", help="the agent model whose recorded output is labelled")
    lb.add_argument("--by", help="who (default: git user.name, else $USER)")
    lb.add_argument("--output", metavar="SHA256", help="the judged output's hash, as the HTML report's line "
                                                       "gives it: refused if the cassette now holds another")
    lb.add_argument("--attempt", type=_positive, default=1, help="which recorded attempt (default: 1)")
    lb.add_argument("--plugin", type=_plugins, metavar="NAME[,NAME...]", help=argparse.SUPPRESS)
    x = sub.add_parser("export", help="write recorded sessions as ATIF trajectories and/or OTLP JSON spans")
    x.add_argument("cases", nargs="*", metavar="CASE", help="case names (default: all)")
    x.add_argument("--package", type=Path, default=Path("."), help="package or repository root (default: .)")
    x.add_argument("--atif", type=Path, metavar="DIR", help="one ATIF v1.7 trajectory per case and pair here")
    x.add_argument("--otlp", type=Path, metavar="FILE", help="OTLP JSON spans of every session, in one file")
    x.add_argument("--report", type=Path,
                   help="take verdicts from this report (default: replay the cassettes)")
    x.add_argument("--engine", metavar="ENGINE[,ENGINE...]", help="the engine(s) whose recordings to export")
    x.add_argument("--model", metavar="MODEL[,MODEL...]",
                   help="the agent model(s) whose recordings to export")
    x.add_argument("--cassettes", type=Path, help="cassette directory (default: evals/cassettes)")
    x.add_argument("--plugin", type=_plugins, metavar="NAME[,NAME...]", help="only these plugins")
    x.add_argument("--format", choices=("claude-plugin-eval",),
                   help="claude-plugin-eval: the --report's claude plugin eval cases as that runner's "
                        "aggregate-result.json (-o FILE)")
    x.add_argument("-o", "--output", type=Path, help="where --format writes its file")
    m = sub.add_parser("merge", help="join shard reports into one report")
    m.add_argument("reports", nargs="+", type=Path)
    m.add_argument("-o", "--output", type=Path, help="write the merged report here")
    s = sub.add_parser("schema", help="print the JSON Schema of case files, eval-config, reports or a "
                                      "sensitivity matrix")
    s.add_argument("kind", nargs="?", default="all", choices=("all", "case", "eval-config", "report",
                                                              "sensitivity"))
    s.add_argument("-o", "--output-dir", type=Path, help="write <kind>.schema.json files here")
    k = sub.add_parser("comment", help="render the PR comment for a report; print it or post it")
    k.add_argument("head", type=Path, help="the head report")
    k.add_argument("--base", type=Path, help="the base report to diff against")
    k.add_argument("--template", type=Path, help="a Jinja template (may extend comment.md.j2)")
    k.add_argument("--comment-id", help="keep a separate sticky comment per id")
    k.add_argument("--repo", help="OWNER/NAME to post to (token from GITHUB_TOKEN)")
    k.add_argument("--pr", type=int, help="pull request number to post to")
    k.add_argument("--api-url", default="https://api.github.com", help="GitHub API URL")
    v = sub.add_parser("view", help="write one self-contained HTML file for a report")
    v.add_argument("report", type=Path, help="the report (head)")
    v.add_argument("--base", type=Path, help="a base report: base beside head for changed cases")
    v.add_argument("--history", type=Path, nargs="+", default=[], metavar="REPORT",
                   help="reports for the trends (default: the package's evals/reports/*.json)")
    v.add_argument("--package", type=Path, help="the report's package (default: its recorded --package)")
    v.add_argument("--base-package", type=Path, help="the base report's package (a checkout of the base)")
    v.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    sub.add_parser("action", help="the GitHub Action entry point (reads INPUT_* and GITHUB_*)")
    return parser


def cli() -> int:
    """The `aam-eval` command: `main` in a process of its own, whose collector is tuned for it.

    A run builds many short-lived objects without cycles (parsed cassettes, sessions, results):
    the modules and models loaded by then are set aside for good (`gc.freeze`) and the youngest
    generation is collected ten times less often (a replay of a thousand cases runs about 5%
    faster). Only here, not in `main`, which a long-lived process may call many times.

    At the end, whatever the run loaded is set aside too: the interpreter's last collection then
    skips the SDKs' thousands of model classes (a live run of a two-case suite took about 0.3 s
    and 0.35 CPU-s less, alternated four times each). The process is ending, so nothing is kept
    that would not be freed with it; exit handlers still run."""
    import gc

    gc.set_threshold(7000, 20, 20)
    gc.freeze()
    try:
        return main()
    finally:
        gc.freeze()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    with error_handler() as status:
        status.code = _dispatch(args)
    return status.code


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        from aam_eval_action.commands.run import RunArgs, run
        from aam_eval_action.settings import Overrides

        overrides = Overrides(
            engine=args.engine, model=args.model, judge=args.judge, mode=args.mode,
            jobs=args.jobs, repeat=args.repeat or args.runs, cassettes=args.cassettes, timeout=args.timeout,
            baseline=args.baseline, rerun=args.rerun, self_check=args.self_check, max_usd=args.max_usd,
            judge_gate=args.judge_gate, sandbox_enforce=args.sandbox_enforce, threshold=args.threshold,
            ablation=args.ablation, scaffold=args.scaffold, allow_real_servers=args.allow_real_servers,
            with_dirs=tuple(args.with_dirs), sweep=args.sweep,
            allow_tools=tuple(t for given in args.allow_tools for t in given.split(",") if t.strip()),
            mocks=args.mocks, max_runs=args.max_runs, confidence=args.confidence,
        )
        return run(RunArgs(
            package=args.package, cases=[*args.cases, *args.case_globs], overrides=overrides,
            target=args.target,
            dry_run=args.dry_run, report=args.report, output=args.output, junit=args.junit, html=args.html,
            vally_results=args.vally_results,
            keep_workspaces=args.keep_workspaces, shard=args.shard, plugins=args.plugin, strict=args.strict,
            tags=args.tags, suite=args.suite, allow_empty=args.allow_empty,
        ))
    if args.command == "diff":
        from aam_eval_action.commands.diff import diff

        if len(args.reports) > 2:
            raise UsageError("diff takes one report (HEAD) or two (BASE HEAD)")
        base, head = ([None, *args.reports])[-2:]
        return diff(base, head, args.format, sys.stdout)
    if args.command == "action":
        from aam_eval_action.commands.action import action

        return action()
    if args.command == "comment":
        from aam_eval_action.commands.comment import comment

        return comment(args.head, args.base, args.template, args.comment_id, args.repo, args.pr,
                       args.api_url)
    if args.command == "merge":
        from aam_eval_action.commands.merge import merge

        return merge(args.reports, args.output)
    if args.command == "schema":
        from aam_eval_action.commands.schema import schema

        return schema(args.kind, args.output_dir)
    if args.command == "view":
        from aam_eval_action.commands.view import view

        return view(args.report, args.output, args.base, args.history, args.package, args.base_package)
    if args.command == "init":
        from aam_eval_action.commands.init import InitArgs, init

        return init(InitArgs(
            package=args.package, plugins=args.plugin, skills=args.skill, engine=args.engine,
            model=args.model,
            positives=args.positives, negatives=args.negatives, tasks=args.tasks, siblings=args.siblings,
            replay=args.replay, dry_run=args.dry_run, force=args.force, format=args.format,
        ))
    if args.command == "import":
        from aam_eval_action.commands.import_cases import import_cases

        return import_cases(args.package, args.plugin, args.force)
    if args.command == "label":
        from aam_eval_action.commands.label import label

        return label(args.package, args.case, args.verdict, args.reason, engine=args.engine, model=args.model,
                     by=args.by, output=args.output, attempt=args.attempt, plugins=args.plugin)
    if args.command == "export":
        from aam_eval_action.commands.export import export, export_plugin_eval

        if args.format == "claude-plugin-eval":
            return export_plugin_eval(args.package, args.report, args.output)
        return export(args.package, args.cases, atif=args.atif, otlp=args.otlp, report=args.report,
                      engine=args.engine, model=args.model, cassettes=args.cassettes, plugins=args.plugin)
    if args.command == "doctor":
        from aam_eval_action.commands.doctor import doctor

        return doctor(args.package)
    if args.command == "tune":
        from aam_eval_action.commands.tune import TuneArgs, tune
        from aam_eval_action.settings import runner_environment

        return tune(TuneArgs(
            package=args.package, skill=args.skill, engines=_split(args.engine), models=_split(args.model),
            candidates=args.candidates, rounds=args.rounds, given=args.given, propose=args.propose,
            max_usd=args.max_usd, replay=args.replay, output=args.output, patch=args.patch,
            plugins=args.plugin, suggest=args.suggest, api_url=args.api_url,
            token=runner_environment().get("GITHUB_TOKEN"), draft_test=args.draft_test,
        ))
    if args.command == "budget":
        from aam_eval_action.commands.budget import BudgetArgs, budget, context

        return budget(BudgetArgs(
            package=args.package, engines=_split(args.engine), models=_split(args.model),
            window=context(args.context) if args.context else None, with_dirs=tuple(args.with_dirs),
            plugins=args.plugin, json=args.json,
        ))
    if args.command == "sensitivity":
        from aam_eval_action.commands.sensitivity import SensitivityArgs, sensitivity

        return sensitivity(SensitivityArgs(
            package=args.package, engines=_split(args.engine) or None, mutants=args.mutants,
            max_usd=args.max_usd, replay=args.replay, output=args.output, html=args.html,
            list_only=args.list_only,
            cassettes=args.cassettes, tags=args.tags, jobs=args.jobs, plugins=args.plugin,
            model=args.model, judge=args.judge, repeat=args.repeat, timeout=args.timeout,
            scaffold=args.scaffold, mocks=args.mocks, allow_real_servers=args.allow_real_servers,
            allow_tools=tuple(t for given in args.allow_tools for t in given.split(",") if t.strip()),
        ))
    if args.command == "check":
        from aam_eval_action.commands.check import check

        return check(args.package, args.plugin, args.strict)
    raise UsageError(f"unknown command {args.command}")


if __name__ == "__main__":
    raise SystemExit(main())
