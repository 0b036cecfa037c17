"""Deterministic checks (seed step 4): run before the judge, on live or replayed output."""

from __future__ import annotations

from dataclasses import dataclass

from aam_eval_action.session import Session
from aam_eval_action.spec import Expected, Sandbox


@dataclass(frozen=True)
class Check:
    """One check's outcome and, when it failed, why."""

    name: str
    passed: bool
    detail: str = ""


def run_checks(expected: Expected, session: Session, sandbox: Sandbox) -> list[Check]:
    """Every configured check, in the seed's order, then the sandbox check."""
    checks: list[Check] = []
    if expected.contains:
        missing = [s for s in expected.contains if s not in session.output]
        checks.append(Check("contains", not missing, _list("output lacks", missing)))
    if expected.not_contains:
        found = [s for s in expected.not_contains if s in session.output]
        checks.append(Check("not_contains", not found, _list("output contains", found)))
    if expected.files_created:
        made = {f.path for f in session.files if f.status in ("created", "modified")}
        missing = [p for p in expected.files_created if p not in made]
        checks.append(Check("files_created", not missing, _list("not created", missing)))
    if expected.agent_blocked is not None:
        ok = session.hook_blocked == expected.agent_blocked
        detail = "" if ok else (
            "expected agent-blocked=true but no hook blocked the agent"
            if expected.agent_blocked
            else "expected agent-blocked=false but a hook blocked the agent"
        )
        checks.append(Check("agent_blocked", ok, detail))
    if sandbox.writable_paths is not None:
        outside = [f.path for f in session.files if not _writable(f.path, sandbox.writable_paths)]
        checks.append(Check("sandbox", not outside, _list("written outside writable-paths", outside)))
    return checks


def _writable(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _list(what: str, items: list[str]) -> str:
    return f"{what}: " + ", ".join(repr(i) for i in items) if items else ""
