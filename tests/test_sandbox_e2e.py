"""The OS sandbox around every agent session, with the four real CLIs: a skill's script, the
package's hook before it and its MCP server as the CLI starts it try to write to the runner's
HOME, to /tmp, to /dev/shm and beside their workspace, to connect to a listener of ours and
straight to the model server, to listen, to connect to UNIX sockets of ours by path (a stand-in
for the Docker socket, mode 0666, and an ssh-agent's at a path it can guess, named in the
runner's SSH_AUTH_SOCK) and by abstract name, to signal this process, and to find the API key in
their environment and in their ancestors' /proc entries. `aam-eval` runs as a process, the canary keys in its own environment as a
runner's are. Every attempt fails, the model traffic still flows, and re-execution gives the
same verdicts. A kernel without Landlock (simulated) is reported, and `enforce: required`
refuses.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.engines.base import get_engine
from aam_eval_action.sandbox.plan import probe_namespace
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, installed
from support.browser import open_case, report_page

pytestmark = pytest.mark.cli
FIXTURE = ROOT / "tests/fixtures/escape-pkg"
SCENARIOS = load_scenarios(ROOT / "tests/fixtures/escape-scenarios.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-sandbox-4f1e", "OPENAI_API_KEY": "sk-CANARY-sandbox-9a0b",
        "GEMINI_API_KEY": "gemini-CANARY-sandbox-77c2"}
ENGINES = {"claude-code": (), "codex": ("--model", "gpt-5.5", "--judge", "claude-sonnet-4-6"), "copilot": (),
           "gemini-cli": ("--judge", "claude-sonnet-4-6")}
NAMESPACE = not probe_namespace()
"""Whether this machine gives each session a network namespace of its own (it must agree with
`unshare -Urn true`: test_the_namespace_probe_agrees_with_unshare)."""
MARKER = "aam-eval-escaped.txt"


class Listener:
    """A TCP listener of the test's on 127.0.0.1: it counts the connections it is offered."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


class UdpListener:
    """A UDP socket of the test's on 127.0.0.1: it counts the datagrams that reach it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                self.sock.recv(64)
            except OSError:
                return
            self.received += 1


UDP = UdpListener()


class UnixListener(Listener):
    """A UNIX socket of the test's, by path (mode 0666: only the sandbox keeps a session out) or
    by abstract name: it counts the connections it is offered."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        if not path.startswith("\0"):
            os.chmod(path, 0o666)
        self.sock.listen(16)
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()


def _runtime_folder() -> Path:
    """Where an agent would guess a socket of its user's: /run/user/<uid>, made when this test
    may (root), else an ssh-agent's /tmp/ssh-* folder."""
    runtime = Path(f"/run/user/{os.getuid()}")
    try:
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="aam-eval-", dir=runtime))
    except OSError:
        return Path(tempfile.mkdtemp(prefix="ssh-", dir="/tmp"))


SOCKETS = Path(tempfile.mkdtemp(prefix="aam-eval-sockets-"))
DOCKER = UnixListener(str(SOCKETS / "docker.sock"))
"""Stands in for /var/run/docker.sock: outside every session, open to every user."""
RUNTIME = _runtime_folder()
SSH_AGENT = UnixListener(str(RUNTIME / "agent.sock"))
"""An ssh-agent's socket where an agent can guess it; the runner's SSH_AUTH_SOCK names it."""
ABSTRACT = f"aam-eval-escape-{os.getpid()}"
ABSTRACT_LISTENER = UnixListener("\0" + ABSTRACT)


def _unix_connections() -> int:
    return DOCKER.accepted + SSH_AGENT.accepted + ABSTRACT_LISTENER.accepted


def _shm_left() -> list[Path]:
    return [p for p in Path("/dev/shm").glob(MARKER)]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModelServer, Listener, Path]]:
    listener = Listener()
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        yield server, listener, tmp_path_factory.mktemp("sandbox")
    listener.sock.close()


