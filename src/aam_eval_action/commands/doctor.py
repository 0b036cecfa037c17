"""`aam-eval doctor`: what can run on this machine, for the package here.

It changes nothing and calls no model. It reports each engine's CLI (found or not, its version
against the pin of `requirements/agent-clis.txt`, the command that installs the pin), Node,
which providers have a key (set or not set, never any part of a value) and base URL overrides,
the sandbox layers the kernel offers, and for the package: its engines, the CLI versions its
recordings were made with against the installed ones, and what `--record` and `--replay` need.

Each CLI is asked `--version` with a fresh temporary HOME (Gemini CLI writes into `~/.gemini`,
Copilot unpacks itself into `~/.cache`), so nothing is written in the user's home. Exit code 0
when every engine of the eval-config has its CLI here, 1 when one does not.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aam_eval_action.engines.registry import ENGINES, EngineInfo
from aam_eval_action.errors import EXIT_FAILED, EXIT_OK
from aam_eval_action.providers import PROVIDERS

if TYPE_CHECKING:
    from aam_eval_action.loader import LoadedPackage
    from aam_eval_action.render.console import Console
    from aam_eval_action.replay.agent_cassette import AgentCassette
    from aam_eval_action.settings import RunSettings

PINS_FILE = Path(__file__).resolve().parents[3] / "requirements" / "agent-clis.txt"
"""The pins, in a checkout or an editable install (a wheel does not carry them)."""
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
"""Where `sandbox-exec` is looked for besides PATH."""
WRAP = 100

Line = tuple[str, str | None]
"""A line of the report and its style (`green`, `red`, `yellow`, `dim` or none)."""


@dataclass(frozen=True)
class Tool:
    """An executable as found on PATH, and the version it reports."""

    name: str
    path: str | None
    version: str | None


@dataclass(frozen=True)
class Cli:
    """An engine's CLI here, against its pin."""

    engine: EngineInfo
    tool: Tool
    pinned: str | None

    @property
    def found(self) -> bool:
        return self.tool.path is not None

    @property
    def install(self) -> str | None:
        """The command that installs the pinned release, when it is missing or different."""
        if self.found and (self.pinned is None or self.tool.version == self.pinned):
            return None
        return install_command(self.engine, self.pinned)


@dataclass
class Recordings:
    """A cassettes folder's session recordings, by (CLI, version, whether they hold traffic)."""

    folder: Path
    groups: dict[tuple[str, str | None, bool], list[str]] = field(default_factory=dict)
    damaged: list[str] = field(default_factory=list)
    masks: dict[str, int] = field(default_factory=dict)
    """Learnt volatile values per `<cli> <version>` (the shared stores)."""

    @property
    def total(self) -> int:
        return sum(map(len, self.groups.values()))


def doctor(package: Path) -> int:
    """Print the report; EXIT_OK when the eval-config's engines can run here, else EXIT_FAILED.

    A package that cannot be loaded raises (bad usage or config: exit 2) after the machine's part
    is printed.
    """
    from aam_eval_action.loader import load_repo
    from aam_eval_action.render.console import Console
    from aam_eval_action.settings import runner_environment

    environ = runner_environment()
    out = Console(environ=environ, workflow_commands=environ.get("GITHUB_ACTIONS") == "true")
    clis, node = probe_tools(environ)
    title: Line = ("aam-eval doctor: what can run here (nothing is changed, no model is called)", None)
    _print(out, [title, *cli_lines(clis, node), *key_lines(environ), *sandbox_lines(environ)])
    repo = load_repo(package)
    ready = True
    for loaded in repo.packages:
        lines, runnable = package_lines(loaded, clis, environ)
        _print(out, lines)
        ready = ready and runnable
    return EXIT_OK if ready else EXIT_FAILED


def _print(out: Console, lines: Iterable[Line]) -> None:
    for text, style in lines:
        out.line(text, style)


# --- the machine ---


def read_pins(path: Path = PINS_FILE) -> dict[str, str] | None:
    """npm package → pinned version (`@scope/name@version` lines, `#` comments); None without
    the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    pins = {}
    for line in text.splitlines():
        spec = line.split("#", 1)[0].strip()
        package, _, version = spec.rpartition("@")
        if package and version:
            pins[package] = version
    return pins


def install_command(engine: EngineInfo, version: str | None) -> str:
    return f"npm install -g {engine.npm_package}" + (f"@{version}" if version else "")


def probe_tools(environ: Mapping[str, str]) -> tuple[list[Cli], Tool]:
    """Every engine's CLI and Node, asked their versions side by side."""
    pins = read_pins()
    search = environ.get("PATH", "")
    names = [e.cli for e in ENGINES.values()] + ["node"]
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        tools = dict(zip(names, pool.map(lambda n: find_tool(n, search), names), strict=True))
    clis = [Cli(e, tools[e.cli], pins.get(e.npm_package) if pins else None) for e in ENGINES.values()]
    return clis, tools["node"]


