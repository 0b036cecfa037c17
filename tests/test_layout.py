"""The package's shape: no import cycles, every model field described in the JSON Schemas."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.commands.schema import KINDS, schema_for

from conftest import ROOT

PACKAGE = ROOT / "src" / "aam_eval_action"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(path: Path) -> set[str]:
    """First-party modules a module imports when it runs (TYPE_CHECKING blocks excluded).

    Imports inside functions count too: a cycle through a lazy import still ties the modules.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("aam_eval_action"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("aam_eval_action"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        # A package's own __init__ is what any import of its submodules runs first: not an edge.
        graph[name] = {m for m in runtime_imports(path) if m in modules and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


LOWER = ("spec", "graders", "jsregex", "layouts", "engines", "replay", "sandbox", "catalog", "importers", "settings",
         "loader")
"""The lower layers: what a case is, where it lives, how an engine runs it, how it is recorded."""


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


UPPER = ("sensitivity", "tuning")
"""The flows above the pipeline and render (`aam-eval sensitivity`'s, `tune`'s): only a command
imports them."""
MODELS = ("report_model", "diff_model", "sensitivity_model")
"""What a run found, as models: what render/ draws, and below every flow that builds them."""


def wrong_arrows(graph: dict[str, set[str]]) -> list[str]:
    """Every import that points up, or across where the layers keep apart."""
    wrong = []
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            mine, theirs = _room(module), _room(other)
            if mine == theirs == "commands" and "aam_eval_action.commands" not in (module, other):
                wrong.append(f"{module} → {other} (a command imports a command)")
            elif mine in LOWER and theirs in ("render", "commands", "pipeline"):
                wrong.append(f"{module} → {other} (a lower layer imports an upper one)")
            elif theirs == "testing" and mine != "testing":
                wrong.append(f"{module} → {other} (testing/ is for tests, benches and the example)")
            elif theirs in UPPER and mine not in (theirs, "commands"):
                wrong.append(f"{module} → {other} (only a command imports a flow above pipeline/ and render/)")
            elif {mine, theirs} == {"render", "sensitivity"}:
                wrong.append(f"{module} → {other} (render/ draws the kill matrix from sensitivity_model, and "
                             "sensitivity/ draws nothing)")
            elif mine in MODELS and theirs in ("render", "pipeline", "commands", "github", *UPPER):
                wrong.append(f"{module} → {other} (a model imports a layer above it)")
    return wrong


def test_the_arrows_point_down() -> None:
    """No command imports another command; no lower layer imports render/, commands/ or
    pipeline/; nothing outside testing/ imports testing/ (the scripted servers are the tests',
    the benches' and the example's); only a command imports sensitivity/ or tuning/; render/ and
    sensitivity/ never import each other (the kill matrix's models are sensitivity_model.py's);
    the models import nothing above them."""
    assert wrong_arrows(import_graph()) == []


def test_each_arrow_rule_finds_its_wrong_import() -> None:
    p = "aam_eval_action."
    graph = {f"{p}render.sensitivity": {f"{p}sensitivity.matrix"},
             f"{p}sensitivity.run": {f"{p}render.console", f"{p}pipeline.suite"},
             f"{p}sensitivity_model": {f"{p}pipeline.suite", f"{p}report_model"},
             f"{p}pipeline.suite": {f"{p}tuning.run"},
             f"{p}commands.sensitivity": {f"{p}sensitivity.run", f"{p}render.sensitivity"}}
    assert [w.split(" (")[0] for w in wrong_arrows(graph)] == [
        f"{p}pipeline.suite → {p}tuning.run", f"{p}render.sensitivity → {p}sensitivity.matrix",
        f"{p}sensitivity.run → {p}render.console", f"{p}sensitivity_model → {p}pipeline.suite"]


def test_the_cycle_check_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def undescribed(schema: dict[str, Any]) -> list[str]:
    """Every property, in the schema and its $defs, that has no description."""
    missing = []
    definitions = {"(root)": schema, **schema.get("$defs", {})}
    for model, definition in definitions.items():
        for prop, spec in definition.get("properties", {}).items():
            if not spec.get("description"):
                missing.append(f"{model}.{prop}")
    return missing


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_schema_property_is_described(kind: str) -> None:
    assert undescribed(schema_for(kind)) == []


def test_every_source_file_is_of_a_size_a_reader_can_hold() -> None:
    """No module of the package over 800 lines: a file that grows past it is split by concern."""
    long = {p.relative_to(PACKAGE).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800}
    assert long == {}


def test_an_engine_is_named_only_by_the_registry_and_its_own_modules() -> None:
    """Each engine's traits live in its registry entry and its modules (`engines/<engine>*.py`):
    no other module of the package names it. (`codex` and `copilot` are also the names of plugin
    formats and hook dialects in `layouts/` and `hooks.py`, which an engine declares it reads.)"""
    from aam_eval_action.engines.registry import ENGINES

    allowed = {"engines/registry.py"}
    found = []
    for name in ENGINES:
        literal = re.compile(rf"""["']{re.escape(name)}["']""")
        module = name.replace("-", "_")
        for path in sorted(PACKAGE.rglob("*.py")):
            rel = path.relative_to(PACKAGE).as_posix()
            if rel in allowed or rel.startswith((f"engines/{module}", "testing/")):
                continue
            text = path.read_text(encoding="utf-8")
            if literal.search(text) and (name not in ("codex", "copilot") or _as_engine(text, name)):
                found.append(f"{rel}: {name}")
    assert found == []


def _as_engine(text: str, name: str) -> bool:
    """Whether `codex` or `copilot` is written as an engine (an engine's comparison or key), not
    as a plugin host, hook dialect or agent format."""
    return re.search(rf"""engine\w*\s*(==|!=|\[|in)\s*\(?["']{name}["']""", text) is not None


def test_every_grader_type_has_one_model_and_one_grading() -> None:
    """A `claude plugin eval` grader type is its model in graders.py and its function in the one
    dispatch of pipeline/plugin_eval.py; a Vally grader type is in the catalog of
    vally/grader_model.py and the one dispatch of vally/grading.py; every outcome is one type,
    `Check`."""
    from aam_eval_action.graders import KINDS
    from aam_eval_action.pipeline.plugin_eval import GRADE
    from aam_eval_action.vally import grading
    from aam_eval_action.vally.grader_model import TYPES

    assert set(GRADE) == set(KINDS.values())
    assert set(grading.GRADE) == set(TYPES)
    pipeline = PACKAGE / "pipeline"
    deciding = [f"{p.name}:{n}" for p in sorted(pipeline.glob("*.py"))
                for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                if re.search(r"\b(if|elif|else|and|or|not)\s+loaded\.graders\b|loaded\.graders\s+else", line)]
    assert deciding == ["grade.py:" + str(_line_of(pipeline / "grade.py", "if not loaded.graders:"))], (
        "how a case is graded is decided in pipeline/grade.scoring_of alone: " + ", ".join(deciding))
    results = [p.name for p in PACKAGE.rglob("*.py")
               if re.search(r"^class \w*(GraderResult|Graded\w+)\b", p.read_text(encoding="utf-8"), re.M)]
    assert results == [], results


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line)
