"""Every pull request is hostile input: cassettes, eval-config, the package and the text the
agent or judge produced. Each test here builds the hostile input for real (files on disk,
git repositories, the local GitHub and model servers) and checks what comes out: a clear
error naming the file, or an escaped rendering, and nothing written or run outside."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.commands.action import action as action_main
from aam_eval_action.errors import AamEvalError, ConfigError, UsageError
from aam_eval_action.render.comment import MARKER
from aam_eval_action.testing.github_server import GitHubServer
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import aam_eval
from support.gitrepo import commit_all, git, init

OWNER, REPO, PR = "acme", "evals", 7
HOSTILE_TEXT = "::add-mask::x\n::error::pwned\r::stop-commands::x\n  ::set-env name=A::b\n##[error]old"


# --- helpers ---


def _record_judges(pkg: Path, names: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge cassettes for these cases, through the real SDK and the scripted server."""
    scenarios = [{"match": f"task for {n}.", "judge": {"result": "PASS", "reason": f"{n} is fine"}}
                 for n in names]
    with ModelServer(scenarios) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        aam_eval("run", *names, "--package", str(pkg), "--mode", "auto")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")


def _package(root: Path, names: list[str], monkeypatch: pytest.MonkeyPatch,
             config: dict[str, Any] | None = None) -> Path:
    """A package whose cases are all recorded (sessions and judge calls)."""
    pkg = write_package(root, [simple_case(n) for n in names], config=config)
    record_sessions(pkg, {n: f"Finished the task for {n}." for n in names})
    _record_judges(pkg, names, monkeypatch)
    return pkg


def _session(pkg: Path, name: str) -> Path:
    return pkg / "evals/cassettes" / name / "claude-code.session.yaml"


def _edit(pkg: Path, name: str, change: Any) -> None:
    path = _session(pkg, name)
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def _cases(report: Path) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in json.loads(report.read_text())["cases"]}


def _runner_commands(log: str) -> list[str]:
    """The workflow commands a GitHub Actions runner would execute from this log: lines
    (split at CR and LF) starting with `::` after leading whitespace, honouring
    `::stop-commands::<token>` … `::<token>::`."""
    found, stopped_by = [], None
    for line in re.split(r"\r\n|\r|\n", log):
        text = line.lstrip()
        if stopped_by is not None:
            if text == f"::{stopped_by}::":
                stopped_by = None
            continue
        if text.startswith("::") or text.startswith("##["):
            found.append(text)
            if text.startswith("::stop-commands::"):
                stopped_by = text.removeprefix("::stop-commands::")
    return found


