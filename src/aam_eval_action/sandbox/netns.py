"""A network namespace of the session's own, where the kernel lets an unprivileged process make
one (with a user namespace): the session sees a loopback interface and nothing else, so nothing
leaves it, TCP or UDP, DNS included, whatever the address or port. The one way out is the model
proxy's port: a relay inside listens on the namespace's 127.0.0.1:<port> and passes each
connection through a UNIX socket to the runner's side (`OutsideRelay`), which passes it on to the
proxy. Landlock's port rule, which does not look at the address and does not cover UDP, stays on
inside it.

Like `landlock`, this module imports nothing of the package but that module: the sandbox's
launcher loads it before it becomes the agent CLI. `python -I -m aam_eval_action.sandbox.netns`
tries the namespace in a child process and says why not (the per-run probe).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Callable

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sH22x"
"""`struct ifreq` with its flags (40 bytes on 64-bit Linux)."""
PR_SET_PDEATHSIG = 1
CHUNK = 1 << 16
SUN_PATH = 108
"""The longest path a UNIX socket may have, its final NUL included."""


class NamespaceError(OSError):
    """The namespace could not be made; the message says which step failed."""


def unshare_network() -> None:
    """Move this (single-threaded) process into a new user and network namespace, its own uid
    and gid mapped to themselves, with the loopback interface up. Raises NamespaceError."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0:
        err = ctypes.get_errno()
        raise NamespaceError(err, f"unshare(CLONE_NEWUSER | CLONE_NEWNET): {os.strerror(err)}")
    try:
        maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
        for name, text in maps:
            with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
                handle.write(text)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            got = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0))
            flags = struct.unpack(IFREQ, got)[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))
    except OSError as exc:  # AppArmor's restriction lets unshare through but keeps the capabilities
        raise NamespaceError(exc.errno or 0, f"setting up the namespace: {exc}") from exc


def listen(port: int) -> socket.socket:
    """The namespace's 127.0.0.1:`port`, bound before the sandbox refuses every TCP bind."""
    return socket.create_server(("127.0.0.1", port), backlog=128)


def start_inside_relay(listener: socket.socket, path: str, confine: Callable[[], None]) -> None:
    """Serve `listener` in a child process that dies with this one, by connecting to the UNIX
    socket `path` for each connection. `confine` applies the child's own sandbox (no writes, no
    TCP), nested in this process's: started after this process confined itself, the relay is
    within its reach, for the launcher to kill (Landlock scopes signals to a domain and those
    nested in it; a relay in a sibling domain would outlive its session)."""
    parent = os.getpid()
    if os.fork():
        listener.close()
        return
    try:  # the relay: nothing of the CLI's output pipes, gone when the CLI is
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        confine()
        serve(listener, lambda: _unix(path))
    finally:
        os._exit(0)


class OutsideRelay:
    """The runner's side: a UNIX socket in a private folder whose connections go on to the model
    proxy's TCP port."""

    def __init__(self, port: int) -> None:
        import tempfile  # the runner's side only: the launcher does not load it

        self.folder = tempfile.mkdtemp(prefix="aam-net-")
        if len(self.folder) > SUN_PATH - 12:  # a UNIX socket's path is short
            os.rmdir(self.folder)
            self.folder = tempfile.mkdtemp(prefix="aam-net-", dir="/tmp")
        self.path = os.path.join(self.folder, "model.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(128)
        proxy = ("127.0.0.1", port)
        self.thread = threading.Thread(target=serve, name="aam-net-relay", daemon=True,
                                       args=(self.listener, lambda: socket.create_connection(proxy)))
        self.thread.start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self.listener.close()
        self.thread.join(timeout=5)
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def serve(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    """Accept connections until the listener closes; each goes on through `connect()`."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_pair, args=(conn, connect), daemon=True).start()


def _pair(conn: socket.socket, connect: Callable[[], socket.socket]) -> None:
    try:
        far = connect()
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=_copy, args=(far, conn), daemon=True)
    back.start()
    _copy(conn, far)
    back.join()
    conn.close()
    far.close()


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _unix(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


def main() -> int:
    """The probe: make the namespace in this process (a child of the runner's) and say why not."""
    try:
        unshare_network()
    except NamespaceError as exc:
        print(exc.strerror or str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
