"""The process environment is read in one place, `settings.runner_environment()`: every other
module takes the runner's environment (or the values it needs) as a parameter."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "src" / "aam_eval_action"
SETTINGS = PACKAGE / "settings.py"
TESTING = PACKAGE / "testing"
"""Test infrastructure (scripted servers, packages written for tests): not the product."""
MODULES = frozenset({"os", "posix", "nt"})
READERS = frozenset({"environ", "environb", "getenv", "getenvb"})


def environment_reads(source: str) -> list[int]:
    """The lines of `source` that touch the process environment: `os.environ`, `os.getenv`,
    `posix.environ` and the like under any alias, and `environ` or `getenv` imported from
    those modules (where imported and where used). A parameter named `environ` is not one."""
    tree = ast.parse(source)
    modules: set[str] = set()
    names: set[str] = set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    modules.add(alias.asname or alias.name)
                elif alias.name.split(".")[0] in MODULES and alias.asname is None:
                    modules.add(alias.name.split(".")[0])  # `import os.path` binds `os`
        elif isinstance(node, ast.ImportFrom) and node.module in MODULES:
            for alias in node.names:
                if alias.name in READERS:
                    names.add(alias.asname or alias.name)
                    lines.add(node.lineno)
    lines.update(node.lineno for node in ast.walk(tree) if _reads(node, modules, names))
    return sorted(lines)


def _reads(node: ast.AST, modules: set[str], names: set[str]) -> bool:
    """`os.environ` (a module's reader by attribute), or `environ` imported by name."""
    if isinstance(node, ast.Attribute):
        return node.attr in READERS and isinstance(node.value, ast.Name) and node.value.id in modules
    return isinstance(node, ast.Name) and node.id in names


def product_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p != SETTINGS and not p.is_relative_to(TESTING)]


def test_only_settings_reads_the_process_environment() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}" for path in product_modules()
             for line in environment_reads(path.read_text(encoding="utf-8"))]
    assert found == [], (
        "the process environment is read only by settings.runner_environment(); take the "
        "runner's environment (RunSettings.runner_env) or the value needed as a parameter: "
        + ", ".join(found)
    )


def test_settings_reads_it_only_in_runner_environment() -> None:
    tree = ast.parse(SETTINGS.read_text(encoding="utf-8"))
    reader = next(node for node in tree.body
                  if isinstance(node, ast.FunctionDef) and node.name == "runner_environment")
    inside = range(reader.lineno, (reader.end_lineno or reader.lineno) + 1)
    reads = environment_reads(SETTINGS.read_text(encoding="utf-8"))
    assert reads, "settings.runner_environment() no longer reads the environment: update this test"
    assert [line for line in reads if line not in inside] == []


def test_the_scan_finds_every_spelling() -> None:
    source = "\n".join([
        "import os",
        "import os.path",
        "import posix as p",
        "from os import getenv as ge, sep",
        "from os import environ",
        "a = os.environ['A']",
        "b = os.getenv('B')",
        "c = p.environ",
        "d = environ.get('D')",
        "e = ge('E') + os.environb[b'F'].decode() + sep",
    ])
    assert environment_reads(source) == [4, 5, 6, 7, 8, 9, 10]


def test_a_mapping_passed_in_is_not_a_read() -> None:
    source = "\n".join([
        "import os",
        "def f(environ):",
        "    return environ.get('A'), os.path.join('a', 'b'), os.sep",
    ])
    assert environment_reads(source) == []
