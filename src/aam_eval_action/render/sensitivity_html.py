"""The kill matrix as one self-contained HTML page: per engine, a row per check and a column per
arm and mutant; a cell opens the pair of sessions it compares (the case with the package, and
in that arm or mutant). No script and no request: a Content-Security-Policy forbids both, and
every text from the repository or the agent is escaped by the template engine."""

from __future__ import annotations

from typing import Any

from aam_eval_action.sensitivity_model import ADJECTIVE, Sensitivity, SessionRef, measured_mutants, unmoved

TEMPLATE = "sensitivity.html.j2"


def render_html(result: Sensitivity) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("aam_eval_action.render", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    measured = measured_mutants(result)
    engines = [_engine(result, name) for name in result.engines]
    return env.get_template(TEMPLATE).render(r=result, engines=engines, measured=len(measured),
                                        killed=sum(m.status == "killed" for m in measured))


def _engine(result: Sensitivity, engine: str) -> dict[str, Any]:
    sessions = {(s.variant, s.case): s for s in result.sessions if s.engine == engine}
    mutants = [m for m in result.mutants if m.engine == engine]
    arms = [a for a in ("without", "with", "forced") if any(v == a for v, _ in sessions)]
    rows = []
    for check in (c for c in result.checks if c.engine == engine):
        base = sessions.get(("with", check.case)) or SessionRef(engine=engine, variant="with",
                                                                case=check.case)
        cells = []
        for variant in [*arms, *(m.id for m in mutants)]:
            other = sessions.get((variant, check.case))
            verdict = other.checks.get(check.check) if other else None
            killed = variant in check.flipped_by
            cls = "killed" if killed else verdict or "none"
            cells.append({"variant": variant, "verdict": verdict, "cls": cls, "base": base, "other": other})
        untried = " or ".join(ADJECTIVE[d] for d in check.untried) if unmoved(check) else ""
        rows.append({"check": check, "cells": cells, "untried": untried})
    uncovered = [m for m in mutants if m.status == "survived"]
    return {"name": engine, "arms": arms, "mutants": mutants, "rows": rows, "uncovered": uncovered}
