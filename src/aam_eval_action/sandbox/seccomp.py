"""The session's seccomp filter: no UNIX socket outside the session, and, with the network off,
no UDP, raw or other datagram socket.

Installed by the sandbox's launcher after Landlock and inherited by everything the CLI starts:

* `connect(2)`, on any socket, is answered by the session's supervisor (`unixguard`), which
  refuses a UNIX socket outside the session's folders and makes every other connection itself;
  where the supervisor cannot be had, `socket(AF_UNIX)` is refused instead (`EACCES`);
* a datagram UNIX socket (`SOCK_DGRAM`, or `SOCK_RAW`, which the kernel makes a datagram one)
  is refused by `socket(2)` and `socketpair(2)`: each of its sends may name any address;
* `io_uring_setup(2)` fails (`ENOSYS`: its operations pass around the filter; libuv then uses
  its thread pool); a system call of another ABI (32-bit or x32) is refused altogether;
* with the network off: `socket(2)` refuses every IPv4 and IPv6 socket but a TCP one (no UDP,
  raw, SCTP or MPTCP socket, which Landlock's port rule would not see), and a TCP Fast Open send
  (`MSG_FASTOPEN`, a connection made by `sendto`/`sendmsg`) is refused. Landlock's network
  rules cover TCP only, so where a session has no network namespace of its own (inside the
  action's container, where Docker's default profile allows no user namespace; on stock Ubuntu
  24.04), a UDP datagram, a DNS query included, would otherwise still leave.

It needs no privilege (`no_new_privs` only), and Docker's default seccomp profile lets a
container add a filter of its own.

Run as `python -I -m aam_eval_action.sandbox.seccomp`, it applies the network-off filter to
itself and exits 0 when a UDP socket and a datagram UNIX socket are then refused and a TCP one
is not: the once-per-run probe. Like `landlock`, this module imports nothing of the package.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import sys

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER, FLAG_NEW_LISTENER = 1, 1 << 3
RET_ALLOW, RET_USER_NOTIF, RET_ERRNO = 0x7FFF0000, 0x7FC00000, 0x00050000
LD_W_ABS, JEQ_K, JGE_K, JSET_K, AND_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
NR, ARCH, ARG0, ARG1, ARG2, ARG3 = 0, 4, 16, 24, 32, 40
"""Offsets in `struct seccomp_data` (the low 32 bits of an argument, on little-endian)."""
X32_BIT = 0x40000000
SOCK_TYPE_MASK = 0xF
"""`type` without SOCK_NONBLOCK and SOCK_CLOEXEC."""
MSG_FASTOPEN = 0x20000000
SUPERVISE, REFUSE = "session", "none"
"""`unix`: connections answered by the supervisor, or every `socket(AF_UNIX)` refused."""

MACHINES = {
    # machine: (AUDIT_ARCH_*, {syscall: number}, x32 syscalls exist)
    "x86_64": (0xC000003E, {"socket": 41, "connect": 42, "sendto": 44, "sendmsg": 46, "socketpair": 53,
                            "sendmmsg": 307, "seccomp": 317, "io_uring_setup": 425}, True),
    "aarch64": (0xC00000B7, {"socket": 198, "socketpair": 199, "connect": 203, "sendto": 206, "sendmsg": 211,
                             "seccomp": 277, "sendmmsg": 269, "io_uring_setup": 425}, False),
}
MACHINES["arm64"] = MACHINES["aarch64"]


class SeccompError(OSError):
    """The filter could not be installed."""


Step = tuple[int, "int | str", "int | str", int]
"""(code, jump if true, jump if false, k): a jump is 0 or the label it goes to."""


def _assemble(steps: list[Step | str]) -> list[tuple[int, int, int, int]]:
    """Classic BPF from steps and labels (a str alone marks where a label is)."""
    where: dict[str, int] = {}
    for step in steps:
        if isinstance(step, str):
            where[step] = sum(1 for s in steps[:steps.index(step)] if not isinstance(s, str))
    out: list[tuple[int, int, int, int]] = []
    for step in steps:
        if isinstance(step, str):
            continue
        code, jt, jf, k = step
        here = len(out)
        true, false = (where[j] - here - 1 if isinstance(j, str) else j for j in (jt, jf))
        out.append((code, true, false, k))
    return out


def program(machine: str, no_udp: bool = True, unix: str = SUPERVISE) -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jt, jf, k) instructions, for this machine's system call table."""
    arch, nr, x32 = MACHINES[machine]
    steps: list[Step | str] = [
        (LD_W_ABS, 0, 0, ARCH),
        (JEQ_K, 0, "enosys", arch),  # another ABI
        (LD_W_ABS, 0, 0, NR),
    ]
    if x32:
        steps.append((JGE_K, "enosys", 0, X32_BIT))
    steps += [
        (JEQ_K, "enosys", 0, nr["io_uring_setup"]),
        (JEQ_K, "socket", 0, nr["socket"]),
        (JEQ_K, "pair", 0, nr["socketpair"]),
    ]
    if unix == SUPERVISE:
        steps.append((JEQ_K, "notify", 0, nr["connect"]))
    if no_udp:
        steps += [(JEQ_K, "send", 0, nr["sendto"]), (JEQ_K, "send", 0, nr["sendmmsg"]),
                  (JEQ_K, "sendmsg", 0, nr["sendmsg"])]
    steps += [(RET_K, 0, 0, RET_ALLOW), "socket", (LD_W_ABS, 0, 0, ARG0)]  # domain
    steps.append((JEQ_K, "unix" if unix == SUPERVISE else "deny", 0, socket.AF_UNIX))
    if no_udp:
        steps += [
            (JEQ_K, "inet", 0, socket.AF_INET),
            (JEQ_K, "inet", "allow", socket.AF_INET6),
            "inet",
            (LD_W_ABS, 0, 0, ARG1),  # type
            (AND_K, 0, 0, SOCK_TYPE_MASK),
            (JEQ_K, 0, "deny", socket.SOCK_STREAM),
            (LD_W_ABS, 0, 0, ARG2),  # protocol: TCP, which Landlock's port rule covers (not SCTP, MPTCP)
            (JEQ_K, "allow", 0, 0),
            (JEQ_K, "allow", "deny", socket.IPPROTO_TCP),
            "sendmsg", (LD_W_ABS, 0, 0, ARG2), (JSET_K, "deny", "allow", MSG_FASTOPEN),  # flags
            "send", (LD_W_ABS, 0, 0, ARG3), (JSET_K, "deny", "allow", MSG_FASTOPEN),
        ]
    else:
        steps.append((RET_K, 0, 0, RET_ALLOW))
    steps += [
        "pair", (LD_W_ABS, 0, 0, ARG0), (JEQ_K, 0, "allow", socket.AF_UNIX),
        "unix",  # a stream or seqpacket UNIX socket only: a datagram one may send to any address
        (LD_W_ABS, 0, 0, ARG1), (AND_K, 0, 0, SOCK_TYPE_MASK),
        (JEQ_K, "allow", 0, socket.SOCK_STREAM), (JEQ_K, "allow", "deny", socket.SOCK_SEQPACKET),
        "notify", (RET_K, 0, 0, RET_USER_NOTIF),
        "enosys", (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS),
        "allow", (RET_K, 0, 0, RET_ALLOW),
        "deny", (RET_K, 0, 0, RET_ERRNO | errno.EACCES),
    ]
    return _assemble(steps)


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def supported() -> str:
    """Why this machine cannot have the filter ("" when it can, as far as can be told without
    installing it)."""
    if os.uname().sysname != "Linux":
        return "not Linux"
    if os.uname().machine not in MACHINES:
        return f"no filter for {os.uname().machine}"
    if sys.byteorder != "little":
        return "a big-endian machine"
    return ""


