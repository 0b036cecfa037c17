"""Re-execute replay with the real CLIs: record model traffic through the recording proxy against
the scripted model server, stop the server, and run the CLI again against the replay proxy.

The package is a private copy of the shipped example, so a test can edit its hook, script or
skill between recording and re-execution, as a pull request would.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from aam_eval_action.engines.base import AgentRun, Engine, get_engine
from aam_eval_action.fsutil import dump_yaml
from aam_eval_action.layouts.detect import read_package
from aam_eval_action.package import PackageLayout
from aam_eval_action.redact import Redactor
from aam_eval_action.replay.cli_version import CliVersionError, check_installed, installed_version
from aam_eval_action.replay.proxy import RecordingProxy, ReplayProxy, Upstream, proxy_env, upstream_for
from aam_eval_action.replay.traffic import ModelTraffic, Normaliser, Paths, parse_traffic
from aam_eval_action.session import Session
from aam_eval_action.settings import runner_environment
from aam_eval_action.spec import Sandbox
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import EXAMPLE, ROOT

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
CANARIES = {
    "ANTHROPIC_API_KEY": "sk-ant-CANARY-4c1d9e",
    "OPENAI_API_KEY": "sk-openai-CANARY-7f2b3a",
    "VAULT_TOKEN": "vault-CANARY-91e0aa",
}
SUMMARY = "Summarise fixtures/sales.csv with the csv-summary skill and save the report to output/summary.md."
ENV_WRITE = "Create a .env file containing API_KEY=test-123 so the app can start."
CHANGELOG = "Add a changelog entry to CHANGELOG.md for the new CSV summary feature."
SCRIPT = "skills/csv-summary/scripts/summarize.py"


@dataclass
class Run:
    """One session: what the engine parsed, the files it left, and the proxy it talked to."""

    session: Session
    files: dict[str, str]
    proxy: RecordingProxy | ReplayProxy


@pytest.fixture(params=["claude-code", "codex"])
def engine(request: pytest.FixtureRequest) -> Engine:
    return _engine(request.param)


def _engine(name: str) -> Engine:
    found = get_engine(name)
    reason = found.available()
    if reason:
        pytest.skip(reason)
    return found


@pytest.fixture
def package(tmp_path: Path) -> PackageLayout:
    """A private copy of the example package (evals included) that a test may edit."""
    shutil.copytree(EXAMPLE, tmp_path / "pkg", ignore=shutil.ignore_patterns("cassettes"))
    return read_package(tmp_path / "pkg")


@pytest.fixture
def server() -> Iterator[ModelServer]:
    # The canary keys the sessions carry are the keys this server accepts.
    with ModelServer(SCENARIOS, api_key=tuple(CANARIES[k] for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"))) as running:
        yield running


def _workspace(engine: Engine, package: PackageLayout, prompt: str, target: str | None) -> AgentRun:
    """A fresh temp workspace laid out as the runner lays it out, with the package installed."""
    base = Path(tempfile.mkdtemp(prefix="aam-eval-rerun-"))
    workspace, home = base / "workspace", base / "home"
    workspace.mkdir()
    home.mkdir()
    # The example's input files and workspace files, where the runner puts them.
    for source, rel in (("fixtures/sales.csv", "fixtures/sales.csv"), ("fixtures/CHANGELOG.md", "CHANGELOG.md")):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package.evals_dir / source, workspace / rel)
    engine.install(package, workspace, target)
    return AgentRun(
        prompt=prompt, model=engine.default_model, workspace=workspace, home=home,
        env=dict(CANARIES), runner_env=runner_environment(), timeout=60, sandbox=Sandbox(),
    )


def _pointed(engine: Engine, run: AgentRun, url: str) -> AgentRun:
    """The run with the engine's base URL at `url`, as the pipeline points a CLI at a proxy."""
    return dataclasses.replace(run, env={**run.env, **proxy_env(engine.name, url)})


def _normaliser(run: AgentRun) -> Normaliser:
    return Normaliser(Paths(run.workspace, run.home, run.workspace.parent), Redactor(CANARIES))


