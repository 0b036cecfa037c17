"""Fingerprints: a hash of every input that shapes a session, with per-input hashes kept.

Keeping each input's hash lets a replay miss say *which* input changed. Inputs that are
short labels (engine, model, target) are kept as their value so the message can show it.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.fsutil import sha256_bytes, sha256_text
from aam_eval_action.loader import workspace_file_source
from aam_eval_action.package import PackageLayout, plugin_files
from aam_eval_action.spec import Case, EvalConfig

HASH_CHARS = 16
JUDGE_PROMPT_VERSION = "1"
VALUE_INPUTS = ("engine", "model", "target", "judge-model", "judge-prompt", "judge-votes", "baseline")
RERUNNABLE = ("package:", "neighbor:", "fixture:", "workspace-file:", "env:", "sandbox", "turns", "user")
"""Inputs the agent runs or reads (package files, fixtures, workspace files, env, sandbox), and a
conversation's later turns (scripted follow-ups, the simulated user): a change to them reaches
the model, if at all, only through what the CLI's tools produce or at a later turn, so
re-executing the CLI against the recorded traffic tells whether and where it matters. Any
other input (prompt, engine, model, target) changes the very first request: the recording
cannot answer it."""


@dataclass(frozen=True)
class Fingerprint:
    """The combined digest and the per-input hashes (or values) it was made from."""

    digest: str
    inputs: dict[str, str]

    @classmethod
    def of(cls, inputs: dict[str, str]) -> Fingerprint:
        canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
        return cls(sha256_text(canonical)[:32], dict(sorted(inputs.items())))


def _h(data: bytes) -> str:
    return sha256_bytes(data)[:HASH_CHARS]


_HASHES: dict[tuple[str, int, int], str] = {}
_HASHES_LOCK = threading.Lock()


def file_hash(path: Path) -> str:
    """A package file's hash, read once per run while its size and modification time stay."""
    name = os.fspath(path)
    stat = os.stat(name)
    key = (name, stat.st_mtime_ns, stat.st_size)
    with _HASHES_LOCK:
        found = _HASHES.get(key)
    if found is None:
        found = _h(path.read_bytes())
        with _HASHES_LOCK:
            _HASHES[key] = found
    return found


def agent_fingerprint(
    layout: PackageLayout, case: Case, config: EvalConfig, engine: str, model: str, scaffold: bool = False,
    allow_tools: tuple[str, ...] = (), mocks: str = "record",
) -> Fingerprint:
    """Everything that reaches the agent: prompt, files, package files, engine, model, sandbox, env."""
    inputs = {
        "prompt": _h(case.input.prompt.encode()),
        "engine": engine,
        "model": model,
        "target": case.target or "",
        # What the agent may reach and write; whether a weaker sandbox is refused is not an input.
        "sandbox": _h(config.sandbox.model_dump_json(by_alias=True, exclude={"enforce"}).encode()),
    }
    for rel in case.input.files:
        inputs[f"fixture:{rel}"] = _h((layout.fixtures(case.files_root) / rel).read_bytes())
    for rel in case.input.workspace_files:
        source = workspace_file_source(layout, rel)
        inputs[f"workspace-file:{rel}"] = _h(source.read_bytes() if source else b"")
    for src, dest in case.staged_files:  # a Vally stimulus's environment.files
        source = layout.root / src
        found = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
        for path in found:
            inputs[f"staged:{dest}/{path.relative_to(source).as_posix()}" if source.is_dir() else
                   f"staged:{dest}"] = file_hash(path) if path.is_file() else "missing"
    if case.git_tree is not None:  # the tree a Vally stimulus's workspace starts from
        from aam_eval_action.vally import git_tree

        inputs["git-tree"] = git_tree.tree(layout.root, *case.git_tree)
    if case.session_env:  # a Vally stimulus's environment.env and MCP servers reach the agent
        inputs["session-env"] = _h(json.dumps(case.session_env, sort_keys=True).encode())
    if case.mcp_servers:
        inputs["mcp-servers"] = _h(json.dumps(case.mcp_servers, sort_keys=True).encode())
    if case.setup_commands:
        inputs["setup-commands"] = _h(json.dumps(list(case.setup_commands)).encode())
    for rel in layout.files_for(installs_for(layout, case)):
        inputs[f"package:{rel}"] = file_hash(layout.root / rel)
    for neighbor in neighbors_of(layout, case):  # the skills installed beside it are listed with its own
        for path in sorted(p for p in neighbor.folder.rglob("*") if p.is_file()):
            rel = path.relative_to(neighbor.folder).as_posix()
            inputs[f"neighbor:{neighbor.name}/{rel}"] = file_hash(path)
    # A conversation's later turns: only conversation cases carry them (one-turn fingerprints
    # stay as they were). Its per-turn checks are not inputs: they grade, they do not reach the agent.
    if case.input.turns:
        inputs["turns"] = _h(json.dumps([t.message for t in case.input.turns]).encode())
    if case.input.user is not None:
        user = {"case": case.input.user.model_dump(by_alias=True),
                "config": config.user.model_dump(by_alias=True)}
        inputs["user"] = _h(json.dumps(user, sort_keys=True).encode())
    if case.execution is not None:  # a claude plugin eval case's CLI options reach the agent
        inputs["execution"] = _h(case.execution.model_dump_json(by_alias=True).encode())
        if allow_tools and case.execution.allowed_tools is not None:  # `--allow-tools`: what it may use
            inputs["allow-tools"] = _h(json.dumps(sorted(allow_tools)).encode())
        if case.execution.scaffold:  # the script that stages its workspace, when it runs (--scaffold)
            script = layout.root / case.execution.scaffold
            inputs["scaffold"] = ("missing" if not script.is_file() else file_hash(script)) if scaffold \
                else "not run"
        if case.execution.history:  # the recorded session it resumes
            inputs["history"] = file_hash(layout.root / case.execution.history)
        if case.execution.mocks and mocks == "off":  # `--mocks off`: its servers' own answers
            inputs["mocks"] = "off"
        elif case.execution.mocks:  # what its mocked MCP servers answer
            from aam_eval_action.mocks import load

            inputs["mocks"] = load(layout.root, list(case.execution.mocks)).digest(layout.root)
        for folder in case.execution.plugins:  # the other plugins it loads
            if folder != layout.base:
                for rel in plugin_files(layout.root, folder):
                    inputs[f"plugin:{rel}"] = file_hash(layout.root / rel)
        for folder in case.execution.add_dirs:  # and what it may read besides its workspace
            for path in sorted(p for p in (layout.root / folder).rglob("*") if p.is_file()):
                inputs[f"add-dir:{path.relative_to(layout.root).as_posix()}"] = file_hash(path)
    if layout.baseline:  # only baseline sessions carry it, so existing fingerprints stay as they are
        inputs["baseline"] = layout.baseline_label(case.target)
    secret = set(config.secret_env)
    for name, value in config.env.items():
        # A secret's value never enters a cassette, not even hashed: only its presence counts.
        inputs[f"env:{name}"] = "<secret>" if name in secret else _h(value.encode())
    return Fingerprint.of(inputs)


