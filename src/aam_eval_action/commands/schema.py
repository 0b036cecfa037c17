"""`aam-eval schema`: JSON Schema generated from the pydantic models, for editor completion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aam_eval_action.fsutil import atomic_write, runner_checkout
from aam_eval_action.report import Report
from aam_eval_action.settings import runner_environment
from aam_eval_action.spec import Case, EvalConfig

KINDS: dict[str, type[BaseModel]] = {"case": Case, "eval-config": EvalConfig, "report": Report}
FILES = {"case": "case.schema.json", "eval-config": "eval-config.schema.json",
         "report": "report.schema.json"}


def schema_for(kind: str) -> dict[str, Any]:
    model = KINDS[kind]
    data: dict[str, Any] = model.model_json_schema(by_alias=True, mode="validation")
    data["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    data["$id"] = f"https://aam-eval-action.invalid/schemas/{FILES[kind]}"
    return data


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
