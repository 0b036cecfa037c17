"""A runner behind an HTTP proxy, without a CLI: which hosts NO_PROXY covers, the CLIs' env
reaching the loopback directly, and the recording proxy reaching the API through the runner's
proxy (a forward proxy on 127.0.0.1 that only knows the API's host name). The real CLIs on
such a runner are in `test_proxied_runner_e2e.py`."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest

from aam_eval_action.engines.base import AgentRun
from aam_eval_action.engines.claude_code import ClaudeCode
from aam_eval_action.engines.codex import Codex
from aam_eval_action.redact import Redactor
from aam_eval_action.replay.proxy import RecordingProxy
from aam_eval_action.replay.traffic import Normaliser, Paths
from aam_eval_action.replay.upstream import Network, Upstream, bypassed, upstream_for, with_loopback
from aam_eval_action.testing.http_proxy import ForwardProxy
from aam_eval_action.testing.model_server import DEFAULT_API_KEY, ModelServer

NORM = Normaliser(Paths(Path("/tmp/ws"), Path("/tmp/home")), Redactor({}))
REQUEST = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(("host", "port", "no_proxy", "expected"), [
    ("api.anthropic.com", 443, "", False),
    ("api.anthropic.com", 443, "*", True),
    ("api.anthropic.com", 443, "anthropic.com", True),
    ("api.anthropic.com", 443, ".anthropic.com", True),
    ("notanthropic.com", 443, "anthropic.com", False),
    ("api.anthropic.com", 443, "api.anthropic.com:8443", False),
    ("api.anthropic.com", 8443, "api.anthropic.com:8443", True),
    ("10.1.2.3", 80, "10.0.0.0/8", True),
    ("11.1.2.3", 80, "10.0.0.0/8", False),
    ("127.0.0.1", 9, "localhost, 127.0.0.1", True),
    ("::1", 9, "[::1]", True),
])
def test_no_proxy_is_read_as_curl_and_the_sdks_read_it(host: str, port: int, no_proxy: str, expected: bool) -> None:
    assert bypassed(host, port, no_proxy) is expected


def test_the_loopback_joins_the_users_no_proxy_entries() -> None:
    assert with_loopback("") == "127.0.0.1,localhost,::1"
    assert with_loopback("corp.example, localhost") == "corp.example,localhost,127.0.0.1,::1"


def _run(tmp_path: Path, runner_env: dict[str, str], env: dict[str, str] | None = None) -> AgentRun:
    return AgentRun(prompt="p", model="m", workspace=tmp_path, home=tmp_path, env=env or {}, timeout=5,
                    runner_env=runner_env)


@pytest.mark.parametrize("engine", [ClaudeCode(), Codex()], ids=["claude-code", "codex"])
def test_behind_a_proxy_each_cli_reaches_the_loopback_directly(tmp_path: Path, engine: ClaudeCode | Codex) -> None:
    proxied = {"HTTPS_PROXY": "http://proxy.corp:3128", "HTTP_PROXY": "http://proxy.corp:3128",
               "NO_PROXY": "", "no_proxy": "git.corp", "PATH": "/usr/bin"}
    env = engine.env(_run(tmp_path, proxied))
    assert env["HTTPS_PROXY"] == "http://proxy.corp:3128"  # the agent's own tools keep the proxy
    assert env["NO_PROXY"] == env["no_proxy"] == "git.corp,127.0.0.1,localhost,::1"
    # eval-config `env` may add entries of its own; the loopback stays covered.
    env = engine.env(_run(tmp_path, proxied, {"NO_PROXY": "internal.example"}))
    assert env["NO_PROXY"].split(",") == ["internal.example", "git.corp", "127.0.0.1", "localhost", "::1"]
    # Without a proxy nothing is added.
    assert "NO_PROXY" not in engine.env(_run(tmp_path, {"PATH": "/usr/bin"}))


def test_the_recording_proxy_reaches_the_api_through_the_runners_proxy() -> None:
    with ModelServer() as server, ForwardProxy({"api.model.test": _address(server.url)}) as corp:
        network = {"HTTPS_PROXY": corp.url, "HTTP_PROXY": corp.url, "NO_PROXY": ""}
        base = f"http://api.model.test:{_address(server.url)[1]}"
        upstream = upstream_for("claude-code", {"ANTHROPIC_BASE_URL": base}, network=network)
        assert upstream.via() == f"through proxy {corp.url}"
        with RecordingProxy(upstream, NORM) as recording:
            status, body = _post_key(recording.url, REQUEST)
        assert status == 200 and json.loads(body)["content"][0]["text"] == "OK."
        assert [(s.method, s.target, s.outcome) for s in corp.log()] == [
            ("POST", f"{base}/v1/messages", "forwarded")]
        assert len(server.requests) == 1


def test_a_no_proxy_entry_for_the_api_host_goes_direct() -> None:
    with ModelServer() as server, ForwardProxy() as corp:
        network = {"HTTP_PROXY": corp.url, "NO_PROXY": "127.0.0.1"}
        upstream = upstream_for("claude-code", {"ANTHROPIC_BASE_URL": server.url}, network=network)
        assert upstream.via() == "directly"
        with RecordingProxy(upstream, NORM) as recording:
            assert _post_key(recording.url, REQUEST)[0] == 200
        assert corp.log() == [] and len(server.requests) == 1


def test_an_api_the_proxy_cannot_reach_is_a_502_that_names_the_proxy_but_not_its_password() -> None:
    with ForwardProxy() as corp:
        with_password = corp.url.replace("http://", "http://user:s3cret-pass@")
        upstream = Upstream("http://api.unknown.test", network=Network.of({"HTTP_PROXY": with_password}))
        with RecordingProxy(upstream, NORM) as recording:
            status, body = _post_key(recording.url, REQUEST)
    message = json.loads(body)["error"]["message"]
    assert status == 502 and "s3cret-pass" not in message
    assert f"upstream http://api.unknown.test (through proxy {corp.url}) unreachable" in message
    assert [(s.host, s.outcome) for s in corp.log()] == [("api.unknown.test", "unknown-host")]


def test_the_test_proxy_refuses_the_runners_loopback_like_a_corporate_proxy() -> None:
    with ModelServer() as server, ForwardProxy() as corp:
        upstream = Upstream(server.url, network=Network.of({"HTTP_PROXY": corp.url}))
        with RecordingProxy(upstream, NORM) as recording:
            status, _ = _post_key(recording.url, REQUEST)
    assert status == 502 and [s.outcome for s in corp.log()] == ["refused-loopback"]
    assert server.requests == []


def _address(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").rpartition(":")
    return host, int(port)


def _post_key(url: str, body: dict[str, object]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=20)
    try:
        conn.request("POST", "/v1/messages", body=json.dumps(body), headers={
            "content-type": "application/json", "x-api-key": DEFAULT_API_KEY, "anthropic-version": "2023-06-01"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()



def test_a_proxy_password_from_the_runner_is_a_secret_never_written(tmp_path: Path) -> None:
    from aam_eval_action.loader import load_package
    from aam_eval_action.settings import Overrides, resolve
    from aam_eval_action.testing.packages import simple_case, write_package

    pkg = write_package(tmp_path / "pkg", [simple_case("a")], config={"version": 1, "engine": "claude-code"})
    runner = {"HTTPS_PROXY": "http://ci-bot:Pr0xy%23Pass@proxy.corp:3128", "PATH": "/usr/bin"}
    redactor = resolve(load_package(pkg), Overrides(), runner).redactor()
    said = "CONNECT failed via http://ci-bot:Pr0xy#Pass@proxy.corp:3128 (Pr0xy#Pass)"
    assert "Pr0xy#Pass" not in redactor.text(said) and "[REDACTED:HTTPS_PROXY_PASSWORD]" in redactor.text(said)