@pytest.fixture
def tripwire() -> Iterator[tuple[str, list[bytes]]]:
    """A 127.0.0.1 listener counting connections (and what they sent): it must get none."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    hits: list[bytes] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.settimeout(1)
            try:
                hits.append(conn.recv(4096))
            except OSError:
                hits.append(b"")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", hits
    # shutdown() wakes the blocked accept(); close() alone would leave the thread holding the
    # listening socket's file while its descriptor number is handed to the next test's socket.
    server.shutdown(socket.SHUT_RDWR)
    thread.join(5)
    server.close()


# --- the must-show run: ten hostile cassettes next to a good case ---

HOSTILE = [
    "path-traversal", "absolute-path", "symlinked-cassette", "python-tag", "alias-bomb",
    "wrong-types", "huge-output", "empty-attempts", "forged-fingerprint", "injected-commands",
]


def _make_hostile(pkg: Path, outside: Path) -> None:
    files = "attempts"
    _edit(pkg, "path-traversal", lambda d: d[files][0].update(files=[
        {"path": f"../../../../../../..{outside}/traversal.txt", "status": "created",
         "text": "pwned", "size": 5}]))
    _edit(pkg, "absolute-path", lambda d: d[files][0].update(files=[
        {"path": f"{outside}/absolute.txt", "status": "created", "text": "pwned", "size": 5}]))
    # A cassette that is a symlink to a (valid-looking) file outside the repository.
    real = _session(pkg, "symlinked-cassette")
    (outside / "elsewhere.yaml").write_text(real.read_text())
    real.unlink()
    real.symlink_to(outside / "elsewhere.yaml")
    judge = pkg / "evals/cassettes/python-tag/claude-code.judge.yaml"
    judge.write_text(
        f"!!python/object/apply:os.system ['touch {outside}/pwned-by-tag']\n"
        + judge.read_text()
    )
    bomb = "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['lol'] * 9)}]\n"
        for i in range(9)
    )
    _session(pkg, "alias-bomb").write_text(bomb + _session(pkg, "alias-bomb").read_text())
    _edit(pkg, "wrong-types", lambda d: d[files][0].update(exit_code="zero", tool_calls="Bash"))
    huge = _session(pkg, "huge-output")
    huge.write_text(huge.read_text().replace(
        "output: Finished the task for huge-output.", "output: " + "A" * (50 * 1024 * 1024)))
    _edit(pkg, "empty-attempts", lambda d: d.update(attempts=[]))
    _edit(pkg, "forged-fingerprint", lambda d: d["fingerprint"].update(digest="0" * 32))
    _edit(pkg, "injected-commands",
          lambda d: d[files][0].update(is_error=True, error=HOSTILE_TEXT, output=HOSTILE_TEXT))


def test_ten_hostile_cassettes_next_to_a_good_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    pkg = _package(tmp_path / "repo" / "pkg", ["good-case", *HOSTILE], monkeypatch)
    init(tmp_path / "repo")
    _make_hostile(pkg, outside)
    report = tmp_path / "report.json"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = aam_eval("run", "--package", str(pkg), "--replay", "--keep-workspaces",
                      "-o", str(report))
    cases = _cases(report)
    assert result.code == 1
    assert cases["good-case"]["verdict"] == "PASS"
    errors = {n: cases[n]["error"] for n in HOSTILE}
    assert all(cases[n]["verdict"] == "ERROR" for n in HOSTILE), errors
    assert not any("internal error" in e for e in errors.values()), errors
    expected = {
        "path-traversal": "attempts.0.files.0.path: '../",
        "absolute-path": "is absolute; a recorded file must be inside the workspace",
        "symlinked-cassette": "is a symlink that points outside",
        "python-tag": "'tag:yaml.org,2002:python/object/apply:os.system' is refused",
        "alias-bomb": "anchors and aliases are refused",
        "wrong-types": "attempts.0.exit_code",
        "huge-output": "MB is over the 16 MiB cassette limit",
        "empty-attempts": "attempts: List should have at least 1 item",
        "forged-fingerprint": "fingerprint.digest does not match fingerprint.inputs",
        "injected-commands": "::add-mask::x",
    }
    for name, text in expected.items():
        assert text in errors[name], (name, errors[name])
        if name != "injected-commands":  # the file is named, and the fix
            assert f"{name}/claude-code." in errors[name] and "re-record" in errors[name], errors[name]
    assert re.search(r"path-traversal/claude-code\.session\.yaml:\d+: damaged cassette", errors["path-traversal"])
    assert sorted(p.name for p in outside.iterdir()) == ["elsewhere.yaml"]  # nothing written, nothing run
    # In the log, no hostile line can be read as a workflow command.
    assert _runner_commands(result.out + result.err) == []
    # In the comment, every hostile text is escaped.
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.render.comment import render_comment
    from aam_eval_action.report import load_report

    body = render_comment(diff_reports(None, load_report(report)))
    assert "\n::" not in body and "](" not in body


# --- 1: python tags in judge cassettes, before vcrpy sees the file ---


@pytest.mark.parametrize("mode", ["replay", "auto"])
def test_python_tag_in_a_judge_cassette_is_refused_and_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    pkg = _package(tmp_path / "pkg", ["tagged"], monkeypatch)
    judge = pkg / "evals/cassettes/tagged/claude-code.judge.yaml"
    canary = tmp_path / "pwned"
    data = yaml.safe_load(judge.read_text())
    text = yaml.safe_dump(data).replace(
        "interactions:", f"interactions: !!python/object/apply:os.system ['touch {canary}']", 1)
    judge.write_text(text)
    result = aam_eval("run", "--package", str(pkg), "--mode", mode, "-o", str(tmp_path / "r.json"))
    error = _cases(tmp_path / "r.json")["tagged"]["error"]
    assert result.code == 1 and not canary.exists()
    assert f"{judge}:1: damaged judge cassette (YAML tag" in error
    assert "python/object/apply:os.system' is refused" in error and "re-record" in error


# --- 2: paths from a pull request ---


def test_restore_never_writes_through_a_symlink_out_of_the_workspace(tmp_path: Path) -> None:
    from aam_eval_action.pipeline.workspace import OutsideWorkspace, restore
    from aam_eval_action.session import FileChange

    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(OutsideWorkspace, match=r"'link/x\.txt' resolves outside the workspace"):
        restore(root, [FileChange(path="link/x.txt", status="created", text="pwned", size=5)])
    with pytest.raises(OutsideWorkspace):
        restore(root, [FileChange(path="link/gone.txt", status="deleted")])
    assert list(outside.iterdir()) == []


def test_a_cassette_below_a_symlinked_folder_is_read_only_when_the_folder_stays_inside(tmp_path: Path) -> None:
    from aam_eval_action.replay.untrusted import UntrustedFileError, read_text

    root, outside = tmp_path / "cassettes", tmp_path / "outside"
    (root / "case").mkdir(parents=True)
    outside.mkdir()
    for folder in (root / "case", outside):
        (folder / "claude-code.session.yaml").write_text("ok: 1\n")
    (root / "out").symlink_to(outside)
    (root / "in").symlink_to(root / "case")
    # Read twice: the second time the folders already looked at are taken from what was seen.
    for _ in range(2):
        assert read_text(root / "case/claude-code.session.yaml", inside=root) == "ok: 1\n"
        assert read_text(root / "in/claude-code.session.yaml", inside=root) == "ok: 1\n"
        with pytest.raises(UntrustedFileError, match="symlink that points outside"):
            read_text(root / "out/claude-code.session.yaml", inside=root)
        with pytest.raises(UntrustedFileError, match="symlink that points outside"):
            read_text(root / "case/../out/claude-code.session.yaml", inside=root)


@pytest.mark.parametrize("value", ["../../x", "/etc/x", "a/../../b"])
def test_recorded_paths_are_validated_at_load(value: str) -> None:
    from pydantic import ValidationError

    from aam_eval_action.session import FileChange

    with pytest.raises(ValidationError, match="workspace"):
        FileChange(path=value, status="created")


def test_eval_config_cassettes_must_stay_in_the_repository(tmp_path: Path) -> None:
    from aam_eval_action.loader import load_package

    repo = tmp_path / "repo"
    init(repo)
    pkg = write_package(repo / "examples" / "pkg", [simple_case("a")],
                        config={"cassettes": "../../../cassettes"})
    assert load_package(pkg).config.cassettes == "../../../cassettes"  # the shipped layout
    for bad, why in (("/tmp/elsewhere", "is absolute"), ("../../../../outside", "resolves outside the repository")):
        write_package(pkg, [simple_case("a")], config={"cassettes": bad})
        with pytest.raises(ConfigError, match=rf"evals/eval-config.json:\d+: cassettes: .*{why}"):
            load_package(pkg)


def test_a_package_symlink_out_of_the_package_is_refused_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("the runner's private data")
    pkg = _package(tmp_path / "pkg", ["linked"], monkeypatch)
    (pkg / "scripts").mkdir()
    (pkg / "scripts" / "helper.sh").symlink_to(secret)
    aam_eval("run", "--package", str(pkg), "--replay", "-o", str(tmp_path / "r.json"))
    error = _cases(tmp_path / "r.json")["linked"]["error"]
    assert "scripts/helper.sh: is a symlink to" in error and "outside the package" in error

    from aam_eval_action.engines.install import copy_package
    from aam_eval_action.layouts.detect import read_package
    from aam_eval_action.package import PackageLinkError

    with pytest.raises(PackageLinkError):
        copy_package(read_package(pkg), None, tmp_path / "ws")
    assert not (tmp_path / "ws/.aam/package/scripts/helper.sh").exists()


# --- 3: the comment ---

EVIL = "@octocat <img src=x> [click](https://evil.example) see #123 and www.evil.example"


def _evil_diff() -> Any:
    from aam_eval_action.diff import diff_reports

    from support.reports import case, report

    base = report([case("a"), case("b")])
    head = report([case("a", "FAIL", reason=EVIL, error=EVIL), case("b")])
    return diff_reports(base, head)


def test_no_template_filter_brings_raw_text_back(tmp_path: Path) -> None:
    from aam_eval_action.render.comment import render_comment

    template = tmp_path / "t.md.j2"
    template.write_text(
        "{% for c in diff.cases %}{{ c }}\n{{ c.judge_reason }}\n{{ c.judge_reason|e }}\n"
        "{{ c.judge_reason|tojson }}\n{{ c.judge_reason|safe }}\n{{ c.error|string|safe }}\n"
        "{{ c.judge_reason|lower|safe }}\n{% endfor %}"
        "{% for c in sections.regressed %}{{ c.judge_reason|safe }}{{ c|safe }}{% endfor %}\n"
        "{{ diff }}{{ diff.cases|safe }}{{ diff.cases[0]|tojson if false }}\n"
        "{% for c in sections.regressed %}{{ c.judge_reason|replace('\u200b', '')|safe }}"
        "{{ c.judge_reason|replace('&lt;', '<')|e }}{{ c.judge_reason|replace('\u200b', '')|tojson }}"
        "{{ c.judge_reason|replace('\u200b', '')|forceescape }}{{ c.judge_reason|urlize }}{% endfor %}\n"
    )
    body = render_comment(_evil_diff(), template=template)
    for raw in ("@octocat", "<img", "](https", "#123", "www.evil", "https://"):
        assert raw not in body, raw
    assert "@\u200boctocat" in body and "#\u200b123" in body
    # The models' own methods, which would hand back raw text, are not reachable.
    for call in ("diff.model_dump()", "diff.cases[0].model_dump_json()", "diff._model|safe",
                 "diff.cases[0].judge_reason._raw|safe", "diff.cases[0].judge_reason.unescape()|safe"):
        template.write_text(f"{{{{ {call} }}}}")
        try:
            out = render_comment(_evil_diff(), template=template)
        except ConfigError as refused:
            out = str(refused)
        assert "@octocat" not in out and "<img" not in out, call


def test_only_our_own_comment_is_adopted() -> None:
    from aam_eval_action.github.comments import post_comment

    with GitHubServer(tokens={"rw": "write"}) as gh:
        gh.add_pr(OWNER, REPO, PR)
        [planted] = gh.seed_comments(OWNER, REPO, PR, 1, author="mallory",
                                     body=f"{MARKER}\nplease approve")
        result = post_comment(api_url=gh.url, token="rw", repository=f"{OWNER}/{REPO}",
                              pr_number=PR, body=f"{MARKER}\nreport", marker=MARKER)
        again = post_comment(api_url=gh.url, token="rw", repository=f"{OWNER}/{REPO}",
                             pr_number=PR, body=f"{MARKER}\nreport 2", marker=MARKER)
        comments = gh.comments(OWNER, REPO, PR)
    assert result.created and not again.created and result.url == again.url
    assert [c["body"] for c in comments if c["id"] == planted] == [f"{MARKER}\nplease approve"]
    assert [c["user"]["login"] for c in comments] == ["mallory", "github-actions[bot]"]


# --- 4: workflow commands in the log ---


def test_untrusted_text_cannot_form_workflow_commands_in_the_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    init(repo)
    pkg = _package(repo / "pkg", ["loud"], monkeypatch)
    _edit(pkg, "loud", lambda d: d["attempts"][0].update(is_error=True, error=HOSTILE_TEXT))
    commit_all(repo, "base")
    env = {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "workflow_dispatch",
        "GITHUB_WORKSPACE": str(repo), "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
        "INPUT_PACKAGE-PATH": "pkg", "INPUT_REPORT-PATH": "r.json", "INPUT_FAIL-ON": "never",
    }
    assert action_main(env) == 0
    log = capsys.readouterr()
    assert "::error::pwned" in (log.out + log.err).replace("\u200b", "")  # printed, but inert
    commands = _runner_commands(log.out + log.err)
    assert len(commands) == 1 and commands[0].startswith("::stop-commands::")


def test_console_escapes_command_lines_under_github_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = _package(tmp_path / "pkg", ["loud"], monkeypatch)
    _edit(pkg, "loud", lambda d: d["attempts"][0].update(is_error=True, error=HOSTILE_TEXT))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    ci = aam_eval("run", "--package", str(pkg), "--replay")
    assert _runner_commands(ci.out + ci.err) == []
    monkeypatch.delenv("GITHUB_ACTIONS")
    local = aam_eval("run", "--package", str(pkg), "--replay")
    assert "::error::pwned" in _runner_commands(local.out)  # outside CI, printed as it is


# --- 5: API keys ---


def _pr_event(tmp_path: Path, repo: Path, *, fork: bool = False, name: str = "pull_request") -> dict[str, str]:
    head_repo = "mallory/evals" if fork else f"{OWNER}/{REPO}"
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": PR, "pull_request": {
        "number": PR,
        "base": {"ref": "main", "sha": git(repo, "rev-parse", "HEAD"), "repo": {"full_name": f"{OWNER}/{REPO}"}},
        "head": {"ref": "pr", "sha": git(repo, "rev-parse", "HEAD"), "repo": {"full_name": head_repo}},
    }}))
    return {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": f"{OWNER}/{REPO}", "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(tmp_path / "out.txt"), "INPUT_PACKAGE-PATH": "pkg",
        "INPUT_REPORT-PATH": "r.json", "INPUT_COMMENT": "false",
        "INPUT_ANTHROPIC-API-KEY": "sk-ant-live-key-0123456789abcdef", "PATH": os.environ["PATH"],
    }


def test_a_pr_cannot_point_the_key_at_its_own_server(
    tmp_path: Path, tripwire: tuple[str, list[bytes]], capsys: pytest.CaptureFixture[str],
) -> None:
    url, hits = tripwire
    repo = tmp_path / "repo"
    init(repo)
    write_package(repo / "pkg", [simple_case("steal")],
                  config={"env": {"ANTHROPIC_BASE_URL": url}})
    commit_all(repo, "pr")
    env = {**_pr_event(tmp_path, repo), "INPUT_MODE": "live"}
    with pytest.raises(ConfigError, match=r"evals/eval-config.json:\d+: env.ANTHROPIC_BASE_URL: .*in CI"):
        action_main(env)
    assert hits == []
    assert "::error::evals/eval-config.json" in capsys.readouterr().out


@pytest.mark.parametrize(("fork", "event"), [(True, "pull_request"), (False, "pull_request_target")])
def test_live_modes_refuse_untrusted_pull_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork: bool, event: str
) -> None:
    repo = tmp_path / "repo"
    init(repo)
    _package(repo / "pkg", ["a"], monkeypatch)
    commit_all(repo, "pr")
    env = {**_pr_event(tmp_path, repo, fork=fork, name=event), "INPUT_MODE": "auto"}
    with pytest.raises(UsageError, match=r"mode auto is refused: this (pull request comes from a fork|is a pull_request_target run)"):
        action_main(env)
    assert action_main({**env, "INPUT_ALLOW-LIVE-ON-PR": "true"}) == 0  # explicitly allowed
    assert action_main({**env, "INPUT_MODE": "replay"}) == 0  # replay is always fine


def test_runner_tokens_never_reach_the_agent(tmp_path: Path) -> None:
    from aam_eval_action.engines.base import AgentRun
    from aam_eval_action.engines.claude_code import ClaudeCode
    from aam_eval_action.engines.codex import Codex
    from aam_eval_action.loader import load_package
    from aam_eval_action.settings import Overrides, resolve
    from aam_eval_action.spec import Sandbox

    runner = {"GITHUB_ACTIONS": "true", "GITHUB_TOKEN": "ghs_runner", "INPUT_GITHUB-TOKEN": "ghs_input",
              "ACTIONS_RUNTIME_TOKEN": "rt", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "id", "PATH": "/bin"}
    pkg = write_package(tmp_path / "pkg", [simple_case("a")], config={"env": {"T": "${GITHUB_TOKEN}"}})
    with pytest.raises(ConfigError, match=r"env.T: takes \$\{GITHUB_TOKEN\} from the runner"):
        resolve(load_package(pkg), Overrides(mode="replay"), runner)
    pkg = write_package(tmp_path / "pkg", [simple_case("a")], config={"env": {"X": "1"}})
    settings = resolve(load_package(pkg), Overrides(), runner)
    run = AgentRun(prompt="p", model="m", workspace=tmp_path, home=tmp_path, env=settings.agent_env,
                   timeout=1, sandbox=Sandbox(), runner_env=settings.runner_env)
    for env in (ClaudeCode().env(run), Codex().env(run)):
        assert not {"ghs_runner", "ghs_input", "rt", "id"} & set(env.values())


def test_outside_ci_eval_config_may_still_name_a_gateway(tmp_path: Path) -> None:
    from aam_eval_action.loader import load_package
    from aam_eval_action.settings import Overrides, resolve

    pkg = write_package(tmp_path / "pkg", [simple_case("a")],
                        config={"env": {"ANTHROPIC_BASE_URL": "http://gateway.local"}})
    settings = resolve(load_package(pkg), Overrides(mode="live"), {})
    assert settings.base_url("anthropic") == "http://gateway.local"


# --- 6: cassettes changed by the pull request ---


def test_comment_lists_cases_the_pr_re_recorded_with_their_provenance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    init(repo)
    pkg = _package(repo / "pkg", ["kept", "forged", "ci-recorded"], monkeypatch)
    base = commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    # A hand-edited cassette that still replays (here its cost): listed, so a reviewer looks.
    _edit(pkg, "forged", lambda d: d["attempts"][0].update(cost_usd=0.0, session_id="forged"))
    _edit(pkg, "ci-recorded", lambda d: d.update(provenance="https://github.com/acme/evals/actions/runs/99"))
    commit_all(repo, "pr")
    with GitHubServer(tokens={"rw": "write"}) as gh:
        gh.add_pr(OWNER, REPO, PR)
        env = {**_pr_event(tmp_path, repo), "INPUT_GITHUB-TOKEN": "rw", "GITHUB_API_URL": gh.url,
               "INPUT_COMMENT": "true", "INPUT_BASE-REF": base}
        assert action_main(env) == 0
        [comment] = gh.comments(OWNER, REPO, PR)
    body = comment["body"]
    assert "### Re-recorded in this PR (2)" in body
    assert "| forged | PASS | unknown (no provenance recorded) |" in body  # written by hand
    assert "| ci&#95;recorded" not in body and "[CI run](https://github.com/acme/evals/actions/runs/99)" in body
    assert "| kept |" not in body.split("Re-recorded in this PR")[1]
    cases = _cases(repo / "r.json")
    assert cases["forged"]["cassette_changed"] is True and "cassette_changed" not in cases["kept"]


def test_recordings_carry_their_provenance(tmp_path: Path) -> None:
    from aam_eval_action.loader import load_package
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.pipeline.live import save_sessions
    from aam_eval_action.replay import agent_cassette
    from aam_eval_action.replay.fingerprint import Fingerprint
    from aam_eval_action.session import Session
    from aam_eval_action.settings import Overrides, resolve

    pkg = write_package(tmp_path / "pkg", [simple_case("a")])
    ci = {"GITHUB_ACTIONS": "true", "GITHUB_SERVER_URL": "https://ghe.example",
          "GITHUB_REPOSITORY": "acme/evals", "GITHUB_RUN_ID": "123"}
    for environ, expected in ((ci, "https://ghe.example/acme/evals/actions/runs/123"), ({}, "recorded locally")):
        ctx = CaseContext.for_run(resolve(load_package(pkg), Overrides(), environ))
        save_sessions(ctx, f"a{len(environ)}", Fingerprint.of({"x": "1"}),
                      [Session(engine="claude-code", model_provider="anthropic")], [])
        saved = agent_cassette.load(agent_cassette.session_path(ctx.settings.cassettes, f"a{len(environ)}", "claude-code"))
        assert saved is not None and saved.provenance == expected


# --- 8: smaller holes ---


def test_short_explicit_secrets_and_known_key_shapes_are_redacted() -> None:
    from aam_eval_action.redact import Redactor

    r = Redactor.from_environment({"PIN": "4711", "ANTHROPIC_API_KEY": "k"}, environ={})
    assert r.text("pin 4711, key k, task") == "pin [REDACTED:PIN], key [REDACTED:ANTHROPIC_API_KEY], task"
    bare = Redactor.from_environment({}, environ={})  # whatever this machine's environment holds
    leaked = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz ghp_" + "a" * 36 + " sk-proj-" + "b" * 30
    assert bare.text(leaked) == "[REDACTED:ANTHROPIC_KEY] [REDACTED:GITHUB_TOKEN] [REDACTED:OPENAI_KEY]"
    # A word that merely holds `sk-` is no key: case names of public trigger sets keep their names.
    names = "ask-clarifying-questions-fires-22dff6fb task-completion-quiet-0123456789ab (sk-" + "c" * 24 + ")"
    assert bare.text(names) == ("ask-clarifying-questions-fires-22dff6fb task-completion-quiet-0123456789ab "
                                "([REDACTED:OPENAI_KEY])")


def test_non_json_judge_bodies_are_redacted_before_they_are_written() -> None:
    from aam_eval_action.replay.judge_cassette import _readable_body, _scrub_response

    def redact(text: str) -> str:
        return text.replace("SECRETVALUE", "[REDACTED:X]")

    assert _readable_body(b"token=SECRETVALUE&x=1", redact) == b"token=[REDACTED:X]&x=1"
    response = {"headers": {}, "body": {"string": b"<html>SECRETVALUE</html>"}}
    assert _scrub_response(response, redact)["body"]["string"] == "<html>[REDACTED:X]</html>"


def test_tracebacks_are_redacted() -> None:
    from aam_eval_action.error_handler import error_handler

    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()), error_handler() as status:
        raise RuntimeError("boom with sk-ant-api03-abcdefghijklmnopqrstuvwxyz")
    assert status.code == 3
    assert "Traceback" in err.getvalue() and "sk-ant-api03" not in err.getvalue()


def test_base_worktree_runs_no_hooks(tmp_path: Path) -> None:
    from aam_eval_action.github.base_checkout import BaseCheckout

    repo = tmp_path / "repo"
    init(repo)
    (repo / "f").write_text("x")
    commit = commit_all(repo, "base")
    hook = repo / ".git/hooks/post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/hook-ran\n")
    hook.chmod(0o755)
    git(repo, "checkout", "-q", "-b", "probe")  # the hook works in this repository
    assert (tmp_path / "hook-ran").exists()
    (tmp_path / "hook-ran").unlink()
    with BaseCheckout(repo, commit) as tree:
        assert (tree / "f").read_text() == "x"
    assert not (tmp_path / "hook-ran").exists()


def test_more_repeats_than_recorded_is_an_explained_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = _package(tmp_path / "pkg", ["once"], monkeypatch)
    aam_eval("run", "--package", str(pkg), "--replay", "--repeat", "3", "-o", str(tmp_path / "r.json"))
    case = _cases(tmp_path / "r.json")["once"]
    assert case["verdict"] == "ERROR" and case["replay_miss"] == "stale"
    assert "1 attempt(s) recorded, 3 wanted" in case["error"] and "--record" in case["error"]
    assert case["error"].endswith("--repeat 3")


@pytest.mark.parametrize(("raw", "percent"), [("0.5%", 0.5), ("0.5", 50.0), ("80", 80.0), ("80%", 80.0), ("1%", 1.0)])
def test_min_pass_rate_percent_sign_always_means_percent(raw: str, percent: float) -> None:
    from aam_eval_action.github.inputs import ActionInputs

    assert ActionInputs.from_env({"INPUT_MIN-PASS-RATE": raw}).min_pass_rate == percent


def test_no_session_starts_after_an_interrupt_killed_the_others(tmp_path: Path) -> None:
    from aam_eval_action.engines import process

    marker = tmp_path / "started"
    process.kill_all()
    try:
        with pytest.raises(AamEvalError, match="interrupted: no new agent session"):
            process.run_process(["sh", "-c", f"touch {marker}"], cwd=tmp_path, env={}, timeout=5)
        assert not marker.exists()
    finally:
        process.allow_spawning()
    process.run_process(["sh", "-c", f"touch {marker}"], cwd=tmp_path, env={}, timeout=5)
    assert marker.exists()


# --- 9: the network ---


@pytest.mark.cli
@pytest.mark.parametrize("engine", ["claude-code", "codex"])
def test_network_off_is_enforced_or_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tripwire: tuple[str, list[bytes]], engine: str
) -> None:
    from aam_eval_action.engines.base import get_engine
    from aam_eval_action.sandbox.plan import probe as landlock_probe

    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)
    url, hits = tripwire
    port = url.rsplit(":", 1)[1]
    probe = tmp_path / "probe.py"
    probe.write_text("import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)\n"
                     "    print('CONNECTED')\nexcept OSError as e:\n    print('BLOCKED', e)\n")
    pkg = write_package(tmp_path / "pkg", [simple_case("net-probe")],
                        config={"engine": engine, "sandbox": {"network": False}})
    scenarios = [{"match": "task for net-probe.", "agent": [{"bash": f"python3 {probe} {port}"}, {"text": "done"}],
                  "judge": {"result": "PASS", "reason": "ok"}}]
    with ModelServer(scenarios) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        result = aam_eval("run", "--package", str(pkg), "--mode", "live", "-o", str(tmp_path / "r.json"))
    sandbox = json.loads((tmp_path / "r.json").read_text())["config"]["sandbox"]
    assert sandbox["network"] is False
    if hits:  # the command reached the listener: the report and the log must say so
        assert sandbox["network_enforced"] is False
        assert "network_enforced false" in result.err
    else:
        assert sandbox["network_enforced"] is True
        assert "network_enforced false" not in result.err
    # Claude Code's Bash keeps the network unless our sandbox cuts it off (Landlock ABI 4, Linux 6.7).
    landlock_net = landlock_probe()[0] >= 4
    assert engine != "claude-code" or bool(hits) != landlock_net, "the sandbox's network rule did not hold"
    assert engine != "codex" or not hits, "Codex's sandbox is expected to block it"



def test_thousands_of_re_recorded_cases_still_fit_the_comment() -> None:
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.github.comments import MAX_COMMENT_CHARS
    from aam_eval_action.render.comment import RERECORDED_ROWS_KEPT, render_comment

    from support.reports import case, report

    cases = [case(f"case-{i:04d}") for i in range(3000)]
    for c in cases:
        c.cassette_changed, c.cassette_provenance = True, "recorded locally"
    body = render_comment(diff_reports(report([case(f"case-{i:04d}") for i in range(3000)]), report(cases)))
    assert len(body) <= MAX_COMMENT_CHARS
    assert "### Re-recorded in this PR (3000)" in body
    assert body.count("| recorded locally |") == RERECORDED_ROWS_KEPT
    assert f"*{3000 - RERECORDED_ROWS_KEPT} more not listed here" in body


@pytest.mark.parametrize(("event", "pr", "why"), [
    ("pull_request", {"base": {"repo": {"full_name": "a/b"}}, "head": {"repo": {"full_name": "a/b"}}}, None),
    ("pull_request", {"base": {"repo": {"full_name": "a/b"}}, "head": {"repo": {"full_name": "m/b"}}}, "fork (m/b)"),
    ("pull_request", {"base": {"repo": {"full_name": "a/b"}}, "head": {"repo": None}}, "deleted fork"),
    ("pull_request_target", {"base": {"repo": {"full_name": "a/b"}}, "head": {"repo": {"full_name": "a/b"}}}, "pull_request_target"),
    ("push", None, None),
])
def test_which_events_count_as_untrusted_pull_requests(
    tmp_path: Path, event: str, pr: dict[str, Any] | None, why: str | None
) -> None:
    from aam_eval_action.github.inputs import GitHubContext

    path = tmp_path / "event.json"
    path.write_text(json.dumps({"pull_request": pr} if pr else {}))
    gh = GitHubContext.from_env({"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(path)})
    assert (gh.untrusted_pr is None) if why is None else (why in (gh.untrusted_pr or ""))


def test_re_execute_replay_is_off_on_pull_request_target(tmp_path: Path) -> None:
    from aam_eval_action.commands.action import snapshot_only_on_pull_request_target
    from aam_eval_action.github.inputs import ActionInputs, GitHubContext

    target = GitHubContext.from_env({"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_WORKSPACE": str(tmp_path)})
    plain = GitHubContext.from_env({"GITHUB_EVENT_NAME": "pull_request", "GITHUB_WORKSPACE": str(tmp_path)})
    auto = ActionInputs.from_env({"INPUT_RERUN": "auto"})
    # The PR's hooks and scripts would run next to the job's secrets: snapshots only.
    assert snapshot_only_on_pull_request_target(auto, target).rerun == "never"
    assert snapshot_only_on_pull_request_target(ActionInputs.from_env({}), target).rerun == "never"
    with pytest.raises(UsageError, match="rerun: always is refused on pull_request_target"):
        snapshot_only_on_pull_request_target(ActionInputs.from_env({"INPUT_RERUN": "always"}), target)
    trusted = ActionInputs.from_env({"INPUT_RERUN": "auto", "INPUT_ALLOW-LIVE-ON-PR": "true"})
    assert snapshot_only_on_pull_request_target(trusted, target).rerun == "auto"
    assert snapshot_only_on_pull_request_target(auto, plain).rerun == "auto"  # forks: no secrets there
