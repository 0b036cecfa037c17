"""A dry run: what would run, and whether each case would replay or go live; no model call."""

from __future__ import annotations

import dataclasses

from aam_eval_action.errors import AamEvalError
from aam_eval_action.fsutil import display_path
from aam_eval_action.importers import claude_plugin_eval as cpe
from aam_eval_action.loader import LoadedCase, LoadedPackage
from aam_eval_action.package import PackageLayout
from aam_eval_action.replay import agent_cassette
from aam_eval_action.replay.decision import Miss, decide
from aam_eval_action.replay.fingerprint import agent_fingerprint
from aam_eval_action.settings import RunSettings


def plan_lines(s: RunSettings, cases: list[LoadedCase]) -> list[tuple[str, str | None]]:
    """The dry run's lines, each with a style (None: plain)."""
    lines: list[tuple[str, str | None]] = [(
        f"engine {s.engine}, model {s.model}, judge {s.judge_model} "
        f"({s.judge_provider}), mode {s.mode}, cassettes {display_path(s.cassettes)}", None,
    )]
    lines += [(line, None) for line in eval_file_lines(s.package)]
    for loaded in cases:
        plan = _plan(s, loaded, s.layout)
        if s.two_arms(loaded):
            plan += " · baseline " + _plan(s, loaded, dataclasses.replace(s.layout, baseline=True))
        name = s.package.qualified(loaded.case.title or loaded.case.name)
        lines.append((f"{name}  target {loaded.case.target or '-'}  {plan}", None))
        lines += [(f"    not honoured: {check}: {why}", None) for check, why in loaded.skipped]
    lines += [(f"ERROR {err}", "yellow") for err in s.package.errors]
    names = {c.case.name for c in s.package.cases}
    for name, engines in agent_cassette.list_recorded(s.cassettes).items():
        if name not in names:
            lines.append((f"orphan cassette: {display_path(s.cassettes / name)} ({', '.join(engines)}): "
                           "no case has this name any more; delete it", None))
    return lines


def eval_file_lines(package: LoadedPackage) -> list[str]:
    """Each other tool's eval file found: its format and the cases it gave, or why none."""
    lines = []
    for found in package.eval_files:
        if found.error:
            lines.append(f"eval file {found.rel} ({found.format}): not read, see the error below")
            continue
        names = ", ".join(package.qualified(i.case.title or i.case.name) for i in found.cases)
        lines.append(f"eval file {found.rel} ({found.format}): {len(found.cases)} case(s): {names}")
    if any(f.format == cpe.FORMAT for f in package.eval_files):
        lines.append(cpe_rules_line())
    return lines


def cpe_rules_line() -> str:
    """Which runner release's rules read a `claude plugin eval` suite."""
    return (f"claude plugin eval suite read by the rules of Claude Code {cpe.RULES_OF}'s runner "
            "(a case whose schema_version is newer than 1.x is refused, not guessed at)")


def _plan(s: RunSettings, loaded: LoadedCase, layout: PackageLayout) -> str:
    """`replay`, `live (why)` or `ERROR (miss)` for one session of a case."""
    fp = agent_fingerprint(layout, loaded.case, s.config, s.engine, s.model, s.scaffold, s.allow_tools,
                           s.mocks)
    try:
        d = decide(s, loaded.case.name, fp, "baseline" if layout.baseline else "")
    except Miss as miss:
        return f"ERROR ({miss.message})"
    except AamEvalError as exc:  # --rerun with another CLI version
        return f"ERROR ({exc})"
    return f"rerun ({d.reason})" if d.rerun else "replay" if d.replay else f"live ({d.reason})"

