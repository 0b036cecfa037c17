"""Re-execute replay without a CLI: the settings that choose it, the shared traffic store, and
how a case that cannot be re-executed says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.diff import diff_reports
from aam_eval_action.errors import ConfigError
from aam_eval_action.loader import load_package
from aam_eval_action.main import build_parser
from aam_eval_action.render.comment import MARKER, render_comment
from aam_eval_action.replay import traffic_store
from aam_eval_action.replay.decision import likely_causes
from aam_eval_action.replay.divergence import Divergence
from aam_eval_action.replay.traffic import (
    ModelTraffic,
    RecordedResponse,
    SseEvent,
    TrafficError,
    build,
    full_requests,
)
from aam_eval_action.settings import Overrides, resolve
from aam_eval_action.testing.packages import simple_case, write_package

from conftest import EXAMPLE, PINNED_CLAUDE, aam_eval
from support.reports import case as report_case
from support.reports import report as make_report

PROMPT = "You are an agent. " * 200  # long: goes to the shared table


def _traffic(answer: str = "done", prompt: str = PROMPT) -> ModelTraffic:
    request = {"model": "m", "system": [{"type": "text", "text": prompt}],
               "tools": [{"name": "Write", "input_schema": {}}],
               "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    response = RecordedResponse(status=200, events=[SseEvent(data={"type": "message_stop", "text": answer})])
    return build("claude", "2.1.330", [("/v1/messages?beta=true", request, response, False)])


# --- choosing ----------------------------------------------------------------------------------


def test_rerun_comes_from_the_flags_over_eval_config(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")],
                        config={"version": 1, "engine": "claude-code", "rerun": "never",
                                "rerun-ignore": [r"\d+ ms"]})
    package = load_package(pkg)
    assert resolve(package, Overrides(), {}).rerun == "never"
    settings = resolve(package, Overrides(rerun="always"), {})
    assert settings.rerun == "always" and settings.rerun_ignore[0].pattern == r"\d+ ms"
    parser = build_parser()
    assert parser.parse_args(["run", "--rerun"]).rerun == "always"
    assert parser.parse_args(["run", "--no-rerun"]).rerun == "never"
    assert parser.parse_args(["run"]).rerun is None
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--rerun", "--no-rerun"])


def test_a_bad_rerun_ignore_regex_names_the_file_and_line(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")])
    config = {"version": 1, "engine": "claude-code", "rerun-ignore": ["ok", "(unclosed"]}
    (pkg / "evals/eval-config.json").write_text(json.dumps(config, indent=2))
    with pytest.raises(ConfigError) as info:
        load_package(pkg)
    assert "evals/eval-config.json:" in str(info.value) and "rerun-ignore" in str(info.value)
    assert "'(unclosed' is not a valid regular expression" in str(info.value)
    assert aam_eval("check", "--package", str(pkg)).code == 2


def test_the_likely_cause_of_a_divergence_is_the_changed_file_its_tool_call_shows() -> None:
    changes = ("package file hooks/protect_secrets.py changed", "skill file skills/x/SKILL.md changed")
    hook = Divergence(turn=2, stream="agent", path="messages[3].content[0].content", tool_name="Write",
                      recorded="PreToolUse:Write hook error: [python3 $WORKSPACE/.aam/package/hooks/"
                               "protect_secrets.py]: Blocked", live="File created successfully")
    assert likely_causes(changes, hook) == ["package file hooks/protect_secrets.py changed"]
    other = hook.model_copy(update={"recorded": "a", "live": "b"})
    assert likely_causes(changes, other) == list(changes)
    skill = hook.model_copy(update={"tool_name": "Skill", "tool_input": "x", "recorded": "a", "live": "b"})
    assert likely_causes(changes, skill) == ["skill file skills/x/SKILL.md changed"]


# --- the shared store --------------------------------------------------------------------------


def test_shared_entries_are_stored_once_per_directory_and_read_back(tmp_path: Path) -> None:
    one, two = _traffic("one"), _traffic("two")
    stored = traffic_store.save_traffic(tmp_path, [one], None)
    stored += traffic_store.save_traffic(tmp_path, [two], None)
    store = tmp_path / "_shared/claude-2.1.330.yaml"
    assert [p.name for p in (tmp_path / "_shared").iterdir()] == [store.name]
    assert all(s["shared"] == {} for s in stored) and PROMPT.strip() not in json.dumps(stored)
    entries = yaml.safe_load(store.read_text())["entries"]
    assert [e.get("text") for e in entries.values()].count(PROMPT) == 1
    back = traffic_store.load_traffic(tmp_path, stored)
    assert [full_requests(t) for t in back] == [full_requests(one), full_requests(two)]
    # Recording the same again adds nothing: the store is left untouched.
    before = store.stat().st_mtime_ns
    traffic_store.save_traffic(tmp_path, [one], None)
    assert store.stat().st_mtime_ns == before


def test_entries_no_cassette_uses_are_pruned(tmp_path: Path) -> None:
    """A re-recording replaces shared entries; the old ones are dropped, the used ones kept."""
    kept = traffic_store.save_traffic(tmp_path, [_traffic("one")], None)
    traffic_store.save_traffic(tmp_path, [_traffic("two", prompt="An older system prompt. " * 100)], None)
    (tmp_path / "case-one").mkdir()
    (tmp_path / "case-one/claude-code.session.yaml").write_text(yaml.safe_dump({"model_traffic": kept}))
    store = tmp_path / "_shared/claude-2.1.330.yaml"
    assert "An older system prompt." in store.read_text()
    assert traffic_store.prune_stores(tmp_path, None) == 1
    assert "An older system prompt." not in store.read_text()
    back = traffic_store.load_traffic(tmp_path, kept)
    assert [full_requests(t) for t in back] == [full_requests(_traffic("one"))]
    assert traffic_store.prune_stores(tmp_path, None) == 0  # nothing more to drop


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("entries: [1, 2]\n", "not a shared traffic store"),
        ("version: 1\nentries: {a: [\n", "damaged YAML at line"),
        ("version: 1\nentries: {}\n", "shared entries missing from the store"),
        ("!!python/object/apply:os.system [echo hi]\n", "damaged YAML"),
    ],
)
def test_a_damaged_store_is_an_error_naming_it(tmp_path: Path, damage: str, expected: str) -> None:
    stored = traffic_store.save_traffic(tmp_path, [_traffic()], None)
    store = tmp_path / "_shared/claude-2.1.330.yaml"
    store.write_text(damage)
    with pytest.raises(TrafficError, match=expected) as info:
        traffic_store.load_traffic(tmp_path, stored)
    assert str(store) in str(info.value)


def test_store_names_cannot_leave_the_shared_directory(tmp_path: Path) -> None:
    path = traffic_store.store_path(tmp_path, "claude", "../../etc/x")
    assert path.parent == tmp_path / "_shared" and "/" not in path.name


# --- when re-execution cannot happen -----------------------------------------------------------


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """The shipped example (its cassettes carry model traffic), its cassettes inside it."""
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    shutil.copytree(EXAMPLE.parents[1] / "cassettes", pkg / "evals/cassettes")
    config = pkg / "evals/eval-config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "cassettes": "cassettes"}))
    return pkg


def _case(pkg: Path, *args: str) -> dict[str, Any]:
    out = pkg.parent / "r.json"
    aam_eval("run", "changelog-entry", "--package", str(pkg), "--replay", *args, "-o", str(out))
    case: dict[str, Any] = json.loads(out.read_text())["cases"][0]
    return case


def test_without_the_cli_a_changed_package_is_stale_and_says_rerun_needs_it(
    example: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # the lean image: no agent CLI
    assert _case(example)["replay_kind"] == "snapshot"  # nothing changed: the snapshot is exact
    (example / "hooks/protect_secrets.py").write_text("import sys\nsys.exit(0)\n")
    case = _case(example)
    assert case["replay_miss"] == "stale"
    assert f"re-execute needs claude {PINNED_CLAUDE} on PATH, none is" in case["error"]
    forced = _case(example, "--rerun")
    assert "`claude` is not on PATH; install the recorded version" in forced["error"]
    assert f"npm install -g @anthropic-ai/claude-code@{PINNED_CLAUDE}" in forced["error"]


def test_a_changed_prompt_is_stale_without_trying(example: Path) -> None:
    case_file = example / "evals/cases/03-changelog-entry.yaml"
    case_file.write_text(case_file.read_text().replace("Add a changelog entry", "Add one changelog entry"))
    case = _case(example)
    assert case["replay_miss"] == "stale"
    assert "(not re-executable: the prompt changed, so the model is asked something else from turn 1)" in case["error"]


def test_a_damaged_shared_store_is_a_damaged_cassette_error(example: Path) -> None:
    store = example / "evals/cassettes/_shared" / f"claude-{PINNED_CLAUDE}.yaml"
    store.write_text("version: 1\nentries: {}\n")
    case = _case(example, "--rerun")
    assert case["replay_miss"] == "damaged" and str(store) in case["error"]


def test_a_cassette_without_traffic_cannot_be_forced_to_rerun(example: Path) -> None:
    path = example / "evals/cassettes/changelog-entry/claude-code.session.yaml"
    data = yaml.safe_load(path.read_text())
    del data["model_traffic"]
    path.write_text(yaml.safe_dump(data))
    case = _case(example, "--rerun")
    assert case["replay_miss"] == "no-cassette"
    assert "holds no model traffic to re-execute" in case["error"]
    assert _case(example)["replay_kind"] == "snapshot"


@pytest.mark.parametrize(("damage", "expected"), [
    ("no-requests", "the recorded session sent no request to the model (it ended before its first turn)"),
    ("unknown-cli", "the recording does not say which CLI and version made it"),
])
def test_traffic_that_cannot_be_re_executed_says_why_in_words(example: Path, damage: str, expected: str) -> None:
    path = example / "evals/cassettes/changelog-entry/claude-code.session.yaml"
    data = yaml.safe_load(path.read_text())
    for attempt in data["model_traffic"]:
        if damage == "no-requests":
            attempt["exchanges"], attempt["conversations"] = [], []
        else:
            attempt["cli"] = "unknown"
            attempt.pop("cli_version", None)
    path.write_text(yaml.safe_dump(data))
    shared = example / "evals/cassettes/_shared"  # as recorded: the store is named after the CLI
    shutil.copy(shared / f"claude-{PINNED_CLAUDE}.yaml", shared / "unknown-unknown.yaml")
    case = _case(example, "--rerun")
    assert case["replay_miss"] == "no-cassette" and expected in case["error"], case["error"]
    assert "re-record the case" in case["error"] and "unknown@None" not in case["error"]
    assert "not on PATH" not in case["error"]


# --- the comment -------------------------------------------------------------------------------


def _diverged_case() -> Any:
    from aam_eval_action.report import ReplayDivergence, ReplayMiss

    result = report_case("hook-blocks-env-write", "ERROR", target="hook:pre-tool-use",
                         replay_miss="diverged", error="replay diverged: turn 2: …")
    result.judge_verdict = None
    result.miss = ReplayMiss(
        kind="diverged", reason="turn 2: …", changes=["package file hooks/protect_secrets.py changed"],
        rerecord="aam-eval run hook-blocks-env-write --record",
        divergence=ReplayDivergence(
            turn=2, path="messages[3].content[0].content", tool="Write", tool_input="$WORKSPACE/.env",
            recorded="PreToolUse:Write hook error: Blocked", live="File created successfully <b>@team</b> | x",
        ),
    )
    return result


def test_the_comment_lists_diverged_cases_apart_with_turn_tool_and_both_values() -> None:
    base = make_report([report_case("hook-blocks-env-write"), report_case("other")])
    rerun = report_case("other")
    rerun.replay_kind = "rerun"
    head = make_report([_diverged_case(), rerun])
    diff = diff_reports(base, head)
    assert [(c.name, c.category) for c in diff.cases] == [("hook-blocks-env-write", "diverged"),
                                                            ("other", "unchanged")]
    assert diff.regressions == 0 and diff.compared == 1 and head.summary.diverged == 1
    comment = render_comment(diff)
    assert comment.startswith(MARKER) and "## ❌" in comment
    assert "**1 case diverged on re-execution**" in comment
    row = next(line for line in comment.splitlines() if line.startswith("| hook-blocks-env-write"))
    assert "| 2 | Write tool result: &#36;WORKSPACE/.env | PreToolUse:Write hook error: Blocked |" in row
    # Untrusted values stay inert: no HTML, no mention, no broken table.
    assert "&lt;b&gt;@\u200bteam&lt;/b&gt; &#124; x" in row and "<b>" not in comment
    assert "| package file hooks/protect&#95;secrets.py changed |" in row
    assert "aam-eval run hook-blocks-env-write --record" in comment
    assert "Stale cassettes" not in comment and "### Regressions" not in comment