def find_tool(name: str, search_path: str) -> Tool:
    """`name` on `search_path` and its release, found as a run finds it (`engines.version`: an
    engine's package.json, else `--version` with a fresh temporary HOME, deleted after, so that
    it writes nothing in the user's home)."""
    from aam_eval_action.engines.version import installed_version

    path = shutil.which(name, path=search_path)
    if path is None:
        return Tool(name, None, None)
    return Tool(name, path, installed_version(name, {"PATH": search_path}))


def cli_lines(clis: list[Cli], node: Tool) -> list[Line]:
    pins = "" if PINS_FILE.is_file() else (" (pins unknown: requirements/agent-clis.txt is not beside "
                                           "this install)")
    lines: list[Line] = [("", None), (f"Agent CLIs, against the versions pinned in "
                                      f"requirements/agent-clis.txt{pins}", None)]
    width = max(len(c.engine.name) for c in clis)
    for cli in clis:
        lines.append(_cli_line(cli, width))
    lines.append(_node_line(node, width))
    return lines


def _cli_line(cli: Cli, width: int) -> Line:
    head = f"  {cli.engine.name:<{width}}  {cli.engine.cli:<8}"
    pinned = f"pinned {cli.pinned}" if cli.pinned else "pin unknown"
    if not cli.found:
        return f"{head}  {'missing':<10} {pinned:<16} install: {cli.install}", "red"
    version = cli.tool.version or "?"
    if cli.install is None:
        return f"{head}  {version:<10} {pinned:<16} ok  ({cli.tool.path})", "green"
    said = "version unknown" if cli.tool.version is None else "another version (it runs; recordings name it)"
    return f"{head}  {version:<10} {pinned:<16} {said}; the pin: {cli.install}", "yellow"


def _node_line(node: Tool, width: int) -> Line:
    head = f"  {'node':<{width}}  {'node':<8}"
    if node.path is None:
        return f"{head}  {'missing':<10} the agent CLIs are Node programs: install Node", "red"
    return f"{head}  {node.version or '?':<10} {'':<16} found  ({node.path})", "green"


def key_lines(environ: Mapping[str, str]) -> list[Line]:
    """Each provider's key (set or not set: never any part of it) and base URL override."""
    from aam_eval_action.replay.upstream import shown

    lines: list[Line] = [("", None), ("Provider keys (values never shown) and base URLs", None)]
    width = max(len(p.key_var) for p in PROVIDERS.values())
    for provider in PROVIDERS.values():
        key = "set" if environ.get(provider.key_var) else "not set"
        base = environ.get(provider.base_url_var)
        url = (f"{provider.base_url_var}={shown(base)} (override; any user, password and path not shown)"
               if base else f"default base URL ({provider.default_base_url})")
        style = "green" if key == "set" else None
        lines.append((f"  {provider.name:<10} {provider.key_var:<{width}}  {key:<8} {url}", style))
    return lines


# --- the kernel's sandbox layers ---


def sandbox_lines(environ: Mapping[str, str]) -> list[Line]:
    """What the kernel offers, reported only: Landlock, user namespaces and a seccomp filter on
    Linux, sandbox-exec on macOS."""
    lines: list[Line] = [("", None), ("Sandbox layers this machine offers (reported only)", None)]
    if sys.platform == "darwin":
        tool = shutil.which("sandbox-exec", path=_with_system(environ))
        said = f"found ({tool})" if tool else "not found"
        return [*lines, (f"  {'sandbox-exec':<16} {said}", "green" if tool else "yellow")]
    if not sys.platform.startswith("linux"):
        return [*lines, (f"  none known for {sys.platform}", "yellow")]
    from aam_eval_action.sandbox.plan import probe, probe_seccomp, unix_layer

    abi, why = probe()  # the probes a run uses, so doctor reports what a run will find
    lines.append((f"  {'landlock':<16} " + (f"ABI {abi}" if abi else f"not available ({why})"),
                  "green" if abi else "yellow"))
    ok, said = user_namespaces()
    lines.append((f"  {'user namespaces':<16} {said}", "green" if ok else "yellow"))

    no_filter = probe_seccomp()
    lines.append((f"  {'seccomp':<16} " + (f"not available ({no_filter})" if no_filter else
                                          "available (UDP sockets refused with the network off)"),
                  "yellow" if no_filter else "green"))
    unix, why_not = unix_layer()
    said = {"session": "a supervisor answers every connect: only the session's own UNIX sockets",
            "none": f"every UNIX socket refused but socketpairs ({why_not})"}.get(
                unix, f"not enforced ({why_not})")
    lines.append((f"  {'unix sockets':<16} {said}", "green" if unix == "session" else "yellow"))
    return lines


