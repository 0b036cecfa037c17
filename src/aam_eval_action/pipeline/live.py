"""An agent session run for real: fresh workspace, package installed, the real CLI run, the
result made portable.

Live and re-executed sessions are the same steps (`run_session`); they differ only in how the
CLI reaches its model (`ModelRoute`): through a recording proxy to the real upstream, or to a
replay proxy answering from the recorded traffic (`pipeline/rerun.py`).

Portable means byte-stable and machine-neutral: temp paths become `$WORKSPACE`, `$HOME`
and `$TMP`, and every known secret value is replaced before the session is graded or saved.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aam_eval_action.engines.common import compact
from aam_eval_action.errors import AamEvalError
from aam_eval_action.fsutil import is_inside, runner_checkout
from aam_eval_action.graders import FileTarget, PluginGrader
from aam_eval_action.importers.claude_plugin_eval import granted as grants
from aam_eval_action.loader import LoadedCase
from aam_eval_action.package import PackageLayout, plugin_files
from aam_eval_action.pipeline import workspace
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.providers import KEY_VARS, PROVIDERS
from aam_eval_action.replay import agent_cassette, traffic_store
from aam_eval_action.replay.agent_cassette import AgentCassette, FingerprintRecord
from aam_eval_action.replay.fingerprint import Fingerprint, installs_for
from aam_eval_action.replay.history import served_by
from aam_eval_action.replay.outage import ApiDown, outage
from aam_eval_action.replay.proxy import RecordingProxy, ReplayProxy, proxy_env, upstream_for
from aam_eval_action.replay.traffic import ModelTraffic, Normaliser, Paths
from aam_eval_action.sandbox.plan import (
    Confinement,
    agent_user,
    confine,
    short_of,
    simulated_no_supervisor,
    simulated_none,
)
from aam_eval_action.session import SelfCheck, Session

if TYPE_CHECKING:
    from aam_eval_action.mocks import Served
    from aam_eval_action.pipeline.mock_agent import MockAgents, Relay

DUMMY_KEY = "aam-eval-replay-no-key"
SESSION_KEY = "aam-eval-session-key-kept-by-the-proxy"
"""What a live session's CLI holds instead of the key: the recording proxy, outside the sandbox,
puts the real key on the upstream request."""
"""The key a re-executed CLI gets: its model calls never leave the replay proxy with it."""
Proxy = RecordingProxy | ReplayProxy


@dataclass(frozen=True)
class ModelRoute:
    """How a session's CLI reaches its model: a proxy made for the session's workspace."""

    proxy: Callable[[Normaliser], Proxy]
    """Makes the (not yet started) proxy, given the normaliser of this session's paths."""
    key: str | None = None
    """The stand-in key given to the CLI (None: SESSION_KEY); the real one never enters the session."""
    recorded: Session | None = None
    """The recorded session this run re-executes (a conversation's user answers it as recorded)."""
    later: bool = False
    """A step that can wait: it takes a `--jobs` slot only when no session or judge step is
    waiting for one (a recording's self-check)."""


def live_session(
    ctx: CaseContext, loaded: LoadedCase, layout: PackageLayout | None = None
) -> tuple[Session, ModelTraffic]:
    """Run the case's prompt through the engine's real CLI, its model traffic recorded.

    `layout` is the package as installed; the baseline passes one without the skill.
    """
    from aam_eval_action.engines.base import get_engine

    s = ctx.settings
    engine = get_engine(s.engine)
    missing = engine.available()
    if missing:
        raise AamEvalError(f"{missing}; or run with --replay to use the recorded cassettes")
    key = PROVIDERS[engine.provider_for(s.model)].key_var
    if not s.agent_env.get(key):
        raise AamEvalError(
            f"{key} is not set: a live {s.engine} session needs it (set it in the environment, "
            "or run with --replay to use the recorded cassettes)"
        )
    # The real key stays with the recording proxy, outside the sandbox; the CLI gets a stand-in.
    upstream = upstream_for(s.engine, s.agent_env, key=s.agent_env[key], network=s.network_env, model=s.model)
    route = ModelRoute(lambda n: RecordingProxy(upstream, n), key=SESSION_KEY)
    session, proxy = run_session(ctx, loaded, route, layout)
    traffic = proxy.traffic()
    api_down(session, traffic)
    session.served_model = served_by(traffic, session.model or s.model)
    return session, traffic


