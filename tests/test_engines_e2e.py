"""The real agent CLIs (`claude`, `codex`) against the scripted model server on 127.0.0.1.

Each test installs a small package fixture into a fresh workspace, runs one real session and
checks what the engine parsed from the CLI's event stream. A test is skipped, with the reason,
only when its CLI is not on PATH.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from aam_eval_action.engines.base import AgentRun, Engine, get_engine
from aam_eval_action.layouts.detect import read_package
from aam_eval_action.package import PackageLayout
from aam_eval_action.session import Session
from aam_eval_action.settings import runner_environment
from aam_eval_action.spec import Sandbox
from aam_eval_action.testing.model_server import ModelServer, all_text

from conftest import installed

FIXTURES = Path(__file__).parent / "fixtures"
SKILL_PKG = read_package(FIXTURES / "engine-skill-pkg")
HOOK_PKG = read_package(FIXTURES / "engine-hook-pkg")
MCP_PKG = read_package(FIXTURES / "engine-mcp-pkg")
ENGINES = ("claude-code", "codex")

pytestmark = pytest.mark.cli


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    return installed(request.param)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def agent_run(
    engine: Engine,
    server: ModelServer,
    tmp_path: Path,
    prompt: str,
    timeout: float = 60,
    **sandbox: object,
) -> AgentRun:
    """A run against the scripted server, with its own workspace and HOME under tmp_path."""
    env = {
        "ANTHROPIC_API_KEY": server.api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "OPENAI_API_KEY": server.api_key,
        "OPENAI_BASE_URL": server.url + "/v1",
    }
    return AgentRun(
        prompt=prompt,
        model=engine.default_model,
        workspace=tmp_path / "ws",
        home=tmp_path / "home",
        env=env,
        runner_env=runner_environment(),
        timeout=timeout,
        sandbox=Sandbox.model_validate(sandbox),
    )


def run_case(engine: Engine, package: PackageLayout, run: AgentRun, target: str | None) -> Session:
    run.workspace.mkdir(parents=True, exist_ok=True)
    run.home.mkdir(parents=True, exist_ok=True)
    engine.install(package, run.workspace, target)
    return engine.run(run)


def names(session: Session) -> list[str]:
    return [call.name for call in session.tool_calls]


# --- install -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENGINES)
def test_install_puts_only_the_target_skill_and_the_rules_where_the_cli_reads_them(
    name: str, tmp_path: Path
) -> None:
    get_engine(name).install(SKILL_PKG, tmp_path, "skill:greeter")
    skills = tmp_path / (".claude/skills" if name == "claude-code" else ".agents/skills")
    assert sorted(p.name for p in skills.iterdir()) == ["greeter"]
    notes = (tmp_path / ("CLAUDE.md" if name == "claude-code" else "AGENTS.md")).read_text()
    assert "TONE-RULE-7" in notes and "AGENTS-MD-3" in notes


def test_claude_install_converts_commands_agents_and_hooks(tmp_path: Path) -> None:
    engine = get_engine("claude-code")
    engine.install(SKILL_PKG, tmp_path, None)
    engine.install(HOOK_PKG, tmp_path, None)
    assert (tmp_path / ".claude/commands/greet.md").is_file()
    reviewer = (tmp_path / ".claude/agents/reviewer.md").read_text()
    assert reviewer.startswith("---\nname: reviewer\ndescription: Reviews greetings for tone.\n")
    assert "tools: Read, Grep\n" in reviewer and "You review greetings." in reviewer
    settings = (tmp_path / ".claude/settings.json").read_text()
    assert "CLAUDE_PLUGIN_ROOT" not in settings
    assert str(tmp_path.resolve() / ".aam/package/hooks/protect.sh") in settings


# --- sessions ----------------------------------------------------------------------------


def test_skill_case_writes_the_file_and_reports_the_session(
    engine: Engine, server: ModelServer, tmp_path: Path
) -> None:
    server.add({
        "match": "Greet the platform team",
        "agent": [
            {"skill": "greeter"},
            {"write": {"path": "output/result.txt", "content": "Hello, platform team!"}},
            {"text": "Wrote the greeting to output/result.txt."},
        ],
    })  # fmt: skip
    run = agent_run(engine, server, tmp_path, "Greet the platform team.")
    started = time.monotonic()
    session = run_case(engine, SKILL_PKG, run, "skill:greeter")
    print(f"{engine.name}: one scripted session took {time.monotonic() - started:.2f} s")

    assert (run.workspace / "output/result.txt").read_text() == "Hello, platform team!"
    assert session.output == "Wrote the greeting to output/result.txt."
    assert not session.is_error and session.exit_code == 0 and session.error is None
    assert session.model == engine.default_model
    assert session.session_id and session.runtime_version
    assert session.usage is not None and session.usage.input_tokens > 0
    assert not session.hook_blocked
    if engine.name == "claude-code":
        assert names(session) == ["Skill", "Write"]
        assert session.tool_calls[0].input == {"skill": "greeter"}
        assert session.num_turns is not None and session.num_turns >= 3
    else:
        assert names(session) == ["command_execution", "command_execution"]
        assert "skills/greeter/SKILL.md" in session.tool_calls[0].input["command"]
        assert "Write one line" in (session.tool_calls[0].result or "")
    assert all(not call.is_error for call in session.tool_calls)
    # The rules and the skill reached the model.
    first = all_text(server.requests[0].body)
    assert "TONE-RULE-7" in first and "AGENTS-MD-3" in first
    assert "Writes a short greeting" in first and "UNUSED-SKILL-9" not in first


def test_pre_tool_use_hook_blocks_the_write(engine: Engine, server: ModelServer, tmp_path: Path) -> None:
    server.add({
        "match": "Store the secret",
        "agent": [
            {"write": {"path": "open/allowed.txt", "content": "fine"}},
            {"write": {"path": "protected/secret.txt", "content": "s3cret"}},
            {"text": "The write to protected/ was refused."},
        ],
    })  # fmt: skip
    run = agent_run(engine, server, tmp_path, "Store the secret.")
    session = run_case(engine, HOOK_PKG, run, "hook:PreToolUse")

    assert (run.workspace / "open/allowed.txt").read_text() == "fine"
    assert not (run.workspace / "protected").exists()
    assert session.hook_blocked
    assert any("protected/ is read-only for agents" in e for e in session.hook_evidence)
    assert not session.is_error and session.output == "The write to protected/ was refused."
    if engine.name == "claude-code":
        assert session.tool_calls[1].is_error
        assert (session.tool_calls[1].result or "").startswith("PreToolUse:Write hook error")
    else:
        assert any(e.startswith("Command blocked by PreToolUse hook") for e in session.hook_evidence)


def test_hook_that_lets_everything_pass_is_not_a_block(
    engine: Engine, server: ModelServer, tmp_path: Path
) -> None:
    server.add(
        {
            "match": "Only open things",
            "agent": [{"write": {"path": "open/a.txt", "content": "a"}}, {"text": "Done."}],
        }
    )
    run = agent_run(engine, server, tmp_path, "Only open things.")
    session = run_case(engine, HOOK_PKG, run, None)
    assert (run.workspace / "open/a.txt").is_file()
    assert not session.hook_blocked and session.hook_evidence == []


def test_package_mcp_server_is_started_and_offered_to_the_model(
    engine: Engine, server: ModelServer, tmp_path: Path
) -> None:
    server.add({"match": "List your tools", "agent": [{"text": "Listed."}]})
    run = agent_run(engine, server, tmp_path, "List your tools.", **{"writable-paths": ["output"]})
    session = run_case(engine, MCP_PKG, run, None)

    assert session.output == "Listed." and not session.is_error
    # Both CLIs defer MCP tools behind a tool search and name them in the first request.
    name = "mcp__echo__echo" if engine.name == "claude-code" else "mcp__echo"
    assert name in all_text(server.requests[0].body)


def test_timeout_kills_the_cli_and_leaves_no_process(
    engine: Engine, server: ModelServer, tmp_path: Path
) -> None:
    server.add({"match": "Think for a long time", "agent": [{"sleep": 30, "text": "Too late."}]})
    run = agent_run(engine, server, tmp_path, "Think for a long time.", timeout=4)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run_case, engine, SKILL_PKG, run, None)
        while not server.requests and not future.done():
            time.sleep(0.05)
        running = processes_using(run.workspace, run.home)  # the CLI, waiting on the model
        session = future.result()

    assert running, "the orphan check below would see nothing"
    assert session.timed_out and session.is_error
    assert session.error == "timed out after 4 s"
    assert session.exit_code is None
    assert session.duration_seconds < 15
    assert processes_using(run.workspace, run.home) == []


def test_api_error_makes_the_session_an_error(engine: Engine, server: ModelServer, tmp_path: Path) -> None:
    server.add(
        {"match": "Fail please", "agent": [{"error": {"status": 400, "message": "scripted bad request"}}]}
    )
    run = agent_run(engine, server, tmp_path, "Fail please.")
    session = run_case(engine, SKILL_PKG, run, None)

    assert session.is_error and not session.timed_out
    assert session.exit_code not in (0, None)
    assert "scripted bad request" in (session.error or "")


def test_writable_paths_limit_where_the_agent_writes(
    engine: Engine, server: ModelServer, tmp_path: Path
) -> None:
    server.add({"match": "Write two files", "agent": [
        {"write": {"path": "output/ok.txt", "content": "ok"}},
        {"write": {"path": "elsewhere/no.txt", "content": "no"}},
        {"text": "Tried both."},
    ]})  # fmt: skip
    run = agent_run(engine, server, tmp_path, "Write two files.", **{"writable-paths": ["output"]})
    session = run_case(engine, SKILL_PKG, run, None)

    assert (run.workspace / "output/ok.txt").read_text() == "ok"
    assert not (run.workspace / "elsewhere/no.txt").exists()
    assert session.output == "Tried both." and not session.is_error


def test_a_writable_file_path_can_be_written(engine: Engine, server: ModelServer, tmp_path: Path) -> None:
    server.add({"match": "Update the changelog", "agent": [
        {"write": {"path": "CHANGELOG.md", "content": "- greeted the team\n"}},
        {"write": {"path": "elsewhere/no.txt", "content": "no"}},
        {"text": "Updated."},
    ]})  # fmt: skip
    paths = {"writable-paths": ["output", "CHANGELOG.md"]}
    run = agent_run(engine, server, tmp_path, "Update the changelog.", **paths)
    session = run_case(engine, SKILL_PKG, run, None)

    assert (run.workspace / "CHANGELOG.md").read_text() == "- greeted the team\n"
    assert session.output == "Updated." and not session.is_error
    # Claude Code confines edits to file paths itself. Codex's permission profiles take only
    # directories, so with a file path the workspace stays writable and the runner's check rules.
    assert (run.workspace / "elsewhere/no.txt").exists() == (engine.name == "codex")


def processes_using(*paths: Path) -> list[str]:
    """Live processes whose working directory, command line or HOME is one of the paths."""
    wanted = [str(p.resolve()) for p in paths]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
        except OSError:
            continue  # gone already, or not ours to read
        if any(cwd.startswith(w) or w in cmdline or f"HOME={w}\0" in environ for w in wanted):
            found.append(f"{pid}: {cmdline[:200]}")
    return found


def test_codex_commands_use_a_temp_folder_of_their_own_and_leave_tmp_alone(
    server: ModelServer, tmp_path: Path
) -> None:
    """Codex's sandbox makes `<root>/.git` for each writable root while a command runs: with
    /tmp writable, a `/tmp/.git` made every CLI working under /tmp at the time say it was in a
    git repository. The command now writes its temp files to the run's own folder."""
    engine = get_engine("codex")
    if reason := engine.available():
        pytest.skip(reason)
    server.add({
        "match": "Make a scratch file",
        "agent": [{"bash": "test -e /tmp/.git && echo GIT-IN-TMP; mktemp; echo TMPDIR=$TMPDIR"},
                  {"text": "Made one."}],
    })  # fmt: skip
    run = agent_run(engine, server, tmp_path / "run", "Make a scratch file.")
    session = run_case(engine, SKILL_PKG, run, None)
    result = session.tool_calls[0].result or ""
    assert "GIT-IN-TMP" not in result
    assert f"TMPDIR={run.workspace.parent / 'tmp'}" in result and str(run.workspace.parent / "tmp") + "/tmp." in result