def user_namespaces() -> tuple[bool, str]:
    """Whether a session here gets a user and a network namespace of its own, as the run's probe
    finds (`sandbox.plan.probe_namespace`), and what it said."""
    from aam_eval_action.sandbox.plan import probe_namespace

    why = probe_namespace()
    if not why:
        root = ("; running as root, which says nothing of an unprivileged user"
                if hasattr(os, "geteuid") and os.geteuid() == 0 else "")
        return True, f"available (a session's own network namespace is made){root}"
    return False, f"not available: {why}{_userns_limit()}"


def _userns_limit() -> str:
    """The kernel setting that turns unprivileged user namespaces off, when one does."""
    limits = {
        "/proc/sys/kernel/unprivileged_userns_clone": ("0", "kernel.unprivileged_userns_clone=0"),
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns":
            ("1", "kernel.apparmor_restrict_unprivileged_userns=1 (AppArmor)"),
        "/proc/sys/user/max_user_namespaces": ("0", "user.max_user_namespaces=0"),
    }
    for path, (off, name) in limits.items():
        try:
            if Path(path).read_text(encoding="ascii").strip() == off:
                return f" ({name})"
        except OSError:
            continue
    return ""


def _with_system(environ: Mapping[str, str]) -> str:
    return os.pathsep.join(p for p in (environ.get("PATH", ""), SYSTEM_PATH) if p)


# --- the package ---


def package_lines(
    loaded: LoadedPackage, clis: list[Cli], environ: Mapping[str, str]
) -> tuple[list[Line], bool]:
    """The package's engines, its recordings against the installed CLIs, what `--record` and
    `--replay` need; and whether every engine of its eval-config has its CLI here."""
    from aam_eval_action.settings import Overrides, cassettes_dir, resolve_matrix

    by_engine = {c.engine.name: c for c in clis}
    pairs = resolve_matrix(loaded, Overrides(), environ)
    where = (f"Plugin {loaded.plugin} ({loaded.layout.base or '.'} in {loaded.layout.root})" if loaded.plugin
             else f"Package at {loaded.layout.root}")
    lines: list[Line] = [("", None), (where, None)]
    for s in pairs:
        cli = by_engine[s.engine]
        found = (f"{cli.engine.cli} {cli.tool.version or '(version unknown)'} found" if cli.found
                 else f"{cli.engine.cli} missing: {cli.install}")
        lines.append((f"  engine     {s.engine} · {s.model} (judge {s.judge_model}): {found}",
                      "green" if cli.found else "red"))
    lines += recording_lines(read_recordings(cassettes_dir(loaded, None)), by_engine)
    if any(f.format == "claude-plugin-eval" for f in loaded.eval_files):
        from aam_eval_action.pipeline.plan import cpe_rules_line

        lines.append((f"  {cpe_rules_line()}", None))
    lines.append(("  --replay   runs here: it needs nothing (no CLI, no key, no network)", "green"))
    lines += record_lines(pairs, by_engine)
    missing = sorted({s.engine for s in pairs if not by_engine[s.engine].found})
    if missing:
        lines.append((f"  not ready: the eval-config's engine(s) {', '.join(missing)} cannot run here "
                      "(no CLI on PATH)", "red"))
    else:
        lines.append(("  ready: the eval-config's engines have their CLIs here", "green"))
    return lines, not missing


def read_recordings(folder: Path) -> Recordings:
    """Each session cassette's CLI and version: its model traffic's when it holds some, else the
    session's runtime version under its engine's CLI."""
    from aam_eval_action.replay import traffic_store
    from aam_eval_action.replay.agent_cassette import CassetteError, load

    found = Recordings(folder)
    for path in sorted(folder.glob("*/*.session.yaml")):
        rel = path.relative_to(folder).as_posix().removesuffix(".session.yaml")
        try:
            cassette = load(path, folder)
        except CassetteError:
            found.damaged.append(rel)
            continue
        if cassette is None:
            continue
        found.groups.setdefault(_recorded_by(cassette), []).append(rel)
    for label, _ in traffic_store.every_mask(folder):
        found.masks[label] = found.masks.get(label, 0) + 1
    return found


