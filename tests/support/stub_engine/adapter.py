"""The stub engine's adapter: the `Engine` interface over `cli.py`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aam_eval_action.engines.base import AgentRun
from aam_eval_action.engines.common import base_env, direct_loopback, finish, new_session
from aam_eval_action.engines.install import copy_skills
from aam_eval_action.engines.process import run_process
from aam_eval_action.package import PackageLayout
from aam_eval_action.session import Session, ToolCall

CLI = Path(__file__).with_name("cli.py")


class StubCli:
    name = "stub-cli"
    provider = "anthropic"
    default_model = "claude-sonnet-4-6"

    def provider_for(self, model: str) -> str:
        return self.provider

    def install(self, package: PackageLayout, workspace: Path, target: str | None) -> None:
        copy_skills(package, target, workspace / ".stub" / "skills")

    def add_mcp_servers(self, workspace: Path, servers: dict[str, Any]) -> None:
        """It has no MCP client."""

    def run(self, run: AgentRun) -> Session:
        env = direct_loopback(base_env(run) | run.env)
        done = run_process([sys.executable, "-I", str(CLI), run.prompt, run.model], cwd=run.workspace, env=env,
                           timeout=run.timeout, confine=run.confine)
        session = new_session(self.name, self.provider, run, done, "1.0.0")
        for line in done.stdout.splitlines():
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("type") == "tool":
                session.tool_calls.append(ToolCall(name=event["name"], input=event["input"]))
            elif event.get("type") == "result":
                session.output = event["text"]
        finish(session, done, run.timeout)
        return session

    def available(self) -> str | None:
        return None
