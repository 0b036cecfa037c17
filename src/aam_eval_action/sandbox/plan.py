"""What confines one agent session: the folders it may write, the one TCP port it may reach, the
UNIX sockets it may connect to, and how that is enforced here (Landlock at the kernel's ABI, else
only the after-the-fact checks; a network namespace of its own where user namespaces are
allowed; a seccomp filter and the session's supervisor for sockets)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from aam_eval_action.sandbox import landlock

Writes = str
"""`landlock` (the kernel refuses any other write) or `check` (found after the fact)."""
Network = str
"""`open` (sandbox.network: true), `namespace` (a network namespace of its own: nothing but the
model proxy's port, relayed, TCP or UDP), `port-only` (Landlock: TCP to the model proxy's port
alone, no listening; a seccomp filter refuses every other IP socket, UDP included, else the
report adds `udp: open`), or `none` (nothing enforced: only the CLI's own web tools are off)."""
Unix = str
"""`session` (the supervisor answers every `connect`: a UNIX socket only beneath the session's
own folders), `none` (every `socket(AF_UNIX)` refused: socketpairs only), or "" (not enforced
here: the report says `unix: open`)."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
           "/dev/pts")
"""The devices a session may write: what a CLI, its shell and a terminal need. No `/dev/shm`: a
file there would outlive the session, seen by every process on the machine."""


_Probe = TypeVar("_Probe", bound=Callable[..., Any])


def _once(probe: _Probe) -> _Probe:
    """`functools.cache` for a probe that starts a child process: sessions starting together
    wait for the one probe rather than each starting its own."""
    cached = functools.cache(probe)
    lock = threading.Lock()

    @functools.wraps(probe)
    def once(*args: Any) -> Any:
        with lock:
            return cached(*args)

    return cast(_Probe, once)


@_once
def probe(simulate_none: bool = False) -> tuple[int, str]:
    """The kernel's Landlock ABI (0: none) and why not, probed once per run."""
    return landlock.abi(simulate_none)


@_once
def probe_seccomp() -> str:
    """Why this machine cannot refuse a session's UDP sockets ("" when it can): the seccomp
    filter is tried in a child process, once per run."""
    from aam_eval_action.sandbox import seccomp

    return seccomp.supported() or _tried_in_child("seccomp")


@_once
def probe_unix() -> str:
    """Why this machine cannot have the session's supervisor answer its connections ("" when it
    can): a supervised child is tried, once per run. Where not, the filter refuses every
    `socket(AF_UNIX)` instead."""
    return probe_seccomp() or probe_supervisor()


@_once
def probe_supervisor() -> str:
    """The supervised child of `probe_unix`, tried on its own: its answer counts only where the
    seccomp filter works, but it need not wait for that probe (`probe_ahead` starts both)."""
    return _tried_in_child("unixguard")


SIMULATE_NO_SUPERVISOR = "AAM_EVAL_SANDBOX_SIMULATE_NO_SUPERVISOR"
"""Set to 1 in the runner's environment, the supervisor is taken as refused here: what a
container under Docker's default seccomp profile does (no `pidfd_getfd`), on any machine."""


def simulated_no_supervisor(runner_env: Mapping[str, str]) -> bool:
    return runner_env.get(SIMULATE_NO_SUPERVISOR) == "1"


def unix_layer(no_supervisor: bool = False) -> tuple[Unix, str]:
    """How sessions here are kept from UNIX sockets outside them, and why not better
    (`no_supervisor`: simulated, see SIMULATE_NO_SUPERVISOR)."""
    if probe_seccomp():
        return "", f"no seccomp filter ({probe_seccomp()})"
    simulated = f"simulated: {SIMULATE_NO_SUPERVISOR}=1 in the runner's environment"
    why = simulated if no_supervisor else probe_unix()
    return ("none", f"no supervisor ({why}): socket(AF_UNIX) refused") if why else ("session", "")


@_once
def probe_namespace() -> str:
    """Why this machine gives a session no network namespace of its own ("" when it does): the
    namespace is tried in a child process, once per run."""
    return "not Linux" if sys.platform != "linux" else _tried_in_child("netns")


def probe_ahead(simulate_none: bool = False) -> None:
    """The machine's probes started now, side by side (each in a thread of its own), so the
    first session of a live run finds them done rather than running them one after another
    (`report.probe_sandbox` starts them with every run: the report says what they found)."""
    for name, call, args in (("landlock", probe, (simulate_none,)), ("netns", probe_namespace, ()),
                             ("seccomp", probe_seccomp, ()), ("unix", probe_supervisor, ())):
        threading.Thread(target=call, args=args, name=f"aam-eval-probe-{name}", daemon=True).start()


def _tried_in_child(layer: str) -> str:
    """"" when `python -I -m aam_eval_action.sandbox.<layer>` (the layer's probe) exits 0, else
    the last line it said, or why it did not run."""
    try:
        probe = [sys.executable, "-I", "-m", f"aam_eval_action.sandbox.{layer}"]
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
                              check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the {layer} probe did not run: {exc}"
    said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return "" if done.returncode == 0 else said


def simulated_none(runner_env: Mapping[str, str]) -> bool:
    """Whether the runner asks to be treated as a machine without Landlock."""
    return runner_env.get(landlock.SIMULATE_NONE) == "1"


@dataclass(frozen=True)
class Confinement:
    """One session's sandbox: what it may write and reach, and the ABI that enforces it."""

    writable: tuple[str, ...]
    """Folders (and files) beneath which the session may write."""
    tcp_ports: tuple[int, ...] | None
    """The only TCP ports it may connect to; None: the network is open."""
    abi: int
    """Landlock ABI that enforces it; 0: not enforced here."""
    why_not: str = ""
    """Why nothing is enforced, when `abi` is 0."""
    by: str = ""
    """The engine's own sandbox, when it confines the session's writes instead of ours: Codex's,
    where ours has no Landlock (inside Landlock, Codex runs with its own off)."""
    namespace: bool = False
    """The session gets a network namespace of its own, its one way out the model proxy's port."""
    seatbelt: bool = False
    """macOS: a generated `sandbox-exec` profile enforces the writes and the port, not Landlock."""
    no_udp: bool = False
    """A seccomp filter refuses every IP socket but a TCP one (no UDP, DNS included): with the
    network off, where the kernel takes the filter."""
    unix: Unix = ""
    """How the session is kept from UNIX sockets outside it (see `Unix`)."""
    user: tuple[str, int, int] | None = None
    """(name, uid, gid) of the unprivileged user the session runs as: where the runner is root and
    names one in AAM_EVAL_AGENT_USER (the action's live image does). Its writable folders are
    handed to that user before it starts."""

    @property
    def writes(self) -> Writes:
        return self.by or ("landlock" if self.abi else "sandbox-exec" if self.seatbelt else "check")

    @property
    def network(self) -> Network:
        if self.tcp_ports is None:
            return "open"
        if self.by:
            return self.by
        if self.namespace:
            return "namespace"
        return "port-only" if self.abi >= 4 or self.seatbelt else "none"

    def describe(self) -> str:
        """`writes: landlock; network: port-only`, as the report and the console say it."""
        text = f"writes: {self.writes}; network: {self.network}"
        if self.network == "port-only" and not (self.no_udp or self.seatbelt):
            text += "; udp: open"
        if not self.by:
            text += f"; unix: {self.unix or 'open'}"
        if self.user and not self.by:
            text += f"; user: {self.user[0]}"
        return text + (f" ({self.why_not})" if self.why_not else "")

    def folders(self) -> list[str]:
        """The session's own folders (and files): what it may write, devices aside. Its UNIX
        sockets are the ones beneath them."""
        return [p for p in self.writable if p not in DEVICES]

    def also_writable(self, *paths: Path) -> Confinement:
        """The same sandbox with more folders writable (a CLI's shared cache)."""
        return replace(self, writable=(*self.writable, *(str(p) for p in paths)))

    @contextlib.contextmanager
    def entered(self, argv: Sequence[str]) -> Iterator[list[str]]:
        """The command that runs `argv` inside this sandbox (as it is, when nothing enforces it),
        while the runner's side of the namespace's relay to the model proxy is up."""
        if self.seatbelt and not self.by:
            from aam_eval_action.sandbox import seatbelt

            yield seatbelt.wrap(argv, self.writable, self.tcp_ports)
            return
        if self.by or not (self.abi or self.namespace or self.user or self.no_udp or self.unix):
            yield launched(argv)
            return
        spec: dict[str, object] = {"abi": self.abi, "writable": list(self.writable),
                                   "tcp_ports": list(self.tcp_ports) if self.tcp_ports is not None else None,
                                   "no_udp": self.no_udp, "unix": self.unix, "folders": self.folders(),
                                   "abstract": self.abi >= 6 or self.namespace}
        if self.user:
            hand_over([Path(p) for p in self.folders()], self.user[1], self.user[2])
            spec["user"] = list(self.user[1:])
        relay = None
        if self.namespace and self.tcp_ports:
            from aam_eval_action.sandbox.netns import OutsideRelay

            relay = OutsideRelay(self.tcp_ports[0])
            spec["netns"] = {"port": self.tcp_ports[0], "socket": relay.path}
        try:
            yield launched(argv, spec)
        finally:
            if relay is not None:
                relay.close()


def launched(argv: Sequence[str], spec: dict[str, object] | None = None) -> list[str]:
    """`argv` under the launcher, which confines it as `spec` says (nothing, without one) and
    stays as its parent, so that the session dies with this run however the run ends (on Linux;
    elsewhere `argv` as it is, when there is nothing to confine)."""
    if sys.platform != "linux" and spec is None:
        return list(argv)
    full = {**(spec or {"confine": False}), "runner": os.getpid()}
    return [sys.executable, "-I", "-m", "aam_eval_action.sandbox.enter", json.dumps(full), "--", *argv]


@functools.cache
def hide_environment() -> None:
    """This process's environment (the runner's keys) unreadable to the sessions it starts: not
    dumpable, its /proc entries need a capability the sandboxed agent has given up."""
    import ctypes

    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


AGENT_USER = "AAM_EVAL_AGENT_USER"
"""The runner's variable naming the unprivileged user agent sessions run as when it is root."""


def agent_user(runner_env: Mapping[str, str]) -> tuple[str, int, int] | None:
    """(name, uid, gid) of AAM_EVAL_AGENT_USER when this process is root; None otherwise.
    Raises ValueError for a user this machine does not have, or root itself."""
    name = runner_env.get(AGENT_USER, "").strip()
    if not name or sys.platform == "win32" or os.geteuid() != 0:
        return None
    import pwd

    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ValueError(f"{AGENT_USER}={name!r} names no user of this machine") from None
    if entry.pw_uid == 0:
        raise ValueError(f"{AGENT_USER}={name!r} is root: name an unprivileged user")
    return name, entry.pw_uid, entry.pw_gid


def hand_over(folders: Sequence[Path], uid: int, gid: int) -> None:
    """Give the session's folders (and all beneath) to its user, and let it through their parent."""
    for folder in folders:
        if not folder.exists():
            continue
        parent = folder.parent
        mode = parent.stat().st_mode
        if not mode & 0o001:
            os.chmod(parent, (mode & 0o7777) | 0o001)  # through, not listed
        for path in [folder, *folder.rglob("*")]:
            os.lchown(path, uid, gid)


def confine(
    writable: Sequence[Path], proxy_port: int | None, network: bool, simulate_none: bool = False,
    user: tuple[str, int, int] | None = None, no_supervisor: bool = False,
) -> Confinement:
    """The sandbox of a session that writes beneath `writable` and reaches its model through
    `proxy_port` (every session may write the `DEVICES` too), as `user` when given."""
    version, why = probe(simulate_none)
    if version:
        hide_environment()
    namespace = not network and proxy_port is not None and not probe_namespace()
    mac = not version and seatbelt_available()
    no_udp = not network and not mac and not probe_seccomp()
    unix = "session" if mac else unix_layer(no_supervisor)[0]
    return Confinement(writable=(*(str(p) for p in writable), *DEVICES),
                       tcp_ports=None if network else tuple(p for p in [proxy_port] if p),
                       abi=version, why_not="" if mac else why, namespace=namespace, seatbelt=mac,
                       no_udp=no_udp, unix=unix, user=user)


def seatbelt_available() -> bool:
    """macOS with `sandbox-exec`."""
    from aam_eval_action.sandbox import seatbelt

    return seatbelt.available()


def short_of(c: Confinement, network: bool) -> str | None:
    """How this sandbox falls short of what eval-config's `sandbox` asks, or None."""
    if c.by:
        return None
    if not c.abi and not c.seatbelt:
        return f"this machine cannot confine the agent's writes ({c.why_not})"
    if not network and c.network not in ("port-only", "namespace"):
        return (f"this kernel's Landlock (ABI {c.abi}) cannot limit the agent's network to the model's "
                "port (that needs ABI 4, Linux 6.7)")
    if not c.unix:
        return f"this machine cannot keep the agent from UNIX sockets outside its session ({unix_layer()[1]})"
    return None