def api_down(session: Session, traffic: ModelTraffic) -> None:
    """ApiDown when the model API, not the agent, ended the session (see `replay.outage`): the
    caller neither grades nor records it."""
    why = outage(traffic)
    if why is not None:
        gave_up = "the case timed out while the CLI retried" if session.timed_out else "the CLI gave up"
        raise ApiDown(f"{why}; {gave_up}")


def run_session(
    ctx: CaseContext, loaded: LoadedCase, route: ModelRoute, layout: PackageLayout | None = None
) -> tuple[Session, Proxy]:
    """Fresh workspace, package installed, the real CLI run with its model calls going `route`,
    in one of the run's `--jobs` slots (live, re-executed or a self-check alike)."""
    with ctx.slots.held(later=route.later):
        return _run_session(ctx, loaded, route, layout)


def _run_session(
    ctx: CaseContext, loaded: LoadedCase, route: ModelRoute, layout: PackageLayout | None = None
) -> tuple[Session, Proxy]:
    from aam_eval_action.engines.base import AgentRun, get_engine
    from aam_eval_action.engines.registry import ENGINES
    from aam_eval_action.engines.version import installed_version

    s = ctx.settings
    engine = get_engine(s.engine)
    layout = layout or s.layout
    ws = workspace.create(layout, loaded.case)
    try:
        served = serve_mocks(ctx, loaded, ws)
        if served is not None:  # shadowed servers answered by stand-ins, unmocked ones withheld
            layout = dataclasses.replace(layout, mcp=served.package_servers(layout.mcp))
        plugins = as_plugin(layout, loaded, s.engine, ws.base)
        installs = installs_for(layout, loaded.case)
        with_package = layout.installs_anything(installs)
        if with_package and not plugins:
            engine.install(layout, ws.root, installs)
        install_neighbors(layout, loaded, ws.root / ENGINES[s.engine].skills_dir)
        if with_package and not plugins:
            install_listed_plugins(layout, loaded, ws.root / ENGINES[s.engine].skills_dir)
        if served is not None:
            for plugin in plugins:
                plugin_servers(plugin, layout)
            engine.add_mcp_servers(ws.root, served.standalone)
        engine.add_mcp_servers(ws.root, loaded.case.mcp_servers)  # a Vally stimulus's, if any
        unstaged = workspace.snapshot(ws.root)
        stage(ctx, layout, loaded, ws)
        before = workspace.snapshot(ws.root)
        staged = sorted(rel for rel, digest in before.items() if unstaged.get(rel) != digest)
        proxy = route.proxy(Normaliser(Paths(ws.root, ws.home, ws.base), ctx.redactor))
        if isinstance(proxy, RecordingProxy):  # not every CLI names itself in its User-Agent
            proxy.identify(ENGINES[s.engine].cli, installed_version(ENGINES[s.engine].cli, s.runner_env))
        agents, relay = mock_agents(ctx, loaded, served)
        with proxy, relay:
            env = {k: v for k, v in s.agent_env.items() if k not in KEY_VARS}  # no provider's key
            env |= loaded.case.session_env  # checked where read: no key, URL, proxy or process variable
            env |= proxy_env(s.engine, proxy.url, s.model)
            env[PROVIDERS[engine.provider_for(s.model)].key_var] = route.key or SESSION_KEY
            execution = loaded.case.execution
            if execution is not None:
                env |= case_env(loaded.case.name, execution.env)
            if execution is not None and execution.allowed_tools is not None:
                allowed = grants(execution.allowed_tools, s.allow_tools)[0]
                if served is not None:  # a mocked tool is granted, as there
                    allowed += [t for t in served.granted(with_package) if t not in allowed]
                execution = execution.model_copy(update={"allowed_tools": allowed})
            run = AgentRun(
                prompt=loaded.case.input.prompt, model=s.model, workspace=ws.root, home=ws.home,
                env=env, timeout=s.timeout, sandbox=s.config.sandbox, runner_env=s.runner_env,
                confine=sandbox_for(ctx, ws, _port(proxy.url)), execution=execution, plugin_dirs=plugins,
                keep_trace=any(g.reads_trace() for g in loaded.graders),
                add_dirs=added_dirs(layout, loaded, ws.base), resume=history(layout, loaded, ws.home),
            )
            if loaded.case.input.conversation:
                from aam_eval_action.pipeline.conversation import converse

                session = converse(ctx, loaded, engine, run, after_turn=lambda k: _attribute(proxy, k),
                                   clean=lambda t: ctx.redactor.text(portable_text(t, ws)),
                                   recorded=route.recorded)
            else:
                session = engine.run(run)
            session.confinement = run.confine.describe() if run.confine else None
            if served is not None:
                session.mock_calls = [compact(call) for call in served.calls()]
        if agents is not None:
            agents.close()
            if relay.failure is not None:  # a replay miss or the budget, met by an agent mock
                raise relay.failure
        # A scaffold's files are recorded with the session's (graders read them), and named.
        session.files = workspace.changes(ws.root, unstaged if staged else before, looked_at(loaded.graders))
        session.staged = staged
    finally:
        if ctx.keep_workspaces:
            announce_kept(loaded, ws.root)
        else:
            ws.cleanup()
    return scrub(ctx, portable(session, ws)), proxy


