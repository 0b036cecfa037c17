"""A self-hosted runner behind a corporate HTTP proxy, with the real agent CLIs (Claude Code,
Codex, Copilot, Gemini CLI).

`HTTP_PROXY` and `HTTPS_PROXY` point at a forward proxy on 127.0.0.1 (`testing/http_proxy.py`)
and `NO_PROXY` is empty. The proxy refuses anything aimed at a loopback address, as a real
one cannot reach the runner's own loopback; the model API sits at a host name only the proxy
can resolve (`api.model.test`). Recording must reach the API through the proxy (the CLI talks
to the local recording proxy directly, the judge's SDK goes through the runner's proxy) and
replay must send nothing to it at all.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.engines.base import get_engine
from aam_eval_action.testing.http_proxy import ForwardProxy
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval, example_copy

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-proxied-9b21", "OPENAI_API_KEY": "sk-openai-CANARY-proxied-3c7d",
        "GEMINI_API_KEY": "gemini-CANARY-proxied-51e0"}
API_HOST = "api.model.test"
CODEX = ("--engine", "codex", "--model", "gpt-5.5")
# Every case through the two newer engines, in one matrix run (Copilot on Claude, Gemini CLI).
OTHERS = ("--engine", "copilot,gemini-cli")
ENGINES = ("claude-code", "codex", "copilot", "gemini-cli")
CASES = ("csv-summary-e2e", "average-revenue", "hook-blocks-env-write")
"""Three of the example's cases: a skill with a script, a judge that fails, a hook; what a proxy
carries does not depend on more (the whole example is recorded by the other end-to-end tests)."""


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ForwardProxy, dict[str, Any]]]:
    """(the package recorded behind the proxy, the proxy, the recording reports: claude, codex,
    others)."""
    for engine in ENGINES:
        reason = get_engine(engine).available()
        if reason:
            pytest.skip(reason)
    pkg = tmp_path_factory.mktemp("proxied") / "pkg"
    example_copy(pkg)
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server, \
            ForwardProxy({API_HOST: ("127.0.0.1", int(server.url.rsplit(":", 1)[1]))}) as proxy, \
            pytest.MonkeyPatch.context() as mp:
        api = f"http://{API_HOST}:{server.url.rsplit(':', 1)[1]}"
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            mp.setenv(name, proxy.url)
        mp.setenv("NO_PROXY", "")
        mp.delenv("no_proxy", raising=False)
        mp.setenv("ANTHROPIC_BASE_URL", api)
        mp.setenv("OPENAI_BASE_URL", api + "/v1")
        mp.setenv("GOOGLE_GEMINI_BASE_URL", api)
        for name, value in KEYS.items():
            mp.setenv(name, value)
        claude = _run(pkg, "rec-claude", "--record", "--no-self-check", "--jobs", "3")
        codex = _run(pkg, "rec-codex", "--record", "--no-self-check", *CODEX)
        others = _run(pkg, "rec-others", "--record", "--no-self-check", "--jobs", "3", *OTHERS)
        yield pkg, proxy, {"claude": claude, "codex": codex, "others": others}


def _run(pkg: Path, name: str, *args: str) -> dict[str, Any]:
    out = pkg.parent / f"{name}.json"
    result = aam_eval("run", *CASES, "--package", str(pkg), *args, "-o", str(out))
    assert out.is_file(), result.out + result.err
    return json.loads(out.read_text())


def _verdicts(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {f"{c['name']} {c.get('engine', '')}".strip(): (c["verdict"], c["judge_verdict"]["result"])
            for c in report["cases"]}


def _shipped(example: Path, *args: str) -> dict[str, tuple[str, str]]:
    """The verdicts of the shipped recordings, replayed: what the example gives."""
    out = example.parent / f"shipped-{len(args)}.json"
    aam_eval("run", *CASES, "--package", str(example), "--replay", "--no-rerun", *args, "-o", str(out))
    return _verdicts(json.loads(out.read_text()))


def test_recording_behind_the_proxy_gives_the_examples_verdicts_and_the_proxy_carries_only_the_api(
    runner: tuple[Path, ForwardProxy, dict[str, Any]], example: Path
) -> None:
    _, proxy, reports = runner
    assert _verdicts(reports["claude"]) == _shipped(example)
    assert _verdicts(reports["codex"]) == _shipped(example, *CODEX)
    assert _verdicts(reports["others"]) == _shipped(example, *OTHERS)
    seen = proxy.log()
    # Every model and judge request went through the proxy to the API's host: the judge calls
    # from the SDK, the agent's from the recording proxy; none was aimed at the loopback, and
    # no CLI called anything else (home, updates, telemetry).
    assert seen and {(s.host, s.outcome) for s in seen} == {(API_HOST, "forwarded")}
    paths = {s.target.split(API_HOST, 1)[1].split("/", 1)[1] for s in seen}
    # Claude Code, Codex, the judge (and Copilot: Anthropic Messages), Gemini CLI.
    assert paths == {"v1/messages?beta=true", "v1/responses", "v1/messages",
                     "v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"}
    judged = sum(len(c["judge_verdict"].get("votes") or [1]) for c in reports["claude"]["cases"]
                 if c["judge_verdict"]["result"] != "SKIP")
    assert sum(s.target.endswith("/v1/messages") for s in seen) >= judged > 0


@pytest.mark.parametrize("rerun", ["--rerun", "--no-rerun"])
def test_replay_behind_the_proxy_gives_the_same_verdicts_and_sends_the_proxy_nothing(
    runner: tuple[Path, ForwardProxy, dict[str, Any]], tmp_path: Path, rerun: str
) -> None:
    recorded, proxy, reports = runner
    pkg = tmp_path / "pkg"
    shutil.copytree(recorded, pkg)
    before = len(proxy.log())
    with pytest.MonkeyPatch.context() as mp:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            mp.setenv(name, proxy.url)
        mp.setenv("NO_PROXY", "")
        claude = _run(pkg, "claude", "--replay", rerun, "--jobs", "3")
        codex = _run(pkg, "codex", "--replay", rerun, *CODEX)
        others = _run(pkg, "others", "--replay", rerun, "--jobs", "3", *OTHERS)
    assert _verdicts(claude) == _verdicts(reports["claude"])
    assert _verdicts(codex) == _verdicts(reports["codex"])
    assert _verdicts(others) == _verdicts(reports["others"])
    kind = "rerun" if rerun == "--rerun" else "snapshot"
    assert {c["replay_kind"] for c in claude["cases"] + codex["cases"] + others["cases"]} == {kind}
    assert proxy.log()[before:] == []