def _recorded_by(cassette: AgentCassette) -> tuple[str, str | None, bool]:
    """(cli, version, holds traffic) of an agent cassette."""
    first = cassette.model_traffic[0] if cassette.model_traffic else None
    if first and isinstance(first.get("cli"), str):
        version = first.get("cli_version")
        return first["cli"], version if isinstance(version, str) else None, True
    engine = ENGINES.get(cassette.engine)
    return engine.cli if engine else cassette.engine, cassette.attempts[0].runtime_version, False


def recording_lines(found: Recordings, by_engine: Mapping[str, Cli]) -> list[Line]:
    if not found.groups and not found.damaged:
        return [(f"  recordings none yet in {found.folder}", None)]
    lines: list[Line] = [(f"  recordings {found.total} session(s) in {found.folder}", None)]
    by_cli = {c.engine.cli: c for c in by_engine.values()}
    for (cli, version, traffic), paths in sorted(found.groups.items(), key=lambda g: (g[0][0], str(g[0][1]))):
        lines += _group_lines(cli, version, traffic, paths, by_cli.get(cli), found.masks)
    if found.damaged:
        lines.append((f"    damaged (run names the problem): {', '.join(found.damaged)}", "red"))
    return lines


def _group_lines(cli: str, version: str | None, traffic: bool, paths: list[str], here: Cli | None,
                 masks: Mapping[str, int]) -> list[Line]:
    """One CLI version's recordings: whether the CLI here can re-execute them, and which cases
    they are when it cannot."""
    label = f"{cli} {version or '(version unknown)'}"
    head = f"    {label:<18} {len(paths):>4} recording(s)"
    learnt = masks.get(f"{cli} {version}", 0)
    learnt_said = f"; {learnt} volatile value(s) learnt for {label}" if learnt else ""
    found = here is not None and here.found
    installed = here.tool.version if here else None
    install = f" ({install_command(here.engine, version)})" if here else ""
    rerun = "re-executing them (a case whose inputs changed, or --rerun)"
    if traffic and found and installed == version:
        return [(f"{head}: same version as installed, re-executable here{learnt_said}", "green")]
    if traffic and not found:
        said = f"{cli} is not on PATH: replayed as recorded; {rerun} needs {label}{install}{learnt_said}"
    elif traffic:
        now = f"{cli} {installed}" if installed else f"{cli} (version unknown)"
        said = (f"another version than the {now} installed: replayed as recorded; {rerun} needs {label} "
                f"on PATH{install}, else re-record them with {now}{learnt_said}")
    else:
        other = f", not the {cli} {installed} installed" if installed and installed != version else ""
        said = (f"recorded with {label}{other}, without model traffic: replayed as recorded only; a change "
                "to a case's inputs needs a re-recording")
    cases = sorted({p.split("/", 1)[0] for p in paths})
    return [(head, "yellow"), *_wrapped(said, "      "), *_wrapped("cases: " + ", ".join(cases), "      ")]


def _wrapped(text: str, indent: str) -> list[Line]:
    return [(line, None) for line in textwrap.wrap(text, WRAP, initial_indent=indent,
                                                   subsequent_indent=indent + "  ", break_on_hyphens=False)]


def record_lines(pairs: list[RunSettings], by_engine: Mapping[str, Cli]) -> list[Line]:
    """What `--record` needs: each engine's CLI and the key of each provider it and the judge
    use (in the environment, or eval-config `env`), with who needs it."""
    needs: dict[str, Need] = {}
    for s in pairs:
        cli = by_engine[s.engine]
        tool = needs.setdefault(cli.engine.cli, Need(cli.found, "found" if cli.found else "missing"))
        tool.users.append(s.engine)
        agent = ENGINES[s.engine].provider_for(s.model)
        for provider, who in ((agent, f"the agent on {s.engine}"), (s.judge_provider, "the judge")):
            ok = bool(s.api_key(provider))
            need = needs.setdefault(PROVIDERS[provider].key_var, Need(ok, "set" if ok else "not set"))
            if who not in need.users:
                need.users.append(who)
    ready = all(n.ok for n in needs.values())
    listed = ", ".join(f"{name} ({n.status}; for {' and '.join(n.users)})" for name, n in needs.items())
    verdict = "can run here" if ready else "cannot run here yet"
    return _styled(_wrapped(f"--record   {verdict}: needs {listed}", "  "), "green" if ready else "yellow")


@dataclass
class Need:
    """A CLI or a key that recording needs, and who needs it."""

    ok: bool
    status: str
    users: list[str] = field(default_factory=list)


def _styled(lines: list[Line], style: str) -> list[Line]:
    return [(text, style) for text, _ in lines]