def restrict_self(no_udp: bool = True, unix: str = SUPERVISE) -> int | None:
    """Install the filter on this process and all it will start: the descriptor of its listener
    when `connect` is supervised (`unix` SUPERVISE), else None. Raises SeccompError."""
    why = supported()
    if why:
        raise SeccompError(errno.ENOSYS, f"seccomp: {why}")
    machine = os.uname().machine
    code = program(machine, no_udp, unix)
    filters = (_Filter * len(code))(*(_Filter(*instruction) for instruction in code))
    prog = _Program(len(code), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0:
        err = ctypes.get_errno()
        raise SeccompError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
    flags = FLAG_NEW_LISTENER if unix == SUPERVISE else 0
    done = libc.syscall(MACHINES[machine][1]["seccomp"], SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(prog))
    if done < 0:
        err = ctypes.get_errno()
        raise SeccompError(err, f"seccomp(SECCOMP_SET_MODE_FILTER): {os.strerror(err)}")
    return int(done) if flags else None


def _probe() -> int:
    try:
        restrict_self(no_udp=True, unix=REFUSE)
    except OSError as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
    except PermissionError:
        pass
    else:
        print("the filter let a UDP socket through", file=sys.stderr)
        return 1
    for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW):
        try:
            socket.socketpair(socket.AF_UNIX, kind)
        except PermissionError:
            continue
        print("the filter let a datagram UNIX socket through", file=sys.stderr)
        return 1
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return 0


if __name__ == "__main__":
    raise SystemExit(_probe())