def _upstream(engine: Engine, server: ModelServer, key: str | None = None) -> Upstream:
    """The scripted server, given the way the runner gives the engine's base URL."""
    env = {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1"}
    return upstream_for(engine.name, env, key)


def _files(run: AgentRun) -> dict[str, str]:
    found = {}
    for path in sorted(run.workspace.rglob("*")):
        rel = path.relative_to(run.workspace).as_posix()
        if path.is_file() and not rel.startswith((".claude", ".agents", ".codex", ".aam")):
            found[rel] = path.read_text(errors="replace")
    return found


def record(engine: Engine, package: PackageLayout, server: ModelServer, prompt: str,
           target: str | None = None) -> tuple[Run, ModelTraffic]:
    """A recorded session and its traffic, stored as YAML and read back as the pipeline will."""
    run = _workspace(engine, package, prompt, target)
    with RecordingProxy(_upstream(engine, server), _normaliser(run)) as proxy:
        session = engine.run(_pointed(engine, run, proxy.url))
    files = _files(run)
    shutil.rmtree(run.workspace.parent)
    stored = dump_yaml(proxy.traffic().model_dump(mode="json", exclude_none=True))
    return Run(session, files, proxy), parse_traffic(yaml.safe_load(stored))


def rerun(engine: Engine, package: PackageLayout, traffic: ModelTraffic, prompt: str,
          target: str | None = None, upstream: Upstream | None = None) -> Run:
    run = _workspace(engine, package, prompt, target)
    with ReplayProxy(traffic, _normaliser(run), continue_upstream=upstream) as proxy:
        session = engine.run(_pointed(engine, run, proxy.url))
    files = _files(run)
    shutil.rmtree(run.workspace.parent)
    return Run(session, files, proxy)


# --- identity ----------------------------------------------------------------------------------


def test_rerun_of_an_unchanged_package_is_identical_and_offline(
    engine: Engine, package: PackageLayout, server: ModelServer
) -> None:
    recorded, traffic = record(engine, package, server, SUMMARY, "skill:csv-summary")
    assert not recorded.session.is_error, recorded.session.error
    port = int(server.url.rsplit(":", 1)[1])
    server.stop()

    # A tripwire where the model server was: a CLI that bypassed the proxy would land here.
    with ModelServer(port=port) as tripwire:
        replayed = rerun(engine, package, traffic, SUMMARY, "skill:csv-summary")
    assert tripwire.requests == [] and tripwire.connections == set()

    proxy = replayed.proxy
    assert isinstance(proxy, ReplayProxy) and proxy.divergence is None
    assert proxy.served == {"main": 3} and proxy.requests == len(traffic.exchanges) == 3
    assert replayed.session.output == recorded.session.output
    assert "Total revenue: 952.75" in replayed.session.output
    assert not replayed.session.is_error and replayed.session.exit_code == 0
    assert replayed.files == recorded.files and "Rows: 3" in replayed.files["output/summary.md"]
    # Same calls with the same results, modulo the per-run workspace path.
    assert len(replayed.session.tool_calls) == len(recorded.session.tool_calls) == 2
    assert [c.name for c in replayed.session.tool_calls] == [c.name for c in recorded.session.tool_calls]
    assert traffic.cli_version == installed_version(traffic.cli, runner_environment())
    check_installed(traffic, runner_environment())
    assert proxy.unserved == {} and proxy.failures == []
    with pytest.raises(CliVersionError, match=f"recorded with {traffic.cli} 0.0.1 but {traffic.cli} "):
        check_installed(traffic.model_copy(update={"cli_version": "0.0.1"}), runner_environment())


def test_recording_the_same_session_twice_gives_the_same_bytes(
    engine: Engine, package: PackageLayout, server: ModelServer
) -> None:
    first = record(engine, package, server, SUMMARY, "skill:csv-summary")[1]
    second = record(engine, package, server, SUMMARY, "skill:csv-summary")[1]
    assert dump_yaml(first.model_dump(mode="json")) == dump_yaml(second.model_dump(mode="json"))
    assert "_aam001" in dump_yaml(first.model_dump(mode="json"))


def test_stored_traffic_keeps_no_secret_and_no_temp_path(
    engine: Engine, package: PackageLayout, server: ModelServer
) -> None:
    server.add({"match": "Show the vault token", "agent": [{"bash": "echo token=$VAULT_TOKEN"}, {"text": "Shown."}]})
    recorded, traffic = record(engine, package, server, "Show the vault token.")
    assert any(call.result and CANARIES["VAULT_TOKEN"] in call.result for call in recorded.session.tool_calls)
    text = dump_yaml(traffic.model_dump(mode="json"))
    for value in CANARIES.values():
        assert value not in text
    assert "[REDACTED:VAULT_TOKEN]" in text
    assert "aam-eval-rerun-" not in text and "$WORKSPACE" in text
    # Keys are forwarded upstream (the server saw them) but never stored.
    assert any(CANARIES["ANTHROPIC_API_KEY"] in str(r.headers) or CANARIES["OPENAI_API_KEY"] in str(r.headers)
               for r in server.requests)
    # Re-executing compares redacted to redacted: the canary in the live tool output still matches.
    replayed = rerun(engine, package, traffic, "Show the vault token.")
    assert isinstance(replayed.proxy, ReplayProxy) and replayed.proxy.divergence is None


# --- divergence --------------------------------------------------------------------------------


def test_a_hook_that_no_longer_blocks_diverges_at_the_write(package: PackageLayout, server: ModelServer) -> None:
    engine = _engine("claude-code")
    recorded, traffic = record(engine, package, server, ENV_WRITE, "hook:pre-tool-use")
    assert recorded.session.hook_blocked
    server.stop()
    (package.root / "hooks/protect_secrets.py").write_text("import sys\nsys.exit(0)\n")

    replayed = rerun(engine, package, traffic, ENV_WRITE, "hook:pre-tool-use")
    assert isinstance(replayed.proxy, ReplayProxy)
    divergence = replayed.proxy.divergence
    assert divergence is not None
    assert divergence.turn == 2 and divergence.stream == "agent"
    assert divergence.tool_name == "Write" and divergence.tool_input == "$WORKSPACE/.env"
    assert (divergence.recorded or "").startswith("PreToolUse:Write hook error")
    assert (divergence.live or "").startswith("File created successfully at")
    print(divergence.message)
    assert divergence.message.startswith(
        "turn 2: the Write tool result ($WORKSPACE/.env) changed: recorded `PreToolUse:Write hook error"
    )
    # Nothing after the divergence is answered from the recording: the CLI gives up.
    assert replayed.proxy.served == {"main": 1} and replayed.proxy.refused >= 1
    assert replayed.proxy.requests == 1 + replayed.proxy.refused
    assert replayed.session.is_error and "diverged from the recording" in (replayed.session.error or "")


def test_a_changed_script_diverges_naming_its_call(
    engine: Engine, package: PackageLayout, server: ModelServer
) -> None:
    _, traffic = record(engine, package, server, SUMMARY, "skill:csv-summary")
    server.stop()
    script = package.root / SCRIPT
    script.write_text(script.read_text().replace('"- Total ', '"- Sum of '))

    replayed = rerun(engine, package, traffic, SUMMARY, "skill:csv-summary")
    assert isinstance(replayed.proxy, ReplayProxy)
    divergence = replayed.proxy.divergence
    assert divergence is not None, replayed.session.output
    print(divergence.message)
    assert divergence.turn == 3
    assert divergence.tool_name == ("Bash" if engine.name == "claude-code" else "exec_command")
    assert "summarize.py" in (divergence.tool_input or "")
    assert "Total units: 35" in (divergence.recorded or "") and "Sum of units: 35" in (divergence.live or "")
    assert replayed.session.is_error and "diverged from the recording" in (replayed.session.error or "")
    assert replayed.proxy.served == {"main": 2} and replayed.proxy.unserved == {"main": 1}
    print(f"{engine.name}: {replayed.proxy.refused} refused request(s), {replayed.session.duration_seconds:.2f} s")


def test_editing_a_skill_the_session_never_loads_reruns_identically(
    engine: Engine, package: PackageLayout, server: ModelServer
) -> None:
    recorded, traffic = record(engine, package, server, CHANGELOG, None)
    server.stop()
    skill = package.root / "skills/csv-summary/SKILL.md"
    skill.write_text(skill.read_text() + "\nAlways round totals to whole numbers.\n")

    replayed = rerun(engine, package, traffic, CHANGELOG)
    assert isinstance(replayed.proxy, ReplayProxy) and replayed.proxy.divergence is None
    assert replayed.session.output == recorded.session.output and not replayed.session.is_error
    assert replayed.files == recorded.files
    assert "- Added CSV summaries of sales data." in replayed.files["CHANGELOG.md"]


# --- continue live -----------------------------------------------------------------------------


def test_after_a_divergence_the_session_continues_live_for_the_remaining_turns(
    engine: Engine, package: PackageLayout, server: ModelServer
) -> None:
    _, traffic = record(engine, package, server, SUMMARY, "skill:csv-summary")
    server.stop()
    script = package.root / SCRIPT
    script.write_text(script.read_text().replace('"- Total ', '"- Sum of '))

    with ModelServer(SCENARIOS, api_key="sk-live-KEY-from-runner") as upstream_server:
        upstream = _upstream(engine, upstream_server, key="sk-live-KEY-from-runner")
        replayed = rerun(engine, package, traffic, SUMMARY, "skill:csv-summary", upstream=upstream)
    proxy = replayed.proxy
    assert isinstance(proxy, ReplayProxy) and proxy.divergence is not None
    assert proxy.divergence.turn == 3
    # Turns 1 and 2 came from the recording; only the third went to the model.
    assert proxy.served == {"main": 2} and proxy.live_requests == 1
    assert len(upstream_server.requests) == 1
    sent = upstream_server.requests[0].headers
    assert "sk-live-KEY-from-runner" in (sent.get("x-api-key") or sent.get("authorization") or "")
    assert not replayed.session.is_error and "952.75" in replayed.session.output
    assert replayed.files["output/summary.md"].count("Sum of") == 2
    new = proxy.traffic()
    assert [e.live for e in new.exchanges] == [False, False, True]
    assert proxy.live_usage.get("input_tokens", 0) > 0
    assert "sk-live-KEY-from-runner" not in dump_yaml(new.model_dump(mode="json"))
