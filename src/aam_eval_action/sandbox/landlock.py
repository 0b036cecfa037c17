"""Landlock, the Linux LSM an unprivileged process uses to confine itself and everything it starts.

A small ctypes binding of its three system calls (Linux >= 5.13; TCP port rules from ABI 4,
Linux 6.7; scoping of abstract UNIX sockets and signals from ABI 6). No privilege is needed, and
Docker's default seccomp profile allows the calls. This module imports nothing of the package:
the sandbox's launcher loads it before it runs the agent CLI.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Sequence

# Syscall numbers are the same on x86_64 and aarch64 (the generic table).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
PR_SET_NO_NEW_PRIVS = 38
O_PATH, O_CLOEXEC = 0o10000000, 0o2000000
ARCHES = ("x86_64", "aarch64", "arm64")

# Filesystem rights (bit, ABI it appeared in).
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
WRITES_V1 = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK \
    | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
"""Every right that changes the filesystem, as ABI 1 knows them: reading stays free."""
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1


class _Ruleset(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class LandlockError(OSError):
    """Landlock could not be applied; the message says which step failed."""


def _error(step: str) -> LandlockError:
    err = ctypes.get_errno()
    return LandlockError(err, f"{step}: {os.strerror(err)}")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


SIMULATE_NONE = "AAM_EVAL_SANDBOX_SIMULATE_NO_LANDLOCK"
"""Set to 1 in the runner's environment, the probe finds no Landlock: what a kernel without it
does, to see the fallback and `enforce: required` on a machine that has it."""


def abi(simulate_none: bool = False) -> tuple[int, str]:
    """The kernel's Landlock ABI version (0 when there is none) and, when 0, why."""
    if os.uname().sysname != "Linux" or os.uname().machine not in ARCHES:
        return 0, f"not Linux on {' or '.join(ARCHES[:2])}"
    if simulate_none:
        return 0, f"simulated: {SIMULATE_NONE}=1 in the runner's environment"
    libc = _libc()
    version = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    if version < 0:
        err = ctypes.get_errno()
        why = {errno.ENOSYS: "the kernel has no Landlock (before Linux 5.13, or the syscall is filtered)",
               errno.EOPNOTSUPP: "Landlock is built in but not enabled (lsm= boot parameter)"}
        return 0, why.get(err, os.strerror(err))
    return int(version), ""


def fs_rights(version: int) -> int:
    """The write rights this ABI can restrict."""
    rights = WRITES_V1
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict_self(version: int, writable: Sequence[str], tcp_ports: Sequence[int] | None) -> None:
    """Confine this process and all it will start: writes only beneath `writable`; with
    `tcp_ports` (ABI >= 4), TCP connect only to those ports and no TCP bind; from ABI 6, no
    abstract UNIX socket or signal outside the sandbox. Raises LandlockError."""
    libc = _libc()
    rights = fs_rights(version)
    net = BIND_TCP | CONNECT_TCP if tcp_ports is not None and version >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if version >= 6 else 0
    attr = _Ruleset(rights, net, scoped)
    size = ctypes.sizeof(_Ruleset) if version >= 6 else (16 if version >= 4 else 8)
    fd = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if fd < 0:
        raise _error("landlock_create_ruleset")
    try:
        for path in writable:
            _allow_path(libc, fd, path, rights)
        for port in tcp_ports or [] if net else []:
            rule = _NetPort(CONNECT_TCP, port)
            if libc.syscall(SYS_ADD_RULE, fd, RULE_NET_PORT, ctypes.byref(rule), 0) < 0:
                raise _error(f"landlock_add_rule port {port}")
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0:
            raise _error("prctl(PR_SET_NO_NEW_PRIVS)")
        drop_capabilities(libc)
        if libc.syscall(SYS_RESTRICT_SELF, fd, 0) < 0:
            raise _error("landlock_restrict_self")
    finally:
        os.close(fd)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


CAPABILITY_VERSION_3 = 0x20080522
PR_CAPBSET_DROP, CAP_LAST = 24, 63


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """Give up every capability (a root runner's agent then cannot read other processes'
    environments or bypass file permissions); a process without any has nothing to drop."""
    for cap in range(CAP_LAST + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails without CAP_SETPCAP: nothing to drop
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) < 0:
        raise _error("capset (dropping every capability)")


def _allow_path(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    """Allow the write rights beneath `path` (a file gets only those a file can have)."""
    try:
        fd = os.open(path, O_PATH | O_CLOEXEC)
    except FileNotFoundError:
        return  # nothing there to write into: nothing to allow
    try:
        if not os.path.isdir(path):
            rights &= WRITE_FILE | TRUNCATE | IOCTL_DEV
        rule = _PathBeneath(rights, fd)
        if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) < 0:
            raise _error(f"landlock_add_rule {path}")
    finally:
        os.close(fd)