def neighbors_of(layout: PackageLayout, case: Case) -> tuple[Any, ...]:
    """The neighbour skills a case's session installs: a trigger case's, beside the package."""
    from aam_eval_action.spec import trigger_expectation

    return layout.neighbors if layout.neighbors and trigger_expectation(case.expected) is not None else ()


def installs_for(layout: PackageLayout, case: Case) -> str | None:
    """The target whose files a session installs: a trigger case with neighbours installs the whole
    package, as users have it beside them (its skills' listing is the one measured)."""
    return None if neighbors_of(layout, case) else case.installs


def judge_fingerprint(case: Case, judge_model: str, agent: Fingerprint) -> Fingerprint:
    """What shapes the judge's verdict: criteria, judge model, prompt version, the session judged,
    and the number of votes when more than one is asked."""
    inputs = {
        "criteria": _h(case.judge.criteria.encode() if case.judge else b""),
        "judge-model": judge_model,
        "judge-prompt": JUDGE_PROMPT_VERSION,
        "agent-session": agent.digest[:HASH_CHARS],
    }
    if case.judge and case.judge.votes != 1:
        inputs["judge-votes"] = str(case.judge.votes)
    return Fingerprint.of(inputs)


def explain(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Human phrases for what changed between a recorded and a current fingerprint."""
    changes: list[str] = []
    for key in sorted(set(recorded) | set(current)):
        old, new = recorded.get(key), current.get(key)
        if old == new:
            continue
        label = _label(key)
        if old is None:
            changes.append(f"{label} was added")
        elif new is None:
            changes.append(f"{label} was removed")
        elif key in VALUE_INPUTS:
            changes.append(f"{label} changed ({old or 'none'} → {new or 'none'})")
        else:
            changes.append(f"{label} changed")
    return changes


def not_rerunnable(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Changed inputs that re-execution cannot absorb (see RERUNNABLE), as human phrases."""
    changed = {k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k)}
    blocking = {k for k in changed if not k.startswith(RERUNNABLE)}
    return explain({k: v for k, v in recorded.items() if k in blocking},
                   {k: v for k, v in current.items() if k in blocking})


def _label(key: str) -> str:
    kind, _, rel = key.partition(":")
    if kind == "fixture":
        return f"fixture {rel}"
    if kind == "workspace-file":
        return f"workspace file {rel}"
    if kind == "package":
        what = "skill file" if rel.startswith("skills/") else "package file"
        return f"{what} {rel}"
    if kind == "env":
        return f"env {rel}"
    if kind == "neighbor":
        return f"neighbour skill file {rel}"
    names = {
        "prompt": "the prompt", "criteria": "judge criteria", "agent-session": "the agent session",
        "judge-model": "judge model", "judge-prompt": "judge prompt version",
        "judge-votes": "judge votes", "baseline": "baseline install",
        "turns": "the follow-up turns", "user": "the simulated user",
    }
    return names.get(key, key)
