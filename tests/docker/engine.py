"""A Docker engine of the test's own, and the stand-in for the Dockerfile's base image.

No image registry is reachable here, so the base image is made from Debian's packages:
`debootstrap --variant=minbase` plus Python and pip, imported with `docker import` and
tagged for the Dockerfile's `BASE_IMAGE` argument. It carries what this host needs to
reach its package registries (extra CA certificates, the apt and pip index settings),
so the Dockerfile's own `apt-get install` and `pip install` run unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

WORK_PREFIX = "aam-eval-docker-"
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# What debian:bookworm-slim (the base of python:3.12-slim) configures, so that layers
# built on the stand-in are as large as they would be on the real base.
SLIM_CONFIG = {
    "etc/apt/apt.conf.d/docker-clean": (
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
    ),
    "etc/apt/apt.conf.d/docker-gzip-indexes": 'Acquire::GzipIndexes "true";\n',
    "etc/apt/apt.conf.d/docker-no-languages": 'Acquire::Languages "none";\n',
    "etc/apt/apt.conf.d/docker-autoremove-suggests": 'Apt::AutoRemove::SuggestsImportant "false";\n',
    "etc/dpkg/dpkg.cfg.d/docker": "".join(
        f"path-exclude /usr/share/{d}/*\n"
        for d in ("doc", "groff", "info", "linda", "lintian", "locale", "man")
    ) + "path-include /usr/share/doc/*/copyright\n",
}


class EngineError(RuntimeError):
    """The engine or an image step failed; the message says which and shows the log."""


def docker_cli() -> str:
    """Debian's client matches Debian's engine; another `docker` on PATH may be newer."""
    return "/usr/bin/docker" if Path("/usr/bin/docker").exists() else "docker"


class Dockerd:
    """`dockerd` on its own socket, data root and exec root, off the host's networking."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / "docker.sock"
        self.log = root / "dockerd.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> None:
        argv = [
            "dockerd",
            "--data-root", str(self.root / "data"),
            "--exec-root", str(self.root / "exec"),
            "--pidfile", str(self.root / "dockerd.pid"),
            "--host", f"unix://{self.socket}",
            # No docker0 bridge, no iptables or NAT rules: containers use --network host.
            "--bridge=none", "--iptables=false", "--ip-masq=false",
        ]
        with self.log.open("wb") as log:
            # In the test's process group: whatever stops the test stops the engine too.
            self._process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise EngineError(f"dockerd exited with {self._process.returncode}:\n{self._tail()}")
            probe = self.docker("version", "--format", "{{.Server.Version}}", check=False)
            if probe.returncode == 0:
                return
            time.sleep(0.2)
        raise EngineError(f"dockerd did not answer within {timeout:.0f} s:\n{self._tail()}")

    def stop(self) -> None:
        """Stop the engine this object started (and the containerd it started)."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        _kill_from_pidfile(self.root / "exec" / "containerd" / "containerd.pid", self.root)

    def docker(self, *args: str, check: bool = True, capture: bool = True,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run the docker client against this engine; `env` adds to the client's environment."""
        environ = {
            **os.environ, **(env or {}),
            "DOCKER_HOST": f"unix://{self.socket}",
            "DOCKER_CONFIG": str(self.root / "client"),
            "DOCKER_BUILDKIT": "0",
        }
        proc = subprocess.run([docker_cli(), *args], env=environ, check=False,
                              capture_output=capture, text=True)
        if check and proc.returncode != 0:
            shown = f"\n{proc.stdout}{proc.stderr}" if capture else ""
            raise EngineError(f"docker {' '.join(args[:2])} failed ({proc.returncode}){shown}")
        return proc

    def _tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _kill_from_pidfile(pidfile: Path, owner: Path) -> None:
    """SIGTERM, then SIGKILL, the process in `pidfile` if its command line names `owner`."""
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        pid = int(pidfile.read_text().strip())
        if str(owner) not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
            return  # gone, and the pid now belongs to someone else
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


def make_workdir() -> Path:
    """A fresh directory for one run; leftovers of killed earlier runs are removed first."""
    for stale in Path(tempfile.gettempdir()).glob(WORK_PREFIX + "*"):
        # An hour's margin: another run may have made its directory and not started yet.
        if not _alive(stale / "dockerd.pid") and time.time() - stale.stat().st_mtime > 3600:
            remove_tree(stale)
    # Short: the engine's unix socket path must stay under 108 bytes.
    return Path(tempfile.mkdtemp(prefix=WORK_PREFIX))


def _alive(pidfile: Path) -> bool:
    try:
        os.kill(int(pidfile.read_text().strip()), 0)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return False
    return True


def remove_tree(root: Path) -> None:
    """rm -rf, after unmounting whatever an engine left mounted inside (deepest first)."""
    prefix = str(root.resolve()) + "/"
    mounts = [
        line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(prefix)
    ]
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


# -- the base image ---------------------------------------------------------------


