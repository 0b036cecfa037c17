"""`python -I -m aam_eval_action.sandbox.enter SPEC -- ARGV...`: confine this process as SPEC
(JSON) says, then run ARGV as its child and stay as the session's parent. Everything ARGV starts
inherits the confinement: the agent CLI, its tools, hooks, scripts and MCP servers.

SPEC: `abi` (the Landlock ABI to apply, 0: none), `writable`, `tcp_ports` (None: the network is
open); when the session gets a network namespace of its own, `netns`: the model proxy's `port`
and the UNIX `socket` the runner relays to it from; when a root runner hands the session to an
unprivileged user, `user`: its uid and gid; `no_udp`: the seccomp filter refuses every IP socket
but a TCP one; `unix`: `session` (the launcher stays as the session's supervisor, answering its
`connect` calls: a UNIX socket only beneath `folders`, an abstract one only where `abstract` says
the kernel scopes it) or `none` (the filter refuses every `socket(AF_UNIX)`); `runner`: the pid of
the run that started it, whose death ends the session (`launch`); `confine: false`: nothing to
enforce, the launcher only stays as the session's parent."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

from aam_eval_action.sandbox import landlock, launch, netns, seccomp, unixguard

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing in the launcher
if TYPE_CHECKING:
    from typing import Any

FAILED = 126
"""The exit status when the sandbox could not be entered: the CLI never ran."""


def enter(spec: dict[str, Any]) -> None:
    """Confine this process as `spec` says. Raises OSError (LandlockError, NamespaceError)."""
    abi = int(spec["abi"])
    if spec.get("user"):
        _become(int(spec["user"][0]), int(spec["user"][1]))
    net = spec.get("netns")
    listener = None
    if net:
        netns.unshare_network()
        listener = netns.listen(int(net["port"]))
    if abi:
        landlock.restrict_self(abi, spec["writable"], spec.get("tcp_ports"))
    else:  # the namespace's capabilities are not the CLI's
        _no_privileges()
    if net and listener is not None:

        def relay_sandbox() -> None:  # the relay writes nothing and makes no TCP connection
            if abi:
                landlock.restrict_self(abi, [], [])

        netns.start_inside_relay(listener, str(net["socket"]), relay_sandbox)
    if spec.get("unix") != seccomp.SUPERVISE and (spec.get("no_udp") or spec.get("unix")):
        seccomp.restrict_self(no_udp=bool(spec.get("no_udp")), unix=seccomp.REFUSE)


def _become(uid: int, gid: int) -> None:
    """Root no more: no capability bound, then the session's unprivileged user and group."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(landlock.CAP_LAST + 1):
        libc.prctl(landlock.PR_CAPBSET_DROP, cap, 0, 0, 0)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def _no_privileges() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(landlock.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    landlock.drop_capabilities(libc)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m aam_eval_action.sandbox.enter SPEC -- ARGV...", file=sys.stderr)
        return 2
    spec = json.loads(argv[1])
    runner = spec.get("runner")
    launch.die_with(runner)
    try:
        if spec.get("confine", True):
            enter(spec)
    except OSError as exc:
        print(f"aam-eval sandbox: not entered: {exc}", file=sys.stderr)
        return FAILED
    launch.die_with(runner)  # a change of user cleared it
    if spec.get("unix") == seccomp.SUPERVISE:  # the launcher answers the session's connect calls
        status = unixguard.supervise(argv[3:], spec["folders"], bool(spec.get("abstract")),
                                     bool(spec.get("no_udp")), runner)
    else:
        status = launch.run(argv[3:], runner)
    if status < 0:  # killed by a signal: so is this process, for its runner to see
        if -status not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
