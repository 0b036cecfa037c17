"""Repositories as they are: every layout read into the neutral package, what `check` says of
each, the hook dialects converted, and hostile manifests refused with file:line.

The fixtures under tests/fixtures/layouts are shaped like public agent-package repositories
(Claude Code plugins and marketplaces, a Codex marketplace, a Copilot plugin with components
outside its folder, a Gemini CLI extension, bare skills in category folders, one plugin with a
manifest and a hooks file per host). The real CLIs run them in test_layouts_e2e.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.engines.base import get_engine
from aam_eval_action.errors import ConfigError
from aam_eval_action.hooks import convert, neutral
from aam_eval_action.layouts.detect import detect, read_package
from aam_eval_action.package import HookSource

from conftest import ROOT, aam_eval
from support.golden import assert_golden

LAYOUTS = ROOT / "tests/fixtures/layouts"
FIXTURES = sorted(p.name for p in LAYOUTS.iterdir() if p.is_dir())


@pytest.mark.parametrize("fixture", FIXTURES)
def test_check_lists_exactly_what_each_layout_holds(fixture: str) -> None:
    result = aam_eval("check", "--package", str(LAYOUTS / fixture))
    assert result.code == 0, result.err
    assert_golden(f"check_{fixture}.txt", result.out)


def test_every_layout_is_recognised_as_the_public_repositories_lay_it_out() -> None:
    kinds = {name: detect(LAYOUTS / name).kind for name in FIXTURES}
    assert kinds == {
        "claude-marketplace": "claude-marketplace", "claude-plugin": "claude-plugin",
        "claude-plugin-bare": "claude-plugin", "codex-marketplace": "codex-marketplace",
        "copilot-plugins": "copilot-marketplace", "gemini-extension": "gemini-extension",
        "marketplace-two": "claude-marketplace", "marketplace-unlisted": "claude-marketplace",
        "multi-host": "claude-plugin+codex-plugin+copilot-plugin+gemini-extension", "skills-folder": "skills",
    }


def test_a_plugin_without_a_manifest_is_named_after_its_folder_and_both_mcp_shapes_read() -> None:
    bare = read_package(LAYOUTS / "claude-plugin-bare")
    assert bare.plugin == "claude-plugin-bare" and bare.mcp == {"sqlite": {
        "command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "${CLAUDE_PLUGIN_ROOT}/data/dev.db"]}}
    wrapped = read_package(LAYOUTS / "codex-marketplace")
    assert wrapped.mcp == {"sheets": {"command": "node", "args": ["./server.js"]}}


def test_a_strict_false_entry_is_the_plugin_its_entry_defines() -> None:
    plugins = {p.plugin: p for p in detect(LAYOUTS / "claude-marketplace").packages}
    assert sorted(plugins) == ["formatter", "linter", "writing-skills"]
    writing = plugins["writing-skills"]
    assert writing.skill_dirs == {"tone": "skills/tone", "brevity": "skills/brevity"}  # not skills/drafts
    # Its folder is the repository's root: the other plugins' folders are not part of it.
    copied = writing.copied_files(None)
    assert "README.md" in copied and not any(f.startswith(("plugins/", "skills/")) for f in copied)


def test_a_copilot_plugin_takes_the_repositorys_agents_it_names() -> None:
    tours = read_package(LAYOUTS / "copilot-plugins")
    assert [(a.name, a.path, a.format) for a in tours.agents] == [
        ("tour-guide", "agents/tour-guide.agent.md", "copilot")]
    assert tours.skill_dirs == {"tour-outline": "skills/tour-outline"}
    assert "agents/tour-guide.agent.md" in tours.files_for(None)


# --- each engine gets its own host's files ---


def _install(fixture: str, engine: str, tmp_path: Path) -> Path:
    ws = tmp_path / engine
    ws.mkdir()
    get_engine(engine).install(read_package(LAYOUTS / fixture), ws, None)
    return ws


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def test_each_engine_gets_its_own_hosts_hooks_file_of_a_multi_host_plugin(tmp_path: Path) -> None:
    claude = _json(_install("multi-host", "claude-code", tmp_path) / ".claude/settings.json")["hooks"]
    assert list(claude) == ["PreToolUse"] and "guard.sh\" claude" in claude["PreToolUse"][0]["hooks"][0]["command"]
    codex = _json(_install("multi-host", "codex", tmp_path) / ".codex/hooks.json")["hooks"]
    assert codex["PreToolUse"][0]["hooks"][0]["command"].endswith('guard.sh" claude')
    copilot = _install("multi-host", "copilot", tmp_path)
    own = _json(copilot / ".github/hooks/aam-0.json")
    assert own["version"] == 1 and "guard.sh\" copilot" in own["hooks"]["preToolUse"][0]["bash"]
    assert not (copilot / ".claude/settings.json").exists()
    gemini = _json(_install("multi-host", "gemini-cli", tmp_path) / ".gemini/settings.json")["hooks"]
    command = gemini["BeforeTool"][0]["hooks"][0]["command"]
    assert command.endswith('guard.sh" gemini') and "${" not in command
    assert (tmp_path / "claude-code/CLAUDE.md").read_text() == "Notes are short and dated.\n"


def test_a_claude_hook_reaches_gemini_cli_in_its_events_names_and_milliseconds(tmp_path: Path) -> None:
    ws = _install("claude-plugin", "gemini-cli", tmp_path)
    hooks = _json(ws / ".gemini/settings.json")["hooks"]
    entry = hooks["BeforeTool"][0]
    assert entry["matcher"] == "write_file|replace|run_shell_command"
    assert entry["hooks"][0]["timeout"] == 30000  # `"timeout": 30` is seconds in Claude's dialect
    assert entry["hooks"][0]["command"] == f'sh "{ws.resolve()}/.aam/package/scripts/guard.sh" claude'
    agent = (ws / ".gemini/agents/release-reviewer.md").read_text()
    assert "tools:\n- read_file\n- grep_search\n" in agent and "model:" not in agent
    assert (ws / ".gemini/commands/release.toml").read_text() == (
        'description = "Draft the release notes for a version"\n'
        'prompt = "Draft the release notes for version {{args}} in the house style.\\n"\n')


def test_a_gemini_extension_reaches_claude_code_converted(tmp_path: Path) -> None:
    ws = _install("gemini-extension", "claude-code", tmp_path)
    hooks = _json(ws / ".claude/settings.json")["hooks"]
    assert hooks["PreToolUse"][0]["matcher"] == "Bash" and hooks["PreToolUse"][0]["hooks"][0]["timeout"] == 5
    assert (ws / "CLAUDE.md").read_text().startswith("# Deploying")
    assert (ws / ".claude/commands/deploy/rollback.md").read_text() == (
        "---\ndescription: Roll back\n---\n\nRoll back the last deploy.\n")
    server = _json(ws / ".mcp.json")["mcpServers"]["deployer"]
    assert server["args"] == [f"{ws.resolve()}/.aam/package/dist/server.js"]
    gemini = _install("gemini-extension", "gemini-cli", tmp_path)
    assert _json(gemini / ".gemini/settings.json")["tools"] == {"exclude": ["run_shell_command(rm -rf)"]}
    assert (gemini / ".gemini/commands/deploy/rollback.toml").is_file() and (gemini / "GEMINI.md").is_file()


def test_a_copilot_plugin_keeps_its_agent_for_copilot_and_converts_it_for_others(tmp_path: Path) -> None:
    copilot = _install("copilot-plugins", "copilot", tmp_path)
    assert (copilot / ".github/agents/tour-guide.agent.md").read_text() == (
        LAYOUTS / "copilot-plugins/agents/tour-guide.agent.md").read_text()
    claude = (_install("copilot-plugins", "claude-code", tmp_path) / ".claude/agents/tour-guide.md").read_text()
    assert "tools: Read, Grep\n" in claude


# --- hook dialects ---


def _source(dialect: str, events: dict[str, Any]) -> HookSource:
    return HookSource(dialect, "hooks.json", events)  # type: ignore[arg-type]


def test_conversions_keep_events_tool_names_and_timeout_units() -> None:
    claude = _source("claude", {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [
        {"type": "command", "command": "check", "timeout": 30}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "log"}]}]})
    gemini, lost = convert((claude,), "gemini")
    assert gemini == {"BeforeTool": [{"matcher": "write_file|replace", "hooks": [
        {"type": "command", "command": "check", "timeout": 30000}]}],
        "BeforeAgent": [{"hooks": [{"type": "command", "command": "log"}]}]}
    assert lost == []
    back, _ = convert((_source("gemini", gemini),), "claude")
    assert back["PreToolUse"][0] == {"matcher": "Write|Edit", "hooks": [
        {"type": "command", "command": "check", "timeout": 30}]}


def test_a_copilot_hook_runs_for_every_tool_elsewhere_with_its_env_and_cwd() -> None:
    copilot = _source("copilot", {"preToolUse": [{"type": "command", "bash": "./guard.sh", "cwd": "scripts",
                                                  "env": {"MODE": "strict"}, "timeoutSec": 12}]})
    claude, warnings = convert((copilot,), "claude")
    assert claude == {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "cd scripts && env MODE=strict ./guard.sh", "timeout": 12}]}]}
    assert any("Copilot hooks read Copilot's input" in w for w in warnings)
    gemini, _ = convert((copilot,), "gemini")
    assert gemini["BeforeTool"][0]["hooks"][0]["timeout"] == 12000


def test_what_has_no_counterpart_is_a_warning_not_silence() -> None:
    claude = _source("claude", {"SubagentStop": [{"hooks": [{"type": "command", "command": "x"}]}],
                                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "ok?"}]}],
                                "PreToolUze": [{"hooks": [{"type": "command", "command": "y"}]}]})
    events, warnings = convert((claude,), "gemini")
    assert events == {}
    assert warnings == [
        "hooks.json: event 'PreToolUze' is not a Claude event",
        "hooks.json: PreToolUse: a 'prompt' hook runs no command and has no counterpart",
        "hooks.json: event 'SubagentStop' has no Gemini CLI counterpart; left out",
    ] or sorted(warnings) == sorted([
        "hooks.json: event 'PreToolUze' is not a Claude event",
        "hooks.json: PreToolUse: a 'prompt' hook runs no command and has no counterpart",
        "hooks.json: event 'SubagentStop' has no Gemini CLI counterpart; left out",
    ])
    hooks, lost = neutral(claude)
    assert [h.command for h in hooks] == ["x"] and len(lost) == 2


def test_check_names_what_each_engine_of_the_run_gets_converted(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(LAYOUTS / "gemini-extension", repo)
    (repo / "evals").mkdir()
    (repo / "evals/eval-config.json").write_text(json.dumps(
        {"version": 1, "engine": "gemini-cli", "engines": ["gemini-cli", "claude-code"], "judge": "claude-sonnet-4-6"}))
    out = aam_eval("check", "--package", str(repo)).out
    assert ("  claude-code: hooks/hooks.json: event 'SessionStart'" not in out)
    assert "  claude-code: excludeTools (run_shell_command(rm -rf)) applies to Gemini CLI only; not converted" in out
    assert "  gemini-cli:" not in out


# --- lint ---


def test_strict_makes_the_lint_warnings_errors(tmp_path: Path) -> None:
    repo = LAYOUTS / "skills-folder"
    relaxed = aam_eval("check", "--package", str(repo))
    assert relaxed.code == 0 and "3 warning(s)" in relaxed.out  # the standard's two, a listing's one
    strict = aam_eval("check", "--package", str(repo), "--strict")
    assert strict.code == 2 and "3 warning(s) (errors with --strict)" in strict.out
    run = aam_eval("run", "--package", str(repo), "--replay", "--strict")
    assert run.code == 2 and "skills/slides/SKILL.md:3: description: 1151 characters" in run.err


def test_cases_outside_their_plugins_folder_are_named() -> None:
    repo = LAYOUTS / "marketplace-two"
    try:
        (repo / "evals/cases/stray.yaml").write_text("name: stray\n")
        (repo / "evals/cases/old-plugin").mkdir()
        out = aam_eval("check", "--package", str(repo)).out
    finally:
        (repo / "evals/cases/stray.yaml").unlink()
        (repo / "evals/cases/old-plugin").rmdir()
    assert "warning evals/cases/stray.yaml: with several plugins, cases go in evals/cases/<plugin>/" in out
    assert "warning evals/cases/old-plugin/: no plugin is named 'old-plugin'" in out


# --- hostile and broken input ---


def _marketplace(tmp_path: Path, source: Any, files: dict[str, str] | None = None) -> Path:
    repo = tmp_path / "repo"
    (repo / ".claude-plugin").mkdir(parents=True)
    (repo / ".claude-plugin/marketplace.json").write_text(json.dumps(
        {"name": "m", "owner": {"name": "o"}, "plugins": [{"name": "p", "source": source}]}, indent=2))
    for rel, text in (files or {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


def _fails(repo: Path, tmp_path: Path, *expected: str) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    for verb in (("check",), ("run", "--replay")):
        result = aam_eval(*verb, "--package", str(repo))
        assert result.code == 2, result.out
        for text in expected:
            assert text in result.err, result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written beside the repository
    assert not (repo / "evals").exists()


def test_a_marketplace_source_outside_the_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    _fails(_marketplace(tmp_path, "../outside"), tmp_path,
           ".claude-plugin/marketplace.json:9: plugins[0].source: '../outside' escapes the repository")


def test_an_absolute_marketplace_source_is_refused(tmp_path: Path) -> None:
    _fails(_marketplace(tmp_path, {"source": "local", "path": "/etc"}), tmp_path,
           ".claude-plugin/marketplace.json:11: plugins[0].source.path: '/etc' is absolute")


def test_a_marketplace_source_that_links_out_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    repo = _marketplace(tmp_path, "./plugins/p")
    (repo / "plugins").mkdir()
    os.symlink(tmp_path / "outside", repo / "plugins/p")
    _fails(repo, tmp_path, "plugins/p: is a symlink that leaves the repository")


def test_a_manifest_path_outside_its_plugin_is_refused(tmp_path: Path) -> None:
    repo = _marketplace(tmp_path, "./plugins/p", {
        "plugins/p/.claude-plugin/plugin.json": json.dumps({"name": "p", "skills": "./../../skills"}, indent=2),
        "skills/x/SKILL.md": "---\nname: x\ndescription: d\n---\n"})
    _fails(repo, tmp_path, "plugins/p/.claude-plugin/plugin.json:3: skills: './../../skills' escapes "
                           "plugins/p/")


def test_an_unparsable_plugin_json_names_its_line(tmp_path: Path) -> None:
    repo = _marketplace(tmp_path, "./plugins/p", {"plugins/p/.claude-plugin/plugin.json": '{\n  "name": "p",\n}\n'})
    _fails(repo, tmp_path, "plugins/p/.claude-plugin/plugin.json:3: invalid JSON")


def test_an_unparsable_skill_frontmatter_names_its_line(tmp_path: Path) -> None:
    repo = _marketplace(tmp_path, "./plugins/p", {
        "plugins/p/skills/x/SKILL.md": "---\nname: x\n  description: indented under name\n---\nBody\n"})
    _fails(repo, tmp_path, "plugins/p/skills/x/SKILL.md:3: frontmatter: invalid YAML")


def test_a_hooks_file_that_links_out_is_refused(tmp_path: Path) -> None:
    (tmp_path / "hooks.json").write_text('{"hooks": {}}')
    repo = _marketplace(tmp_path, "./plugins/p", {"plugins/p/.claude-plugin/plugin.json": '{"name": "p"}'})
    (repo / "plugins/p/hooks").mkdir()
    os.symlink(tmp_path / "hooks.json", repo / "plugins/p/hooks/hooks.json")
    with pytest.raises(ConfigError, match=r"plugins/p/hooks/hooks\.json: is a symlink that leaves the repository"):
        detect(repo)


def test_remote_sources_are_listed_and_never_fetched(tmp_path: Path) -> None:
    repo = _marketplace(tmp_path, {"source": "github", "repo": "someone/else"})
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 2 and "lists no plugin with a local source; nothing to run" in result.err


def test_a_folder_with_no_package_says_what_was_looked_for(tmp_path: Path) -> None:
    result = aam_eval("check", "--package", str(tmp_path))
    assert result.code == 2
    assert "no package found here; looked for package.agent.json, .claude-plugin/plugin.json" in result.err


def _plugin_at(folder: Path, name: str) -> None:
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin/plugin.json").write_text(json.dumps({"name": name, "version": "1.0.0"}))
    skill = folder / "skills" / f"{name}-helper"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}-helper\ndescription: Help with {name} work.\n---\nDo it.\n")


def test_the_only_package_one_or_two_folders_down_is_taken_and_said(tmp_path: Path) -> None:
    """Shaped like a repository that keeps its plugin under `plugin/` beside its README: that one
    is taken, and the run says so; with several down there, each is listed with its --package."""
    repo = tmp_path / "azure-skills"
    (repo / "docs").mkdir(parents=True)
    (repo / "README.md").write_text("# Skills for the cloud\n")
    (repo / "tests/fixtures/other").mkdir(parents=True)  # a test fixture is not the package
    _plugin_at(repo / "tests/fixtures/other", "fixture")
    _plugin_at(repo / "plugin", "azure")
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 0, result.err
    assert f"no package at {repo}; using the one in plugin/ (--package {repo / 'plugin'} says so)" in result.err
    assert "azure-helper" in result.out
    _plugin_at(repo / "extras/storage", "storage")  # two folders down
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 2
    assert (f"no package found here, but 2 below it; pass one: --package {repo / 'extras/storage'}; "
            f"--package {repo / 'plugin'}") in result.err


def test_manifests_as_the_newer_public_repositories_write_them() -> None:
    # Components under a vendor's `extensions` (agent-plugins.org), a source without `./`,
    # Copilot hooks with capitalised events, a Codex `url` source that is a local path.
    plugins = {p.plugin: p for p in detect(LAYOUTS / "copilot-plugins").packages}
    kit = plugins["review-kit"]
    assert kit.skill_dirs == {"review-checklist": "skills/review-checklist"}
    assert [(a.name, a.path) for a in kit.agents] == [("strict-reviewer", "agents/strict-reviewer.agent.md")]
    assert [(h.dialect, list(h.events)) for h in kit.hooks] == [("copilot", ["PostToolUse"])]
    events, lost = convert(kit.hooks, "claude")
    assert list(events) == ["PostToolUse"] and not any("not a Copilot event" in w for w in lost)
    assert [f.message for f in kit.findings if f.level == "skipped"] == [
        "extensions: 1 Copilot CLI extension(s) are not installed (not agent components)"]
    codex = {p.plugin: p.base for p in detect(LAYOUTS / "codex-marketplace").packages}
    assert codex == {"sheet-tools": "plugins/sheet-tools", "notes-kit": "plugins/notes-kit"}


def test_names_from_the_repository_never_form_a_workflow_command(tmp_path: Path) -> None:
    skill = tmp_path / "repo" / "::error::pwned"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: Not A Slug\ndescription: d\n---\n")
    for verb in (("check",), ("check", "--strict"), ("run", "--replay", "--strict")):
        result = aam_eval(*verb, "--package", str(tmp_path / "repo"))
        lines = (result.out + result.err).splitlines()
        assert any("pwned" in line for line in lines), result.out + result.err
        assert not any(line.lstrip().startswith("::") for line in lines), lines


def test_a_marketplace_is_linted_against_its_documented_fields(tmp_path: Path) -> None:
    repo = _marketplace(tmp_path, "./plugins/p", {"plugins/p/.claude-plugin/plugin.json": '{"name": "p"}'})
    data = json.loads((repo / ".claude-plugin/marketplace.json").read_text())
    del data["owner"]
    data["plugins"][0]["name"] = "My Plugin"
    (repo / ".claude-plugin/marketplace.json").write_text(json.dumps(data, indent=2))
    out = aam_eval("check", "--package", str(repo)).out
    assert "warning .claude-plugin/marketplace.json:1: owner: should be an object with a name" in out
    assert "warning .claude-plugin/marketplace.json:5: plugins[0].name: 'My Plugin' should be a kebab-case" in out


def test_a_broken_command_errors_the_case_not_the_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(LAYOUTS / "gemini-extension", repo)
    (repo / "commands/deploy.toml").write_text('description = "x\nprompt = 1\n')
    with pytest.raises(ConfigError, match=r"commands/deploy\.toml: invalid TOML"):
        get_engine("claude-code").install(read_package(repo), tmp_path / "ws", None)