@dataclass(frozen=True)
class BaseImage:
    """What goes into the stand-in base image; its digest names the cached tarball."""

    tag: str = "aam-eval-base:bookworm"
    suite: str = "bookworm"
    packages: tuple[str, ...] = ("python3", "python3-pip", "python3-venv", "ca-certificates")
    mirror: str = "http://deb.debian.org/debian"
    ca_files: dict[str, bytes] = field(default_factory=dict)
    """Extra CA certificates the host trusts: name under /usr/local/share/ca-certificates → PEM."""
    apt_files: dict[str, str] = field(default_factory=dict)
    """apt sources and Acquire settings copied from the host: path under /etc/apt → text."""
    pip_conf: str = ""
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def like_host(cls) -> BaseImage:
        sources = _host_apt_files()
        return cls(
            mirror=_host_mirror(sources) or cls.mirror,
            ca_files=_host_ca_files(),
            apt_files=sources,
            pip_conf=_pip_conf(),
            env=_registry_env(),
        )

    def digest(self) -> str:
        h = hashlib.sha256()
        for part in (self.suite, self.mirror, " ".join(self.packages), self.pip_conf, repr(self.env)):
            h.update(part.encode() + b"\0")
        for name, data in sorted(self.ca_files.items()):
            h.update(name.encode() + b"\0" + data)
        for name, text in sorted(self.apt_files.items()):
            h.update(name.encode() + b"\0" + text.encode())
        h.update(Path(__file__).read_bytes())  # a change in how it is made remakes it
        return h.hexdigest()[:16]

    def tarball(self, cache: Path) -> Path:
        return cache / f"aam-eval-base-{self.suite}-{self.digest()}.tar"

    def ensure_tarball(self, cache: Path, scratch: Path) -> tuple[Path, bool]:
        """The cached root filesystem tarball, made first if missing; True if it was made."""
        tarball = self.tarball(cache)
        if tarball.exists():
            return tarball, False
        cache.mkdir(parents=True, exist_ok=True)
        for old in cache.glob(f"aam-eval-base-{self.suite}-*.tar"):
            old.unlink()
        rootfs = scratch / "rootfs"
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(self.packages)}",
              self.suite, str(rootfs), self.mirror], what="debootstrap")
        self._customize(rootfs)
        partial = tarball.with_suffix(".partial")
        _run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(partial), "."], what="tar")
        partial.rename(tarball)
        remove_tree(rootfs)
        return tarball, True

    def import_into(self, engine: Dockerd, tarball: Path) -> None:
        changes = [f"ENV PATH={PATH}", "ENV LANG=C.UTF-8", 'CMD ["python3"]']
        changes += [f"ENV {k}={v}" for k, v in sorted(self.env.items())]
        args = ["import"]
        for change in changes:
            args += ["--change", change]
        engine.docker(*args, str(tarball), self.tag)

    def _customize(self, rootfs: Path) -> None:
        if self.apt_files:
            (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
        for rel, text in self.apt_files.items():
            (rootfs / "etc/apt" / rel).write_text(text)
        for name, data in self.ca_files.items():
            target = rootfs / "usr/local/share/ca-certificates" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if self.ca_files:
            _run(["chroot", str(rootfs), "update-ca-certificates"], what="update-ca-certificates")
        for rel, text in SLIM_CONFIG.items():
            (rootfs / rel).parent.mkdir(parents=True, exist_ok=True)
            (rootfs / rel).write_text(text)
        # As in the python images: `python` and `pip` on PATH, pip free to install system-wide
        # (bookworm's pip refuses that by default, PEP 668).
        (rootfs / "etc/pip.conf").write_text(self.pip_conf)
        (rootfs / "usr/local/bin/python").symlink_to("/usr/bin/python3")
        junk_dirs = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
                     "usr/share/info", "usr/share/locale")
        for junk in junk_dirs:
            for child in (rootfs / junk).glob("*"):
                if child.is_file() or child.is_symlink():
                    child.unlink()
                elif child.name != "partial":
                    shutil.rmtree(child)


def _host_ca_files() -> dict[str, bytes]:
    if not HOST_CA_DIR.is_dir():
        return {}
    return {
        str(p.relative_to(HOST_CA_DIR)): p.read_bytes()
        for p in sorted(HOST_CA_DIR.rglob("*.crt")) if p.is_file()
    }


def _host_apt_files() -> dict[str, str]:
    """The host's Debian sources and its `Acquire::` settings (how it reaches the archive)."""
    files: dict[str, str] = {}
    etc = Path("/etc/apt")
    debian = etc / "sources.list.d" / "debian.sources"
    if debian.is_file():
        files["sources.list.d/debian.sources"] = debian.read_text()
    for conf in sorted((etc / "apt.conf.d").glob("*")):
        text = conf.read_text(errors="replace") if conf.is_file() else ""
        if any(line.strip().startswith("Acquire::") for line in text.splitlines()):
            files[f"apt.conf.d/{conf.name}"] = text
    return files


def _host_mirror(apt_files: dict[str, str]) -> str | None:
    for line in apt_files.get("sources.list.d/debian.sources", "").splitlines():
        if line.startswith("URIs:") and "security" not in line:
            return line.split()[1]
    return None


def _pip_conf() -> str:
    """pip's settings inside: the host's package indexes (those reachable over HTTP)."""
    settings = {"break-system-packages": "true", "cert": SYSTEM_CA_BUNDLE}
    index = _pip_setting("index-url")
    extra = " ".join(u for u in _pip_setting("extra-index-url").split() if u.startswith("http"))
    if index.startswith("http"):
        settings["index-url"] = index
    if extra:
        settings["extra-index-url"] = extra
    return "[global]\n" + "".join(f"{k} = {v}\n" for k, v in settings.items())


def _pip_setting(name: str) -> str:
    env = os.environ.get("PIP_" + name.upper().replace("-", "_"))
    if env:
        return env
    proc = subprocess.run(["python3", "-m", "pip", "config", "get", f"global.{name}"],
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _registry_env() -> dict[str, str]:
    """Node (npm, the agent CLIs) reads extra CAs only from this variable."""
    env: dict[str, str] = {}
    if _host_ca_files():
        env["NODE_EXTRA_CA_CERTS"] = SYSTEM_CA_BUNDLE
    registry = os.environ.get("NPM_CONFIG_REGISTRY", "")
    if registry and registry.rstrip("/") != "https://registry.npmjs.org":
        env["NPM_CONFIG_REGISTRY"] = registry
    return env


def _run(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise EngineError(f"{what} failed ({proc.returncode}):\n{tail}")