def _aam_eval(server: ModelServer, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`aam-eval` as a runner starts it: a process whose environment holds the keys."""
    base = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    base |= {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
             "GOOGLE_GEMINI_BASE_URL": server.url, "SSH_AUTH_SOCK": str(RUNTIME / "agent.sock"), **KEYS,
             **(env or {})}
    return subprocess.run([sys.executable, "-m", "aam_eval_action", *argv], env=base, capture_output=True,
                          text=True, timeout=600)


def _package(world: tuple[ModelServer, Listener, Path], name: str) -> Path:
    """The escape package, told where this test's listener and model server are."""
    server, listener, tmp = world
    pkg = Path(shutil.copytree(FIXTURE, tmp / name))
    (pkg / "evals/fixtures/targets.json").write_text(json.dumps({
        "listener": listener.port, "udp_listener": UDP.port, "model_server": int(server.url.rsplit(":", 1)[1]),
        "unix_socket": str(SOCKETS / "docker.sock"), "abstract": ABSTRACT, "signal_pid": os.getpid(),
        "marker": MARKER, "canaries": KEYS}))
    return pkg


def _escaped() -> list[Path]:
    import pwd

    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return [p for p in (home / MARKER, Path("/tmp") / MARKER) if p.exists()]


@pytest.fixture(scope="module", params=list(ENGINES))
def recorded(request: pytest.FixtureRequest, world: tuple[ModelServer, Listener, Path]) -> tuple[str, Path, dict[str, Any]]:
    engine = request.param
    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)
    server, _, tmp = world
    pkg = _package(world, engine)
    out = tmp / f"{engine}.json"
    done = _aam_eval(server, "run", "--package", str(pkg), "--record", "--engine", engine, *ENGINES[engine],
                     "-o", str(out))
    assert out.is_file(), done.stdout + done.stderr
    return engine, pkg, json.loads(out.read_text())


def test_every_escape_fails_at_the_syscall_and_the_session_still_works(
    recorded: tuple[str, Path, dict[str, Any]], world: tuple[ModelServer, Listener, Path]
) -> None:
    engine, pkg, report = recorded
    case = report["cases"][0]
    assert case["verdict"] == "PASS", (engine, case.get("error"), case.get("check_details"))
    network = "namespace" if NAMESPACE else "port-only"
    assert case["confinement"] == f"writes: landlock; network: {network}; unix: session"
    assert report["config"]["sandbox"]["network_enforced"] is True
    assert report["config"]["sandbox"]["layers"].startswith("landlock ABI ")
    assert ("network namespace" in report["config"]["sandbox"]["layers"]) is NAMESPACE
    assert world[1].accepted == 0
    assert UDP.received == 0  # the namespace, and the seccomp filter without one
    assert _unix_connections() == 0 and _shm_left() == []
    assert _escaped() == []
    assert not (pkg.parent / MARKER).exists()
    cassette = (pkg / f"evals/cassettes/escape/{engine}.session.yaml").read_text()
    for value in KEYS.values():
        assert value not in cassette
    page = pkg.parent / f"{engine}.html"
    assert _aam_eval(world[0], "view", str(pkg.parent / f"{engine}.json"), "-o", str(page)).returncode == 0
    with report_page(page) as shown:
        assert "sandbox\n" + case["confinement"] in open_case(shown, "escape").replace("\t", "\n")


@pytest.mark.parametrize("engine", list(ENGINES))
def test_where_no_supervisor_can_run_every_unix_socket_is_refused_and_the_cli_still_works(
    engine: str, world: tuple[ModelServer, Listener, Path]
) -> None:
    """Where the supervisor is refused (Docker's default seccomp profile has no `pidfd_getfd`;
    simulated here), the filter refuses every `socket(AF_UNIX)`: the session's own socket too,
    while each CLI still runs on its socketpairs, and every other attempt is denied as before."""
    import yaml

    installed(engine)
    server, _, tmp = world
    pkg = _package(world, f"no-supervisor-{engine}")
    case = pkg / "evals/cases/escape.yaml"
    case.write_text(case.read_text().replace('"own-unix-socket": "done"', '"own-unix-socket": "denied'))
    out = tmp / f"no-supervisor-{engine}.json"
    done = _aam_eval(server, "run", "--package", str(pkg), "--record", "--no-self-check", "--engine", engine,
                     *ENGINES[engine], "--sandbox-enforce", "required", "-o", str(out),
                     env={"AAM_EVAL_SANDBOX_SIMULATE_NO_SUPERVISOR": "1"})
    report = json.loads(out.read_text())
    result = report["cases"][0]
    assert result["verdict"] == "PASS", (result.get("error"), result.get("check_details"), done.stderr[-2000:])
    assert result["confinement"].endswith("; unix: none")
    assert "no supervisor (simulated" in report["config"]["sandbox"]["layers"]
    recorded = yaml.safe_load((pkg / f"evals/cassettes/escape/{engine}.session.yaml").read_text())
    probe = json.loads(next(f["text"] for f in recorded["attempts"][0]["files"] if f["path"] == "escape-report.json"))
    assert probe["own-unix-socket"] == "denied (Permission denied)"
    assert _unix_connections() == 0 and _shm_left() == [] and _escaped() == []


