"""No UDP, raw or other datagram socket for a session whose network is off: a seccomp filter.

Landlock's network rules cover TCP only, so where a session has no network namespace of its
own (inside the action's container, where Docker's default profile allows no user namespace;
on stock Ubuntu 24.04), a UDP datagram, a DNS query included, would still leave. This filter,
installed by the sandbox's launcher after Landlock and inherited by everything the CLI starts,
makes `socket(2)` refuse every IPv4 and IPv6 socket but a TCP one (`EACCES`, as Landlock refuses
a TCP connection): no UDP, raw, SCTP or MPTCP socket; and `io_uring_setup(2)` (`ENOSYS`: its
socket operations would pass around the filter; libuv then uses its thread pool). A system call
of another ABI (32-bit or x32) is refused altogether. It needs no privilege (`no_new_privs`
only), and Docker's default seccomp profile lets a container add a filter of its own.

Run as `python -I -m aam_eval_action.sandbox.seccomp`, it applies the filter to itself and
exits 0 when a UDP socket is then refused and a TCP one is not: the once-per-run probe. Like
`landlock`, this module imports nothing of the package.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import socket
import sys

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
LD_W_ABS, JEQ_K, JGE_K, AND_K, RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
NR, ARCH, ARG0, ARG1, ARG2 = 0, 4, 16, 24, 32
"""Offsets in `struct seccomp_data` (the low 32 bits of an argument, on little-endian)."""
X32_BIT = 0x40000000
SOCK_TYPE_MASK = 0xF
"""`type` without SOCK_NONBLOCK and SOCK_CLOEXEC."""

MACHINES = {
    # machine: (AUDIT_ARCH_*, socket, io_uring_setup, x32 syscalls exist)
    "x86_64": (0xC000003E, 41, 425, True),
    "aarch64": (0xC00000B7, 198, 425, False),
    "arm64": (0xC00000B7, 198, 425, False),
}


class SeccompError(OSError):
    """The filter could not be installed."""


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jt, jf, k) instructions, for this machine's system call table."""
    arch, nr_socket, nr_uring, x32 = MACHINES[machine]
    deny = RET_K, 0, 0, RET_ERRNO | errno.EACCES
    out = [
        (LD_W_ABS, 0, 0, ARCH),
        (JEQ_K, 1, 0, arch),
        (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS),  # another ABI
        (LD_W_ABS, 0, 0, NR),
    ]
    if x32:
        out += [(JGE_K, 0, 1, X32_BIT), (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]
    out += [
        (JEQ_K, 0, 1, nr_uring),
        (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS),
        (JEQ_K, 1, 0, nr_socket),
        (RET_K, 0, 0, RET_ALLOW),
        (LD_W_ABS, 0, 0, ARG0),  # domain
        (JEQ_K, 2, 0, socket.AF_INET),
        (JEQ_K, 1, 0, socket.AF_INET6),
        (RET_K, 0, 0, RET_ALLOW),
        (LD_W_ABS, 0, 0, ARG1),  # type
        (AND_K, 0, 0, SOCK_TYPE_MASK),
        (JEQ_K, 0, 4, socket.SOCK_STREAM),
        (LD_W_ABS, 0, 0, ARG2),  # protocol: TCP, which Landlock's port rule covers (not SCTP, MPTCP)
        (JEQ_K, 1, 0, 0),
        (JEQ_K, 0, 1, socket.IPPROTO_TCP),
        (RET_K, 0, 0, RET_ALLOW),
        deny,
    ]
    return out


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def supported() -> str:
    """Why this machine cannot have the filter ("" when it can, as far as can be told without
    installing it)."""
    if platform.system() != "Linux":
        return "not Linux"
    if platform.machine() not in MACHINES:
        return f"no filter for {platform.machine()}"
    if sys.byteorder != "little":
        return "a big-endian machine"
    return ""


def restrict_self() -> None:
    """Install the filter on this process and all it will start. Raises SeccompError."""
    why = supported()
    if why:
        raise SeccompError(errno.ENOSYS, f"seccomp: {why}")
    code = program(platform.machine())
    filters = (_Filter * len(code))(*(_Filter(*instruction) for instruction in code))
    prog = _Program(len(code), filters)
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0:
        err = ctypes.get_errno()
        raise SeccompError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) < 0:
        err = ctypes.get_errno()
        raise SeccompError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")


def _probe() -> int:
    try:
        restrict_self()
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
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_probe())
