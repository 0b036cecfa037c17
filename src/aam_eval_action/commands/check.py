"""`aam-eval check`: static validation of the package; no agent, no model."""

from __future__ import annotations

import sys
from pathlib import Path

from aam_eval_action.engines.registry import check_engine_name
from aam_eval_action.errors import EXIT_OK, EXIT_USAGE
from aam_eval_action.loader import load_package
from aam_eval_action.settings import Overrides, check_judge, resolve_matrix


def check(package: Path) -> int:
    loaded = load_package(package)
    check_engine_name(loaded.config.engine, loaded.config_location("engine"))
    judge_at = loaded.config_location("judge") if loaded.config.judge else None
    for settings in resolve_matrix(loaded, Overrides(), {}):  # every engine + model of the run
        check_judge(settings, judge_at)
    for err in loaded.errors:
        print(err, file=sys.stderr)
    for lc in loaded.cases:
        print(f"ok  {lc.case.name}  ({lc.file}:{lc.line})")
    ok = not loaded.errors
    print(f"{len(loaded.cases)} valid case(s), {len(loaded.errors)} error(s)")
    return EXIT_OK if ok else EXIT_USAGE
