"""Cassettes read ahead on another core, so a replay of many cases does not wait for YAML.

Parsing a cassette is most of what replaying a case costs, and the cases of a run replay one
after another in one Python process. `ahead(files)` starts a second process that reads each file
as `untrusted.read_now` does (the same size limit, symlink check, safe loader, refused tags and
aliases) in the order the run will ask for them, and hands each result over a pipe.
`load_file` takes a file's result from it, if the file is still the one that was read (same
inode, size and modification time): anything else (a file written since, one not on the list,
a reader that failed) is read in this process, as without a reader.

It runs only where it helps: with more than one core, for a run that reads many cassettes.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MIN_FILES = 64
"""Fewer cassettes than this are read in the run's own process (starting a reader costs more)."""
_FRAME = struct.Struct("!Q")
_PIPE_BYTES = 1 << 20
"""The pipe's buffer (Linux): how far ahead the reader may get before the run takes its results."""

Stamp = tuple[int, int, int]
"""A file's inode, size and modification time (ns) when it was read."""


class Reader:
    """The reading process and the results it has sent that were not taken yet."""

    def __init__(self, files: list[tuple[Path, Path | None]]) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "aam_eval_action.replay.prefetch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={},
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        with contextlib.suppress(OSError, AttributeError):
            import fcntl

            fcntl.fcntl(self._proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        listing = [(os.fspath(p), os.fspath(inside) if inside else None) for p, inside in files]
        self._wanted = {name for name, _ in listing}
        self._lock = threading.Lock()
        self._ready: dict[str, tuple[Stamp | None, str, Any]] = {}
        self._ended = False
        self.served = 0
        """Results the run took from the reader (the rest it read itself)."""
        try:
            self._proc.stdin.write(pickle.dumps(listing))
            self._proc.stdin.close()
        except OSError:
            self._ended = True

    def take(self, path: Path) -> tuple[Stamp | None, str, Any] | None:
        """The reader's result for `path` (its stamp, its kind, its value), or None."""
        name = os.fspath(path)
        with self._lock:
            if name not in self._wanted:
                return None
            self._wanted.discard(name)
            while name not in self._ready and not self._ended:
                self._receive()
            return self._ready.pop(name, None)

    def _receive(self) -> None:
        assert self._proc.stdout is not None
        head = self._proc.stdout.read(_FRAME.size)
        body = self._proc.stdout.read(_FRAME.unpack(head)[0]) if len(head) == _FRAME.size else b""
        if not body:
            self._ended = True
            return
        name, stamp, kind, value = pickle.loads(body)  # from the reader this process started
        self._ready[name] = (stamp, kind, value)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._proc.kill()
        with contextlib.suppress(OSError, ValueError):
            assert self._proc.stdout is not None
            self._proc.stdout.close()
        self._proc.wait()


_READER: Reader | None = None


@contextlib.contextmanager
def ahead(files: list[tuple[Path, Path | None]]) -> Iterator[Reader | None]:
    """Read `files` (each with the folder it must stay inside) ahead while the block runs;
    yields the reader, None where none was started."""
    global _READER
    if len(files) < MIN_FILES or (os.cpu_count() or 1) < 2 or _READER is not None:
        yield None
        return
    try:
        reader = Reader(files)
    except OSError:
        yield None
        return
    _READER = reader
    try:
        yield reader
    finally:
        _READER = None
        reader.close()


def taken(path: Path) -> tuple[str, Any] | None:
    """The read-ahead result for `path` when the file is unchanged since: ("ok", data),
    ("absent", None) or ("refused", message); None when this process must read it."""
    reader = _READER
    found = reader.take(path) if reader is not None else None
    if found is None:
        return None
    stamp, kind, value = found
    if kind == "skipped" or _stamp(os.fspath(path)) != stamp:
        return None
    assert reader is not None
    reader.served += 1
    return kind, value


def load_file(path: Path, *, inside: Path | None = None) -> tuple[bool, Any]:
    """(whether the file exists, its parsed YAML), read as `untrusted.read_now` reads it;
    taken from the run's read-ahead when it has read this file, as it is now."""
    from aam_eval_action.replay.untrusted import UntrustedFileError, read_now

    ahead = taken(path)
    if ahead is None:
        return read_now(path, inside=inside)
    kind, value = ahead
    if kind == "refused":
        raise UntrustedFileError(value)
    return kind == "ok", value


def _stamp(name: str) -> Stamp | None:
    try:
        st = os.stat(name)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _serve() -> None:
    """The reading process: each listed file's result, framed, in the order listed."""
    from aam_eval_action.replay.untrusted import UntrustedFileError, read_now

    listing = pickle.loads(sys.stdin.buffer.read())
    out = sys.stdout.buffer
    for name, inside in listing:
        stamp = _stamp(name)
        try:
            found, data = read_now(Path(name), inside=Path(inside) if inside else None)
            result: tuple[str, Any] = ("ok", data) if found else ("absent", None)
        except UntrustedFileError as exc:
            result = ("refused", str(exc))
        except Exception:  # anything else: the run reads the file itself and reports it
            result = ("skipped", None)
        if _stamp(name) != stamp:  # changed while it was read
            result = ("skipped", None)
        body = pickle.dumps((name, stamp, *result), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            out.write(_FRAME.pack(len(body)) + body)
            out.flush()
        except OSError:  # the run ended
            return


if __name__ == "__main__":
    _serve()
