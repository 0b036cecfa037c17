"""`aam-eval schema`: JSON Schema generated from the pydantic models, for editor completion."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aam_eval_action.fsutil import atomic_write, runner_checkout
from aam_eval_action.report import Report
from aam_eval_action.sensitivity_model import Sensitivity
from aam_eval_action.settings import runner_environment
from aam_eval_action.spec import Case, EvalConfig

KINDS: dict[str, type[BaseModel]] = {"case": Case, "eval-config": EvalConfig, "report": Report,
                                     "sensitivity": Sensitivity}
FILES = {"case": "case.schema.json", "eval-config": "eval-config.schema.json",
         "report": "report.schema.json", "sensitivity": "sensitivity.schema.json"}


def schema_for(kind: str) -> dict[str, Any]:
    model = KINDS[kind]
    described(model)
    data: dict[str, Any] = model.model_json_schema(by_alias=True, mode="validation")
    data["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    data["$id"] = f"https://aam-eval-action.invalid/schemas/{FILES[kind]}"
    return data


def described(model: type[BaseModel]) -> None:
    """Give every field of `model` and of the models it holds its attribute docstring as its
    description, then rebuild them (inner models first) so the schema carries them.

    Done here rather than by pydantic's `use_attribute_docstrings` when each model is defined:
    reading them parses every model's source, a cost every command would pay at start-up for
    what only the schemas show.
    """
    models = _models(model, [])
    for cls in models:
        docs = _attribute_docs(cls)
        for name, info in cls.model_fields.items():
            if info.description is None and name in docs:
                info.description = docs[name]
    for cls in models:
        cls.model_rebuild(force=True)


def _models(model: type[BaseModel], seen: list[type[BaseModel]]) -> list[type[BaseModel]]:
    """`model` and every model its fields hold, innermost first (each once)."""
    if model in seen:
        return []
    seen.append(model)
    found: list[type[BaseModel]] = []
    for info in model.model_fields.values():
        for inner in _classes(info.annotation):
            found += _models(inner, seen)
    return [*found, model]


def _classes(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [c for arg in typing.get_args(annotation) for c in _classes(arg)]


def _attribute_docs(cls: type[BaseModel]) -> dict[str, str]:
    """`name: type` followed by a string literal, in the class and its model bases."""
    docs: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if issubclass(k, BaseModel) and k is not BaseModel]):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def render(kind: str) -> str:
    return json.dumps(schema_for(kind), indent=2, sort_keys=True) + "\n"


def schema(kind: str, output_dir: Path | None) -> int:
    kinds = list(KINDS) if kind == "all" else [kind]
    checkout = runner_checkout(runner_environment())
    for k in kinds:
        if output_dir is None:
            print(render(k), end="")
        else:
            atomic_write(output_dir / FILES[k], render(k), checkout)
            print(f"wrote {output_dir / FILES[k]}")
    return 0