def test_network_true_opens_the_network_and_keeps_the_write_rules(world: tuple[ModelServer, Listener, Path]) -> None:
    import yaml

    server, listener, tmp = world
    if get_engine("claude-code").available():
        pytest.skip("claude-code is not installed")
    pkg = _package(world, "network-open")
    (pkg / "evals/eval-config.json").write_text(json.dumps(
        {"version": 1, "engine": "claude-code", "sandbox": {"network": True}}))
    before, datagrams = listener.accepted, UDP.received
    done = _aam_eval(server, "run", "--package", str(pkg), "--record", "--no-self-check", "-o", str(tmp / "open.json"))
    case = json.loads((tmp / "open.json").read_text())["cases"][0]
    assert case["confinement"] == "writes: landlock; network: open; unix: session", done.stdout + done.stderr
    assert "sandbox: writes: landlock; network: open; unix: session" in done.stdout
    recorded = yaml.safe_load((pkg / "evals/cassettes/escape/claude-code.session.yaml").read_text())
    probe = json.loads(next(f["text"] for f in recorded["attempts"][0]["files"] if f["path"] == "escape-report.json"))
    # Three times each: the package's MCP server as the CLI starts, its hook before the
    # command, and the command.
    assert probe["connect-listener"] == "done" and _eventually(lambda: listener.accepted == before + 3)
    assert probe["send-udp"] == "done" and _eventually(lambda: UDP.received == datagrams + 3)
    assert probe["write-runner-home"].startswith("denied") and probe["write-tmp"].startswith("denied")
    assert probe["keys-found"] == "none"
    # The network is open; UNIX sockets outside the session and /dev/shm are not.
    for attempt in ("connect-unix-docker", "connect-unix-guessed", "connect-unix-abstract", "write-dev-shm"):
        assert probe[attempt].startswith("denied"), (attempt, probe[attempt])
    assert probe["own-unix-socket"] == "done"
    assert _unix_connections() == 0 and _shm_left() == []
    assert _escaped() == []


WRITABLE_CASE = """\
name: writable
description: With writable-paths [out], the probe may write beneath out/ and nowhere else.
target: skill:escape
input:
  prompt: "Run the writable probe (case writable)."
  workspace-files: [writable.py]
expected:
  file-contains:
    out/writable-report.json:
      - '"write-out": "done"'
      - '"write-out-deeper": "done"'
      - '"write-root": "denied'
      - '"write-other-folder": "denied'
      - '"overwrite-fixture": "denied'
judge:
  criteria: The agent ran the probe and reported its output.
"""


@pytest.mark.parametrize("engine", list(ENGINES))
def test_writable_paths_allows_exactly_its_folders(engine: str, world: tuple[ModelServer, Listener, Path]) -> None:
    installed(engine)
    server, _, tmp = world
    pkg = _package(world, f"writable-{engine}")
    (pkg / "evals/cases/escape.yaml").unlink()
    (pkg / "evals/cases/writable.yaml").write_text(WRITABLE_CASE)
    (pkg / "evals/eval-config.json").write_text(json.dumps(
        {"version": 1, "engine": "claude-code", "timeout": 120, "sandbox": {"writable-paths": ["out"]}}))
    out = tmp / f"writable-{engine}.json"
    done = _aam_eval(server, "run", "--package", str(pkg), "--record", "--no-self-check", "--engine", engine,
                     *ENGINES[engine], "-o", str(out))
    case = json.loads(out.read_text())["cases"][0]
    # Denied at the syscall (Landlock), not found afterwards.
    assert case["verdict"] == "PASS", (case.get("error"), done.stdout + done.stderr)
    assert case["deterministic_checks"]["sandbox"] == "PASS"


