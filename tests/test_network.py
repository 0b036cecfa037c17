"""A runner behind an HTTP proxy, without a CLI: which hosts NO_PROXY covers, the CLIs' env
reaching the loopback directly, and the recording proxy reaching the API through the runner's
proxy (a forward proxy on 127.0.0.1 that only knows the API's host name). The real CLIs on
such a runner are in `test_proxied_runner_e2e.py`."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.engines.base import AgentRun, Engine, get_engine
from aam_eval_action.engines.registry import ENGINE_NAMES
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


@pytest.mark.parametrize("engine", [get_engine(name) for name in ENGINE_NAMES], ids=list(ENGINE_NAMES))
def test_behind_a_proxy_each_cli_reaches_the_loopback_directly(tmp_path: Path, engine: Engine) -> None:
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


def _tls_server(tmp_path: Path, host: str) -> tuple[Any, Path]:
    """An HTTPS API on 127.0.0.1 with a certificate for `host`, and the CA file that trusts it."""
    import datetime
    import http.server
    import ssl
    import threading

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "ca.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))

    class Api(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = json.dumps({"type": "message", "content": [{"type": "text", "text": "over TLS"}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cert_file


def test_an_https_api_is_reached_through_a_connect_tunnel_trusting_the_runners_ca_bundle(tmp_path: Path) -> None:
    server, ca = _tls_server(tmp_path, "api.secure.test")
    port = server.server_address[1]
    try:
        with ForwardProxy({"api.secure.test": ("127.0.0.1", port)}) as corp:
            for trusted, status in ((True, 200), (False, 502)):
                network = {"HTTPS_PROXY": corp.url, **({"SSL_CERT_FILE": str(ca)} if trusted else {})}
                upstream = upstream_for("claude-code", {"ANTHROPIC_BASE_URL": f"https://api.secure.test:{port}"},
                                        network=network)
                with RecordingProxy(upstream, NORM) as recording:
                    got, body = _post_key(recording.url, REQUEST)
                assert got == status, body
                if trusted:
                    assert json.loads(body)["content"][0]["text"] == "over TLS"
                else:
                    assert "CERTIFICATE_VERIFY_FAILED" in json.loads(body)["error"]["message"]
            assert [(s.method, s.target, s.outcome) for s in corp.log()] == [
                ("CONNECT", f"api.secure.test:{port}", "tunnelled")] * 2
    finally:
        server.shutdown()
        server.server_close()
