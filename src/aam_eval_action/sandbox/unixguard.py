"""No UNIX socket outside the session: a seccomp supervisor that makes every `connect(2)` itself.

Landlock does not mediate `connect(2)` to a UNIX socket by path, a network namespace does not
isolate the filesystem, and the seccomp filter cannot read the address a `connect` points at. So
a session could reach any socket its user may open by path: the Docker socket on a GitHub runner
(root on the host), an ssh-agent, a D-Bus bus, a database.

The launcher forks. The child installs the session's seccomp filter (`seccomp.program`, with
`connect` answered by user notification) and becomes the CLI; the parent stays, outside the
filter, as the session's supervisor, and exits with the child's status. For each `connect` of
the session, on any socket, the supervisor:

1. copies the address from the caller's memory (`/proc/<tid>/mem`), once;
2. takes the caller's socket itself (`pidfd_getfd`), after checking the call is still pending;
3. for a UNIX path, resolves it as the caller would (from its working directory, following
   links), holds the inode it found (`O_PATH`), and refuses it (`EACCES`) unless that inode is a
   socket beneath one of the session's own folders (workspace, HOME, temp folder): a socket the
   session made. An abstract name is refused where the kernel does not scope it (Landlock ABI 6,
   or a network namespace of the session's own);
4. connects the caller's socket to its own copy of the address (for a path, to the held inode,
   `/proc/self/fd/<n>`), and answers the call with that result.

The kernel never carries the caller's `connect` out itself, so changing the address or the
descriptor after the check (another thread) changes nothing. TCP connections are made the same
way, the supervisor being inside the same Landlock domain, so the port rule holds for them too.
Datagram UNIX sockets, whose every send may name another address, are refused by the filter
(`socket` and `socketpair` with `SOCK_DGRAM`); stream and seqpacket sockets ignore or refuse an
address on send. The supervisor cannot be traced by the session (not dumpable); if it dies, the
filter answers every later `connect` with `ENOSYS`.

Where `pidfd_getfd` is refused (a container without `CAP_SYS_PTRACE` under Docker's default
seccomp profile), the filter refuses `socket(AF_UNIX)` altogether instead: socketpairs (a CLI's
pipes to its children) still work, a socket by path does not, the session's own included.

Like `landlock`, this module imports nothing of the package but the sandbox's own modules.
`python -I -m aam_eval_action.sandbox.unixguard` is the once-per-run probe: it supervises a
child that must reach a socket in its folder and must not reach one outside it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import socket
import stat
import struct
import sys
import threading
from collections.abc import Sequence

from aam_eval_action.sandbox import launch, seccomp

NR_PIDFD_OPEN, NR_PIDFD_GETFD = 434, 438
"""The same on x86-64 and arm64 (the unified table)."""
NOTIF_RECV, NOTIF_SEND, NOTIF_ID_VALID = 0xC0502100, 0xC0182101, 0x40082102
"""SECCOMP_IOCTL_NOTIF_*: _IOWR('!', 0, struct seccomp_notif), _IOWR('!', 1, struct
seccomp_notif_resp), _IOW('!', 2, __u64)."""
NOTIF = struct.Struct("=QII iIQ6Q")
"""struct seccomp_notif: id, pid, flags, then struct seccomp_data: nr, arch, ip, args[6]."""
RESP = struct.Struct("=QqiI")
"""struct seccomp_notif_resp: id, val, error, flags."""
PR_SET_DUMPABLE = 4
SOCKADDR_MAX = 128
"""sizeof(struct sockaddr_storage): the kernel refuses a longer address."""
SUN_PATH_AT = 2


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


class Guard:
    """The supervisor's side: the folders whose sockets the session may reach."""

    def __init__(self, listener: int, folders: Sequence[str], abstract_ok: bool) -> None:
        self.listener = listener
        self.roots = sorted({os.path.realpath(f) for f in folders if os.path.isdir(f)})
        self.abstract_ok = abstract_ok
        self.libc = _libc()

    def serve(self) -> None:
        """Answer the session's `connect` calls until the filter has no one left to ask."""
        while True:
            buf = ctypes.create_string_buffer(NOTIF.size)
            if self.libc.ioctl(self.listener, ctypes.c_ulong(NOTIF_RECV), buf) < 0:
                err = ctypes.get_errno()
                if err in (errno.EINTR, errno.ENOENT):
                    continue  # the caller was interrupted or is gone
                return
            fields = NOTIF.unpack(buf.raw)
            notif_id, tid, args = fields[0], fields[1], fields[6:12]
            threading.Thread(target=self._answer, args=(notif_id, tid, args), daemon=True).start()

    def _answer(self, notif_id: int, tid: int, args: tuple[int, ...]) -> None:
        fd, addrlen = int(args[0]) & 0xFFFFFFFF, int(args[2]) & 0xFFFFFFFF
        try:
            result = self.connect(notif_id, tid, fd, args[1], addrlen)
        except OSError as exc:
            result = -(exc.errno or errno.EACCES)
        except Exception:  # never leave the caller waiting
            result = -errno.EACCES
        resp = ctypes.create_string_buffer(RESP.pack(notif_id, max(result, 0), min(result, 0), 0), RESP.size)
        self.libc.ioctl(self.listener, ctypes.c_ulong(NOTIF_SEND), resp)

    def _pending(self, notif_id: int) -> bool:
        notif = ctypes.byref(ctypes.c_uint64(notif_id))
        valid = self.libc.ioctl(self.listener, ctypes.c_ulong(NOTIF_ID_VALID), notif)
        return bool(valid == 0)

    def connect(self, notif_id: int, tid: int, fd: int, addr_at: int, addrlen: int) -> int:
        """The result `connect(fd, addr, addrlen)` gets: 0, or minus an errno."""
        if addrlen > SOCKADDR_MAX or addrlen < 2:
            return -errno.EINVAL
        with open(f"/proc/{tid}/mem", "rb", buffering=0) as mem:
            mem.seek(addr_at)
            addr = mem.read(addrlen)
        if len(addr) != addrlen:
            return -errno.EFAULT
        with contextlib.ExitStack() as stack:
            pidfd = self._pidfd(tid)
            stack.callback(os.close, pidfd)
            if not self._pending(notif_id):
                return -errno.EINTR  # the caller is gone; nobody reads this
            sock = self.libc.syscall(NR_PIDFD_GETFD, pidfd, fd, 0)
            if sock < 0:
                return -ctypes.get_errno()
            stack.callback(os.close, sock)
            if struct.unpack_from("=H", addr)[0] == socket.AF_UNIX:
                target = self._unix_address(tid, addr, stack)
                if isinstance(target, int):
                    return target
                addr = target
            done = self.libc.connect(sock, ctypes.create_string_buffer(addr, len(addr)), len(addr))
            return -ctypes.get_errno() if done < 0 else 0

    def _pidfd(self, tid: int) -> int:
        """A pidfd of the process the thread `tid` belongs to."""
        tgid = tid
        with contextlib.suppress(OSError, ValueError, StopIteration), \
                open(f"/proc/{tid}/status", encoding="ascii", errors="replace") as status:
            tgid = int(next(line for line in status if line.startswith("Tgid:")).split()[1])
        pidfd = self.libc.syscall(NR_PIDFD_OPEN, tgid, 0)
        if pidfd < 0:
            raise OSError(ctypes.get_errno(), "pidfd_open")
        return int(pidfd)

    def _unix_address(self, tid: int, addr: bytes, stack: contextlib.ExitStack) -> bytes | int:
        """The address to connect to instead of `addr` (a held inode), or minus an errno."""
        name = addr[SUN_PATH_AT:]
        if not name:
            return addr  # unnamed: the kernel says EINVAL
        if name[0] == 0:  # abstract
            return addr if self.abstract_ok else -errno.EACCES
        path = os.fsdecode(name.split(b"\0", 1)[0])
        cwd = os.open(f"/proc/{tid}/cwd", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        stack.callback(os.close, cwd)
        try:
            held = os.open(path, os.O_PATH | os.O_CLOEXEC, dir_fd=cwd)
        except OSError as exc:
            return -(exc.errno or errno.ENOENT)
        stack.callback(os.close, held)
        if not stat.S_ISSOCK(os.fstat(held).st_mode):
            return -errno.ECONNREFUSED
        where = os.readlink(f"/proc/self/fd/{held}")
        if not any(where == root or where.startswith(root.rstrip("/") + "/") for root in self.roots):
            return -errno.EACCES
        return struct.pack("=H", socket.AF_UNIX) + f"/proc/self/fd/{held}".encode() + b"\0"


def supervise(argv: Sequence[str], folders: Sequence[str], abstract_ok: bool, no_udp: bool,
              runner: int | None = None) -> int:
    """Become the supervisor of a child that installs the filter and becomes `argv`; return its
    exit status (as a shell gives it) once it has exited. The supervisor is the session's
    launcher (`launch.run`): it ends the session when `runner` goes."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)

    def install_filter() -> None:  # in the child
        ours.close()
        listener = seccomp.restrict_self(no_udp=no_udp, unix=seccomp.SUPERVISE)
        assert listener is not None
        socket.send_fds(theirs, [b"L"], [listener])
        os.close(listener)
        theirs.close()

    def guard(_child: int) -> None:
        theirs.close()
        _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the session cannot trace or read its supervisor
        try:
            _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        except OSError:
            fds = []
        ours.close()
        if fds:
            watch = Guard(fds[0], folders, abstract_ok)
            threading.Thread(target=watch.serve, name="aam-unix-guard", daemon=True).start()

    return launch.run(argv, runner, install_filter, guard)


def main() -> int:
    """The probe: a supervised child reaches a socket in its folder, and not one outside it."""
    import tempfile

    libc = _libc()
    pidfd = libc.syscall(NR_PIDFD_OPEN, os.getpid(), 0)
    if pidfd < 0 or libc.syscall(NR_PIDFD_GETFD, pidfd, 0, 0) < 0:
        err = ctypes.get_errno()
        print(f"pidfd_getfd: {os.strerror(err)}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="aam-unix-in-") as inside, \
            tempfile.TemporaryDirectory(prefix="aam-unix-out-") as outside:
        servers = []
        for folder in (inside, outside):
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(os.path.join(folder, "s"))
            server.listen(4)
            servers.append(server)
        probe = ("import socket, sys\n"
                 "def reach(p):\n"
                 "    s = socket.socket(socket.AF_UNIX)\n"
                 "    try:\n        s.connect(p)\n        return 1\n"
                 "    except PermissionError:\n        return 0\n"
                 "sys.exit({(1, 0): 0, (0, 0): 3}.get((reach(sys.argv[1]), reach(sys.argv[2])), 4))\n")
        status = supervise([sys.executable, "-I", "-c", probe, os.path.join(inside, "s"),
                            os.path.join(outside, "s")], [inside], abstract_ok=False, no_udp=False)
        for server in servers:
            server.close()
    if status:
        said = {126: "the supervised child did not start", 3: "the session's own socket was refused",
                4: "the supervisor let a socket outside through"}
        print(said.get(status, f"the supervised child exited {status}"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