def test_re_execution_runs_the_script_confined_again_with_the_same_verdict(
    recorded: tuple[str, Path, dict[str, Any]], world: tuple[ModelServer, Listener, Path]
) -> None:
    engine, pkg, _ = recorded
    datagrams = UDP.received
    out = pkg.parent / f"{engine}-rerun.json"
    done = _aam_eval(world[0], "run", "--package", str(pkg), "--replay", "--rerun", "--engine", engine,
                     *ENGINES[engine], "-o", str(out))
    rerun = json.loads(out.read_text())["cases"][0]
    assert (rerun["verdict"], rerun["replay_kind"]) == ("PASS", "rerun"), done.stdout + done.stderr
    assert world[1].accepted == 0 and _escaped() == []
    assert UDP.received == datagrams
    assert _unix_connections() == 0 and _shm_left() == []


def test_the_namespace_probe_agrees_with_unshare() -> None:
    """The per-run probe gives sessions a namespace exactly where `unshare -Urn true` runs, and
    `aam-eval doctor` reports that probe's finding."""
    import shutil
    import subprocess

    from conftest import aam_eval

    unshare = shutil.which("unshare", path="/usr/bin:/bin") or "unshare"
    runs = subprocess.run([unshare, "-Urn", "true"], capture_output=True, check=False).returncode == 0
    assert NAMESPACE is runs is (probe_namespace() == ""), probe_namespace()
    said = aam_eval("doctor", "--package", str(FIXTURE)).out
    assert ("user namespaces  available" if runs else "user namespaces  not available") in said, said


