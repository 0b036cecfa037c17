"""`python -I -m aam_eval_action.sandbox.enter SPEC -- ARGV...`: confine this process with
Landlock as SPEC (JSON) says, then become ARGV. Everything ARGV starts inherits the confinement:
the agent CLI, its tools, hooks, scripts and MCP servers."""

from __future__ import annotations

import json
import os
import sys

from aam_eval_action.sandbox.landlock import LandlockError, restrict_self

FAILED = 126
"""The exit status when the sandbox could not be entered: the CLI never ran."""


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m aam_eval_action.sandbox.enter SPEC -- ARGV...", file=sys.stderr)
        return 2
    spec = json.loads(argv[1])
    try:
        restrict_self(int(spec["abi"]), spec["writable"], spec.get("tcp_ports"))
    except LandlockError as exc:
        print(f"aam-eval sandbox: not entered: {exc}", file=sys.stderr)
        return FAILED
    os.execvp(argv[3], argv[3:])
    return FAILED  # execvp does not return


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