def install_neighbors(layout: PackageLayout, loaded: LoadedCase, dest: Path) -> None:
    """A trigger case's neighbour skills, beside the package's, where the CLI reads project
    skills (each folder copied as it is; a link inside it is copied as a file)."""
    from aam_eval_action.replay.fingerprint import neighbors_of

    for neighbor in neighbors_of(layout, loaded.case):
        for path in sorted(p for p in neighbor.folder.rglob("*") if p.is_file()):
            target = dest / neighbor.name / path.relative_to(neighbor.folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def install_listed_plugins(layout: PackageLayout, loaded: LoadedCase, dest: Path) -> None:
    """On a CLI other than Claude Code, the skills of the other plugins a `claude plugin eval`
    case lists (`plugins:`), beside the package's where that CLI reads project skills: each
    folder that holds a SKILL.md, as it is. Their hooks, agents and MCP servers are Claude Code
    plugin parts these CLIs do not load."""
    listed = loaded.case.execution.plugins if loaded.case.execution is not None else ()
    for other in (p for p in listed if p != layout.base):
        files = plugin_files(layout.root, other)
        folders = {Path(rel).parent for rel in files if Path(rel).name == "SKILL.md"}
        for rel in files:
            folder = next((f for f in Path(rel).parents if f in folders), None)
            if folder is not None:
                target = dest / folder.name / Path(rel).relative_to(folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(layout.root / rel, target)


def _attribute(proxy: Proxy, turn: int) -> None:
    """A re-executed conversation's divergence, once it happened, is told which turn it was in."""
    if isinstance(proxy, ReplayProxy) and proxy.divergence is not None and proxy.divergence.user_turn is None:
        proxy.divergence = proxy.divergence.model_copy(update={"user_turn": turn})


def serve_mocks(ctx: CaseContext, loaded: LoadedCase, ws: workspace.Workspace) -> Served | None:
    """A `claude plugin eval` case's mocked MCP servers: each active one's stand-in spec written
    beside the workspace, its calls logged under the session's HOME (the stand-in runs in the
    session's sandbox). None for a case without mocks."""
    from aam_eval_action import mocks

    s = ctx.settings
    if s.mocks == "off":  # no stand-in: the plugin's own servers start, in the sandbox
        return None
    notes: list[str] = []
    servers = mocks.for_case(s.package.layout, loaded.case.execution, s.allow_real_servers, notes)
    for note in notes:
        ctx.warn_once(f"case {loaded.case.name!r}: {note}")
    if not servers:
        return None
    calls = ws.home / ".aam-eval" / "mock-calls.jsonl"
    return mocks.serve(servers, s.package.layout.root, ws.base / "mocks", calls)


def looked_at(graders: Sequence[PluginGrader]) -> frozenset[str]:
    """The files `claude plugin eval` graders read (`{source: file, path}`): kept whole in the
    record even when not text, so that an image is shown to the judge on replay as live."""
    targets = (g.target_of for g in graders)
    return frozenset(t.path for t in targets if isinstance(t, FileTarget) and t.path)


def mock_agents(ctx: CaseContext, loaded: LoadedCase,
                served: Served | None) -> tuple[MockAgents | None, Relay]:
    """The model playing the case's agent mocks, and the relay their stand-ins hand calls to
    (nothing to relay: None and a relay that answers nothing)."""
    from aam_eval_action.pipeline.mock_agent import MockAgents, Relay

    if served is None or not served.agents:
        return None, Relay(None, lambda call: ("tool_error", "no agent mock"))
    agents = MockAgents(ctx, loaded, served)
    return agents, Relay(served.relay, agents)


def loads_as_plugin(layout: PackageLayout, loaded: LoadedCase, engine: str) -> bool:
    """Whether the case's engine loads the package as a plugin (a `claude plugin eval` case of a
    Claude Code plugin, on Claude Code): it then lists the plugin's skills as `plugin:skill`."""
    from aam_eval_action.engines.registry import ENGINES

    return (loaded.case.execution is not None and ENGINES[engine].claude_native
            and layout.kind == "claude-plugin" and layout.installs_anything(loaded.case.installs))


def as_plugin(layout: PackageLayout, loaded: LoadedCase, engine: str, base: Path) -> tuple[Path, ...]:
    """A `claude plugin eval` case of a Claude Code plugin, run on Claude Code: the plugin is
    copied beside the workspace (read-only there) and loaded with `--plugin-dir`, as that runner
    loads it, so the CLI names its skills `plugin:skill` and its MCP tools
    `mcp__plugin_<plugin>_<server>__<tool>`. Nothing for any other case, engine or layout, or for
    the arm without the plugin."""
    target, execution = loaded.case.installs, loaded.case.execution
    if execution is None or not loads_as_plugin(layout, loaded, engine):
        return ()
    listed = execution.plugins
    folder = base / "plugin" / (layout.name or "plugin")
    loads: list[Path] = []
    if not listed or layout.base in listed:
        for rel in layout.files_for(target):
            source = layout.root / rel
            if not source.resolve().is_relative_to(layout.plugin_root.resolve()):
                continue  # a component outside the plugin's folder is not part of it
            dest = folder / source.relative_to(layout.plugin_root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
        loads.append(folder)
    for n, other in enumerate(p for p in listed if p != layout.base):  # the other plugins it lists
        copy = base / "plugin" / f"{n + 1}-{Path(other).name}"
        for rel in plugin_files(layout.root, other):
            dest = copy / Path(rel).relative_to(other)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(layout.root / rel, dest)
        loads.append(copy)
    return tuple(loads)



def plugin_servers(folder: Path, layout: PackageLayout) -> None:
    """The copy's MCP servers are the layout's (a mocked one's stand-in in its place): one
    `.mcp.json`, the manifest's own `mcpServers` taken out."""
    manifest = folder / ".claude-plugin" / "plugin.json"
    if manifest.is_file():
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "mcpServers" in data:
            del data["mcpServers"]
            manifest.write_text(json.dumps(data, indent=2), encoding="utf-8")
    servers = {k: v for k, v in layout.mcp.items() if isinstance(v, dict)}
    if servers:
        (folder / ".mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    elif (folder / ".mcp.json").is_file():
        (folder / ".mcp.json").unlink()


def stage(ctx: CaseContext, layout: PackageLayout, loaded: LoadedCase, ws: workspace.Workspace) -> None:
    """A `claude plugin eval` case's scaffold script, run in the fresh workspace before the
    session, inside the session's sandbox (no network, no key, writes to its folders only), and
    only when the run was given `--scaffold`: a repository's script is run on nobody's say but
    the operator's. What it leaves is the workspace the session starts from. A failing script
    fails the case with its exit status and the end of its stderr."""
    from aam_eval_action.engines.process import run_process

    if loaded.case.git_tree is not None:  # a Vally stimulus's environment.git
        from aam_eval_action.vally import git_tree

        git_tree.export(layout.root, *loaded.case.git_tree, ws.root)
    copy_staged(layout, loaded, ws.root)
    execution = loaded.case.execution
    s = ctx.settings
    if loaded.case.setup_commands:
        _setup_commands(ctx, loaded, ws)
    if execution is None or not execution.scaffold:
        return
    if not s.scaffold:
        ctx.warn_once(f"case {loaded.case.name!r}: its scaffold_script is not run without --scaffold "
                      "(a script of the repository: pass it only for suites you trust); the case runs "
                      "against an unstaged workspace")
        return
    env = {"PATH": s.runner_env.get("PATH", "/usr/bin:/bin"), "HOME": str(ws.home),
           "TMPDIR": str(ws.base / "tmp"), "LANG": "C.UTF-8"}
    script = str(layout.root / execution.scaffold)
    confined = sandbox_for(ctx, ws, None)
    done = run_process(["bash", script], cwd=ws.root, env=env, timeout=s.timeout, confine=confined)
    if done.exit_code != 0:
        tail = done.stderr.strip()[-500:]
        raise AamEvalError(f"scaffold failed (exit {done.exit_code}): {tail or '(no stderr)'}")


def copy_staged(layout: PackageLayout, loaded: LoadedCase, dest_root: Path) -> None:
    """A Vally stimulus's `environment.files`, copied from the repository into the workspace
    (both sides checked to stay inside; no link is followed out)."""
    from aam_eval_action.layouts.common import refuse_link_out

    for src, dest in loaded.case.staged_files:
        source = layout.root / src
        refuse_link_out(layout.root, source)
        target = dest_root / dest
        if not is_inside(target, dest_root):
            raise AamEvalError(f"environment.files: {dest!r} leaves the workspace")
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        else:
            raise AamEvalError(f"environment.files: {src!r} not found in the repository")


def _setup_commands(ctx: CaseContext, loaded: LoadedCase, ws: workspace.Workspace) -> None:
    """A Vally stimulus's `environment.commands`, run one by one in the workspace before the
    session, in its sandbox, and only with `--scaffold`, as a scaffold script is."""
    from aam_eval_action.engines.process import run_process

    s = ctx.settings
    if not s.scaffold:
        ctx.warn_once(f"case {loaded.case.name!r}: its environment.commands are not run without --scaffold "
                      "(commands of the repository: pass it only for suites you trust)")
        return
    env = {"PATH": s.runner_env.get("PATH", "/usr/bin:/bin"), "HOME": str(ws.home),
           "TMPDIR": str(ws.base / "tmp"), "LANG": "C.UTF-8"}
    for command in loaded.case.setup_commands:
        done = run_process(["/bin/sh", "-c", command], cwd=ws.root, env=env, timeout=s.timeout,
                           confine=sandbox_for(ctx, ws, None))
        if done.exit_code != 0:
            tail = done.stderr.strip()[-500:]
            raise AamEvalError(f"environment command failed (exit {done.exit_code}): {command[:80]}: "
                               f"{tail or '(no stderr)'}")


def history(layout: PackageLayout, loaded: LoadedCase, home: Path) -> str | None:
    """A `claude plugin eval` case's `context.history_file`: copied into the session's HOME (the
    CLI continues it there) and resumed, as that runner resumes it (`--resume <file>`)."""
    execution = loaded.case.execution
    if execution is None or execution.history is None:
        return None
    from aam_eval_action.layouts.common import refuse_link_out

    source = layout.root / execution.history
    refuse_link_out(layout.root, source)
    copy = home / "history" / source.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copy)
    return str(copy)


def added_dirs(layout: PackageLayout, loaded: LoadedCase, base: Path) -> tuple[Path, ...]:
    """A `claude plugin eval` case's `context.add_dirs`, copied beside the workspace (read-only
    there: outside the sandbox's writable folders; links are not followed out of the repository),
    as the folders the session may also read."""
    execution = loaded.case.execution
    if execution is None or not execution.add_dirs:
        return ()
    from aam_eval_action.layouts.common import refuse_link_out

    out = []
    for n, rel in enumerate(execution.add_dirs):
        dest = base / "add-dirs" / f"{n}-{Path(rel).name}"
        for source in sorted(p for p in (layout.root / rel).rglob("*") if p.is_file()):
            refuse_link_out(layout.root, source)
            target = dest / source.relative_to(layout.root / rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        dest.mkdir(parents=True, exist_ok=True)
        out.append(dest)
    return tuple(out)


def case_env(name: str, env: dict[str, str]) -> dict[str, str]:
    """A `claude plugin eval` case's `execution.env`: `EVAL_*` variables only, as that runner
    refuses any other (a key must come from the runner, never from the repository)."""
    for key in env:
        if not key.startswith("EVAL_"):
            raise AamEvalError(f"case {name!r} execution.env key {key!r} is not allowed: only EVAL_* keys "
                               "can be set from case.yaml; anything else must come from the runner's "
                               "environment")
    return dict(env)


def sandbox_for(ctx: CaseContext, ws: workspace.Workspace, proxy_port: int | None) -> Confinement:
    """The session's OS sandbox: it writes its workspace, its fresh HOME and temp folder, and
    reaches nothing but its model proxy when `sandbox.network` is false. Under
    `sandbox.enforce: required`, a sandbox that falls short is refused (the case errors)."""
    from aam_eval_action.engines.registry import ENGINES

    s = ctx.settings
    network = s.config.sandbox.network
    try:
        user = agent_user(s.runner_env)
    except ValueError as exc:
        raise AamEvalError(f"{exc} (the runner's environment)") from None
    roots = writable_roots(ws.root, s.config.sandbox.writable_paths)
    made = confine([*roots, ws.home, ws.base / "tmp"], proxy_port, network, simulated_none(s.runner_env),
                   user, no_supervisor=simulated_no_supervisor(s.runner_env))
    if ENGINES[s.engine].enforces_no_network and made.writes == "check":
        # Codex runs with its own sandbox off inside ours (its bubblewrap cannot nest in
        # Landlock, nor its Seatbelt in ours); where ours enforces nothing, it keeps its own.
        return dataclasses.replace(made, by=f"{s.engine} sandbox", namespace=False)
    missing = short_of(made, network)
    if missing and s.sandbox_enforce == "required":
        raise AamEvalError(f"sandbox.enforce is required, but {missing}; run where Landlock is available "
                           "(Linux 5.13, or 6.7 for the network), or set sandbox.enforce: best-effort")
    if missing:
        ctx.warn_once(f"the agent runs less confined than eval-config's sandbox asks: {missing} "
                      f"(reported per case as {made.describe()!r}; sandbox.enforce: required refuses)")
    return made


CLI_STATE = (".claude", ".gemini", ".copilot", ".codex")
"""Folders a CLI keeps its own state in inside the workspace (settings it writes back, a
session's local files): writable whatever `writable-paths` says, as the session's HOME is."""


def writable_roots(root: Path, writable_paths: list[str] | None) -> list[Path]:
    """Where the OS lets the session write in its workspace: all of it, or exactly the
    `writable-paths` folders (made when missing) and the CLIs' state folders the install made.
    A writable path that is a file (or a missing name with a suffix, `CHANGELOG.md`) opens its
    folder: the OS rule is per folder (an editor writes a file beside it, then renames it), and
    the `sandbox` check still fails a write to any other file there."""
    if writable_paths is None:
        return [root]
    found = []
    for rel in writable_paths:
        path = root / rel
        if path.is_file() or (not path.exists() and path.suffix):
            path = path.parent
        path.mkdir(parents=True, exist_ok=True)
        found.append(path)
    # Only those the installed package made: a folder made for the rule would be one more
    # the agent sees (Gemini CLI lists the workspace's folders in its prompt).
    found += [root / name for name in CLI_STATE if (root / name).is_dir()]
    return list(dict.fromkeys(found))


def _port(url: str) -> int | None:
    """The port of the session's model proxy, the one TCP port its sandbox may connect to."""
    import urllib.parse

    return urllib.parse.urlsplit(url).port


def restore_for_debugging(ctx: CaseContext, loaded: LoadedCase, session: Session) -> None:
    """--keep-workspaces on replay: the workspace as the recorded session left it."""
    s = ctx.settings
    ws = workspace.create(s.package.layout, loaded.case)
    try:
        workspace.restore(ws.root, session.files)
    except workspace.OutsideWorkspace as exc:
        path = agent_cassette.session_path(s.cassettes, loaded.case.name, s.cassette_stem)
        raise workspace.OutsideWorkspace(f"{path}: {exc}") from None
    announce_kept(loaded, ws.root)


def announce_kept(loaded: LoadedCase, root: Path) -> None:
    print(f"aam-eval: kept workspace of {loaded.case.name}: {root}", file=sys.stderr, flush=True)


def portable(session: Session, ws: workspace.Workspace) -> Session:
    """Temp paths replaced by placeholders, so recordings are byte-stable and machine-neutral."""
    data = json.dumps(session.model_dump(mode="json"))
    for path, name in ((ws.root, "$WORKSPACE"), (ws.home, "$HOME"), (ws.base, "$TMP")):
        for variant in {str(path), os.path.realpath(path)}:
            data = data.replace(json.dumps(variant)[1:-1], name)
    return Session.model_validate(json.loads(data))


def portable_text(text: str, ws: workspace.Workspace) -> str:
    """A text with the session's temp paths replaced by their placeholders (as `portable` does)."""
    for path, name in ((ws.root, "$WORKSPACE"), (ws.home, "$HOME"), (ws.base, "$TMP")):
        for variant in {str(path), os.path.realpath(path)}:
            text = text.replace(variant, name)
    return text


def scrub(ctx: CaseContext, session: Session) -> Session:
    """The session with every known secret value replaced, before it is graded or written."""
    return Session.model_validate(ctx.redactor.deep(session.model_dump()))


def save_sessions(
    ctx: CaseContext, name: str, fp: Fingerprint, sessions: list[Session], traffic: list[ModelTraffic],
    variant: str = "", checks: list[SelfCheck] | None = None,
) -> None:
    """Write the case's agent cassette (untouched when only volatile fields differ), its model
    traffic's shared entries in the cassettes directory's store."""
    s, checkout = ctx.settings, runner_checkout(ctx.settings.runner_env)
    recorded = AgentCassette(
        model_traffic=traffic_store.save_traffic(s.cassettes, traffic, checkout) if traffic else None,
        case=name, engine=s.engine,
        recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        fingerprint=FingerprintRecord(digest=fp.digest, inputs=fp.inputs),
        attempts=sessions, provenance=s.provenance(), self_check=checks,
    )
    path = agent_cassette.session_path(s.cassettes, name, s.cassette_stem, variant)
    agent_cassette.save(path, recorded, s.cassettes, checkout=checkout)
