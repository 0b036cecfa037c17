"""Two field notes from running `aam-eval` on a big public marketplace
(anthropics/claude-plugins-official):

- a plugin folder the marketplace forgot to list (its `plugins/example-plugin/` has a manifest
  and two skills, and no entry) is a `check` warning at the marketplace's `plugins` line that
  says which entry to add; `--strict` makes it an error;
- its 233 plugins with remote sources take one line of `run`'s console, not one each, while
  `check` still lists each one with its line.

`tests/fixtures/layouts/marketplace-unlisted` is shaped like that repository (`plugins/`,
`external_plugins/`, a listed plugin with test fixtures and an example inside it); the
marketplace of 200 remote entries is generated here as its `marketplace.json` writes them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from conftest import ROOT, aam_eval
from support.golden import assert_golden

UNLISTED = ROOT / "tests/fixtures/layouts/marketplace-unlisted"
MARKET = ".claude-plugin/marketplace.json"
NOT_LISTED = "has a plugin manifest"
ADD = re.compile(r"; add (\{.*\}) to (\S+) plugins$")


def _plugins_line(repo: Path, rel: str = MARKET) -> int:
    lines = (repo / rel).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith('"plugins"'))


def _flagged(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("warning") and NOT_LISTED in line]


def _follow_the_advice(repo: Path, out: str) -> None:
    """Add each entry the warnings ask for to the marketplace they name, as an author would."""
    for line in _flagged(out):
        entry, rel = ADD.search(line).groups()  # type: ignore[union-attr]
        data = json.loads((repo / rel).read_text())
        data["plugins"].append(json.loads(entry))
        (repo / rel).write_text(json.dumps(data, indent=2))


# --- a plugin folder no entry lists ---


def test_check_names_an_unlisted_plugin_folder_and_the_entry_to_add() -> None:
    result = aam_eval("check", "--package", str(UNLISTED))
    assert result.code == 0, result.err
    at = f"warning {MARKET}:{_plugins_line(UNLISTED)}:"
    assert _flagged(result.out) == [
        f"{at} external_plugins/release-notes/ has a plugin manifest (external_plugins/release-notes/"
        "gemini-extension.json) but no marketplace entry points at it; add {\"name\": \"release-notes\", "
        f"\"source\": \"./external_plugins/release-notes\"}} to {MARKET} plugins",
        f"{at} plugins/example-plugin/ has a plugin manifest (plugins/example-plugin/.claude-plugin/plugin.json) "
        "but no marketplace entry points at it; add {\"name\": \"example-plugin\", \"source\": "
        f"\"./plugins/example-plugin\"}} to {MARKET} plugins",
        f"{at} plugins/tour-kit/ has a plugin manifest (plugins/tour-kit/plugin.json) but no marketplace entry "
        f"points at it; add {{\"name\": \"tour-kit\", \"source\": \"./plugins/tour-kit\"}} to {MARKET} plugins",
    ]  # not: the fixtures and the example inside code-review, tests/fixtures/, docs/theme/plugin.json
    assert result.out.splitlines()[-1] == "0 valid case(s), 0 error(s), 3 warning(s)"


def test_strict_makes_an_unlisted_plugin_an_error() -> None:
    check = aam_eval("check", "--package", str(UNLISTED), "--strict")
    assert check.code == 2
    assert check.out.splitlines()[-1] == "0 valid case(s), 0 error(s), 3 warning(s) (errors with --strict)"
    run = aam_eval("run", "--replay", "--strict", "--package", str(UNLISTED))
    assert run.code == 2
    assert "3 warning(s) about the package, errors with --strict" in run.err
    assert f"{MARKET}:{_plugins_line(UNLISTED)}: plugins/example-plugin/ has a plugin manifest" in run.err


def test_listing_the_folder_as_advised_makes_it_a_plugin(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(UNLISTED, repo)
    _follow_the_advice(repo, aam_eval("check", "--package", str(repo)).out)
    result = aam_eval("check", "--package", str(repo), "--strict")
    assert result.code == 0 and not _flagged(result.out), result.out + result.err
    assert "plugin example-plugin (plugins/example-plugin, claude-plugin; cases in evals/cases/example-plugin/)" \
        in result.out
    assert "  skill   example-skill            plugins/example-plugin/skills/example-skill/SKILL.md" in result.out
    assert "plugin release-notes (external_plugins/release-notes, claude-plugin+gemini-extension;" in result.out
    assert "plugin tour-kit (plugins/tour-kit, claude-plugin+copilot-plugin;" in result.out


def test_only_the_outermost_unlisted_folder_is_named_and_dependencies_are_not_searched(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(UNLISTED, repo)
    manifest = '{"name": "inner"}'
    for rel in ("node_modules/some-plugin", ".git/modules/x", "evals/fixtures/demo-plugin",
                "plugins/example-plugin/vendor/inner", "plugins/code-review/node_modules/dep"):
        (repo / rel / ".claude-plugin").mkdir(parents=True)
        (repo / rel / ".claude-plugin/plugin.json").write_text(manifest)
    (repo / "plugins/linked").symlink_to(repo / "plugins/example-plugin", target_is_directory=True)
    flagged = _flagged(aam_eval("check", "--package", str(repo)).out)
    assert [line.split(": ")[1].split(" ")[0] for line in flagged] == [
        "external_plugins/release-notes/", "plugins/example-plugin/", "plugins/tour-kit/"]


def _write(repo: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return repo


SKILL = "---\nname: s\ndescription: d\n---\n"


def test_the_entry_to_add_is_written_as_its_marketplace_writes_entries(tmp_path: Path) -> None:
    codex = _write(tmp_path / "codex", {
        ".agents/plugins/marketplace.json": {"name": "c", "plugins": [
            {"name": "a", "source": {"source": "local", "path": "./plugins/a"}}]},
        "plugins/a/.codex-plugin/plugin.json": {"name": "a"}, "plugins/a/skills/s/SKILL.md": SKILL,
        "plugins/b/.codex-plugin/plugin.json": {"name": "b"}, "plugins/b/skills/s/SKILL.md": SKILL})
    out = aam_eval("check", "--package", str(codex)).out
    assert _flagged(out) == [
        f"warning .agents/plugins/marketplace.json:{_plugins_line(codex, '.agents/plugins/marketplace.json')}: "
        "plugins/b/ has a plugin manifest (plugins/b/.codex-plugin/plugin.json) but no marketplace entry points "
        "at it; add {\"name\": \"b\", \"source\": {\"source\": \"local\", \"path\": \"./plugins/b\"}} to "
        ".agents/plugins/marketplace.json plugins"]
    rooted = _write(tmp_path / "rooted", {
        MARKET: {"name": "m", "owner": {"name": "o"}, "metadata": {"pluginRoot": "./plugins"},
                 "plugins": [{"name": "a", "source": "./a"}]},
        "plugins/a/.claude-plugin/plugin.json": {"name": "a"}, "plugins/b/.claude-plugin/plugin.json": {"name": "b"}})
    out = aam_eval("check", "--package", str(rooted)).out
    assert _flagged(out)[0].endswith('add {"name": "b", "source": "./b"} to .claude-plugin/marketplace.json plugins')
    for repo in (codex, rooted):
        _follow_the_advice(repo, out if repo is rooted else aam_eval("check", "--package", str(repo)).out)
        result = aam_eval("check", "--package", str(repo), "--strict")
        assert result.code == 0 and "plugin b (plugins/b" in result.out, result.out + result.err


def test_a_folder_whose_name_an_entry_takes_elsewhere_says_which_entry_to_fix(tmp_path: Path) -> None:
    repo = _write(tmp_path / "repo", {
        MARKET: {"name": "m", "owner": {"name": "o"}, "plugins": [
            {"name": "a", "source": "./plugins/a"},
            {"name": "b", "source": {"source": "github", "repo": "acme/b"}}]},
        "plugins/a/.claude-plugin/plugin.json": {"name": "a"}, "plugins/b/.claude-plugin/plugin.json": {"name": "b"}})
    line = next(i for i, text in enumerate((repo / MARKET).read_text().splitlines(), 1) if '"source": {' in text)
    assert _flagged(aam_eval("check", "--package", str(repo)).out) == [
        f"warning {MARKET}:{line}: plugins/b/ has a plugin manifest (plugins/b/.claude-plugin/plugin.json) but no "
        "marketplace entry points at it; plugins[1] ('b') has another source: set it to './plugins/b', or rename "
        "one of them"]


# --- many plugins with remote sources ---


def _big_marketplace(tmp_path: Path, remote: int) -> Path:
    """A marketplace as claude-plugins-official writes it: mostly remote entries (`url` with a
    sha, `github`), alphabetical, with two local plugins among them."""
    entries: list[dict[str, Any]] = []
    for i in range(remote):
        source = ({"source": "url", "url": f"https://github.com/vendor-{i:03d}/claude-plugin.git",
                   "sha": f"{i:040x}"} if i % 2 else {"source": "github", "repo": f"vendor-{i:03d}/claude-plugin"})
        entries.append({"name": f"vendor-{i:03d}", "description": f"Vendor {i}'s tools", "category": "development",
                        "source": source, "homepage": f"https://vendor-{i:03d}.example"})
    local = [{"name": "agent-sdk-dev", "description": "Agent SDK kit", "source": "./plugins/agent-sdk-dev"},
             {"name": "asana", "description": "Asana tasks", "source": "./external_plugins/asana"}]
    entries = sorted(entries + local, key=lambda e: e["name"])
    return _write(tmp_path / "repo", {
        MARKET: {"$schema": "https://anthropic.com/claude-code/marketplace.schema.json", "name": "big",
                 "description": "Many plugins", "owner": {"name": "Acme", "email": "a@acme.example"},
                 "plugins": entries},
        "plugins/agent-sdk-dev/.claude-plugin/plugin.json": {"name": "agent-sdk-dev"},
        "plugins/agent-sdk-dev/skills/new-sdk-app/SKILL.md": "---\nname: new-sdk-app\ndescription: d\n---\n",
        "external_plugins/asana/.claude-plugin/plugin.json": {"name": "asana"},
        "external_plugins/asana/commands/asana-setup.md": "Connect Asana.\n"})


def _remote_lines(repo: Path) -> list[str]:
    """What `check` says of each remote entry, at the line of its `source`."""
    expected, name = [], ""
    for i, text in enumerate((repo / MARKET).read_text().splitlines(), 1):
        if text.strip().startswith('"name": "vendor-'):
            name = text.split('"')[3]
        if '"source": {' in text:
            n = int(name.removeprefix("vendor-"))
            kind, shown = ("url", f"https://github.com/{name}/claude-plugin.git") if n % 2 else (
                "github", f"{name}/claude-plugin")
            expected.append(f"skipped {MARKET}:{i}: plugin {name!r}: source is {kind!r} ({shown}); remote "
                            "sources are not fetched")
    return expected


def test_run_says_the_remote_sources_in_one_line_and_check_lists_each(tmp_path: Path) -> None:
    repo = _big_marketplace(tmp_path, 200)
    run = aam_eval("run", "--replay", "--allow-empty", "--package", str(repo))
    assert run.code == 0, run.out + run.err
    assert "remote sources are not fetched" not in run.out + run.err
    assert [line for line in run.out.splitlines() if "remote" in line] == [
        "skipped 200 plugins with remote sources (not fetched); `aam-eval check` lists them"]
    assert_golden("run_remote_sources.txt", re.sub(r"\b\d+\.\ds\b", "N.Ns", run.out))
    check = aam_eval("check", "--package", str(repo))
    assert check.code == 0, check.err
    listed = [line for line in check.out.splitlines() if line.startswith("skipped ")]
    assert len(listed) == 200 and listed == _remote_lines(repo)
    assert "plugin agent-sdk-dev (plugins/agent-sdk-dev" in check.out and "plugin asana (external_plugins/asana" \
        in check.out


def test_one_remote_source_is_said_in_full(tmp_path: Path) -> None:
    repo = _big_marketplace(tmp_path, 1)
    run = aam_eval("run", "--replay", "--allow-empty", "--package", str(repo))
    assert [line for line in run.out.splitlines() if "remote" in line] == _remote_lines(repo)