def _eventually(condition: Any, seconds: float = 3.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(condition())


def test_a_kernel_without_landlock_is_reported_and_required_refuses(
    world: tuple[ModelServer, Listener, Path]
) -> None:
    server, _, tmp = world
    if get_engine("claude-code").available():
        pytest.skip("claude-code is not installed")
    pkg = _package(world, "no-landlock")
    simulated = {"AAM_EVAL_SANDBOX_SIMULATE_NO_LANDLOCK": "1"}
    out = tmp / "no-landlock.json"
    done = _aam_eval(server, "run", "--package", str(pkg), "--record", "--no-self-check", "-o", str(out),
                     env=simulated)
    report = json.loads(out.read_text())
    network = "namespace" if NAMESPACE else "none"  # the namespace needs no Landlock
    assert report["cases"][0]["confinement"].startswith(
        f"writes: check; network: {network}; unix: session (simulated")
    assert report["config"]["sandbox"]["layers"].startswith("none: simulated")
    assert "the agent runs less confined than eval-config's sandbox asks" in done.stderr
    refused = _aam_eval(server, "run", "--package", str(pkg), "--record", "--sandbox-enforce", "required",
                        "-o", str(tmp / "required.json"), env=simulated)
    case = json.loads((tmp / "required.json").read_text())["cases"][0]
    assert refused.returncode == 1 and case["verdict"] == "ERROR"
    assert "sandbox.enforce is required, but this machine cannot confine the agent's writes" in case["error"]
    for escaped in _escaped() + _shm_left():  # unconfined, the probe did get out: what a missing layer means
        escaped.unlink()
    assert _unix_connections() == 0  # the supervisor needs no Landlock


@pytest.mark.parametrize("namespace", [True, False], ids=["namespace", "port-only"])
def test_only_the_model_port_gets_out(namespace: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session with the network off, with no CLI: HTTP to the model's port goes through (the
    relay, in a namespace of its own); a TCP connection to another port, a UDP or raw socket, a
    host name lookup do not, with or without the namespace (the container's case: Landlock and
    the seccomp filter alone); the relay and its UNIX socket are gone with the session."""
    import dataclasses
    import http.server

    from aam_eval_action.engines.process import run_process
    from aam_eval_action.sandbox.plan import confine

    if namespace and not NAMESPACE:
        pytest.skip("no user namespaces here")  # CI's machine has them (the probe test says so)
    model = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    other, datagrams = Listener(), UDP.received
    port = model.server_address[1]
    made = confine([tmp_path], port, network=False)
    if not namespace:
        made = dataclasses.replace(made, namespace=False)
    assert made.describe() == f"writes: landlock; network: {'namespace' if namespace else 'port-only'}; unix: session"
    assert made.no_udp
    script = f"""
import json, socket, urllib.request
out = {{"http": urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=5).status}}
def udp(family, address):
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", address)
for name, act in (("tcp", lambda: socket.create_connection(("127.0.0.1", {other.port}), timeout=2)),
                  ("udp", lambda: udp(socket.AF_INET, ("127.0.0.1", {UDP.port}))),
                  ("udp6", lambda: udp(socket.AF_INET6, ("::1", {UDP.port}))),
                  ("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)),
                  ("dns", lambda: socket.getaddrinfo("localhost.example", 80))):
    try:
        act()
        out[name] = "done"
    except OSError as exc:
        out[name] = "failed"
print(json.dumps(out))
"""
    import tempfile

    relays = tmp_path / "relays"  # where the runner's side puts its UNIX socket
    relays.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(relays))
    done = run_process([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), timeout=60,
                       confine=made)
    model.shutdown()
    model.server_close()
    other.sock.close()
    failed = dict.fromkeys(("tcp", "udp", "udp6", "raw", "dns"), "failed")
    assert json.loads(done.stdout) == {"http": 200, **failed}, done.stderr
    assert other.accepted == 0
    time.sleep(0.3)
    assert UDP.received == datagrams
    assert list(relays.iterdir()) == []


def test_a_root_runner_runs_the_session_as_the_agent_user_it_names() -> None:
    """AAM_EVAL_AGENT_USER (set in the action's live image): a root runner hands the session's
    folders to that user and the session runs as it, unable to read the runner's environment."""
    import tempfile

    from aam_eval_action.engines.process import run_process
    from aam_eval_action.sandbox.plan import agent_user, confine

    user = agent_user({"AAM_EVAL_AGENT_USER": "nobody"})
    if os.geteuid() != 0:  # a runner that is not root keeps its own user
        assert user is None
        return
    assert user is not None
    with pytest.raises(ValueError, match="names no user"):
        agent_user({"AAM_EVAL_AGENT_USER": "no-such-user-here"})
    with pytest.raises(ValueError, match="is root"):
        agent_user({"AAM_EVAL_AGENT_USER": "root"})
    base = Path(tempfile.mkdtemp(prefix="aam-agent-user-"))  # 0700, as a session's base is
    try:
        ws = base / "workspace"
        ws.mkdir()
        (ws / "given.txt").write_text("the package's file\n")
        made = confine([ws], None, network=True, user=user)
        assert made.describe() == "writes: landlock; network: open; unix: session; user: nobody"
        script = (f"id -u; echo made > out.txt; echo more >> given.txt; "
                  f"cat /proc/{os.getpid()}/environ >/dev/null 2>&1 && echo read || echo denied")
        done = run_process(["/bin/sh", "-c", script], cwd=ws, env={"PATH": "/usr/bin:/bin", "CANARY": "1"},
                           timeout=30, confine=made)
        assert done.stdout.split() == [str(user[1]), "denied"], done.stderr
        assert (ws / "out.txt").stat().st_uid == user[1]
        assert (ws / "given.txt").read_text() == "the package's file\nmore\n"
    finally:
        shutil.rmtree(base)


OWN_SOCKETS = r"""
import ctypes, errno, json, os, socket, sys, threading
out = {}
def attempt(name, act):
    try:
        act()
        out[name] = "done"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc))
def reach(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
own = socket.socket(socket.AF_UNIX)
own.bind("own.sock")
own.listen(64)
tmp = socket.socket(socket.AF_UNIX)
tmp.bind(os.path.join(sys.argv[2], "t.sock"))
tmp.listen(4)
attempt("own-relative", lambda: reach("own.sock"))
attempt("own-absolute", lambda: reach(os.path.abspath("own.sock")))
attempt("own-temp", lambda: reach(os.path.join(sys.argv[2], "t.sock")))
attempt("outside", lambda: reach(sys.argv[1]))
os.symlink(sys.argv[1], "link.sock")
attempt("symlink-to-outside", lambda: reach("link.sock"))
attempt("hardlink-to-outside", lambda: os.link(sys.argv[1], "hard.sock"))
attempt("datagram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("raw", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW))
attempt("datagram-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("stream-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("seqpacket-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=5).close())
nb = socket.socket()
nb.setblocking(False)
out["tcp-nonblocking"] = errno.errorcode[nb.connect_ex(("127.0.0.1", int(sys.argv[3])))]
# Another thread flips the address between the session's socket and the one outside while
# connect calls are in flight: the supervisor connects to its own copy, never the caller's.
libc = ctypes.CDLL(None, use_errno=True)
def sockaddr(path):
    raw = socket.AF_UNIX.to_bytes(2, sys.byteorder) + path.encode() + b"\0"
    return raw.ljust(110, b"\0")
inside, outside = sockaddr(os.path.abspath("own.sock")), sockaddr(sys.argv[1])
shared = ctypes.create_string_buffer(inside, 110)
stop = False
def flip():
    while not stop:
        ctypes.memmove(shared, outside, 110)
        ctypes.memmove(shared, inside, 110)
threading.Thread(target=flip, daemon=True).start()
reached = 0
for _ in range(int(sys.argv[4])):
    s = socket.socket(socket.AF_UNIX)
    reached += libc.connect(s.fileno(), shared, 110) == 0
    s.close()
    while True:
        own.setblocking(False)
        try:
            own.accept()[0].close()
        except BlockingIOError:
            break
stop = True
out["raced"] = reached
print(json.dumps(out))
"""


def test_only_the_sessions_own_unix_sockets_are_reached(tmp_path: Path) -> None:
    """With no CLI: a session reaches a UNIX socket it made in its workspace or temp folder, by a
    relative or absolute path, and nothing else: not one outside (mode 0666), nor through a
    symbolic or hard link to it, nor by flipping the address in memory while connect calls
    are in flight; no datagram UNIX socket; socketpairs and TCP to the model's port work, a
    non-blocking connect too. The session's exit status and signal reach the runner."""
    from aam_eval_action.engines.process import run_process
    from aam_eval_action.sandbox.plan import confine

    model = socket.create_server(("127.0.0.1", 0), backlog=64)
    threading.Thread(target=lambda: [model.accept() for _ in iter(int, 1)], daemon=True).start()
    outside = UnixListener(str(tmp_path / "outside.sock"))
    ws, tmp = tmp_path / "workspace", tmp_path / "tmp"
    ws.mkdir()
    tmp.mkdir()
    made = confine([ws, tmp], model.getsockname()[1], network=False)
    assert made.unix == "session"
    done = run_process([sys.executable, "-I", "-c", OWN_SOCKETS, str(tmp_path / "outside.sock"), str(tmp),
                        str(model.getsockname()[1]), "400"], cwd=ws, env={"PATH": os.environ["PATH"]},
                       timeout=120, confine=made)
    got = json.loads(done.stdout)
    assert got.pop("raced") > 0, done.stderr  # the session's own socket, reached in the race
    assert got == {
        "own-relative": "done", "own-absolute": "done", "own-temp": "done", "outside": "EACCES",
        "symlink-to-outside": "EACCES", "hardlink-to-outside": "EXDEV", "datagram": "EACCES", "raw": "EACCES",
        "datagram-pair": "EACCES", "stream-pair": "done", "seqpacket-pair": "done", "tcp": "done",
        "tcp-nonblocking": "EINPROGRESS"}, done.stderr
    assert outside.accepted == 0
    outside.sock.close()
    model.close()
    exits = run_process(["/bin/sh", "-c", "exit 3"], cwd=ws, env={}, timeout=30, confine=made)
    killed = run_process(["/bin/sh", "-c", "kill -KILL $$"], cwd=ws, env={}, timeout=30, confine=made)
    assert (exits.exit_code, killed.exit_code) == (3, -9)
