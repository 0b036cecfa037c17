"""`aam-eval sensitivity`'s parts without an agent: the mutants a package has, each a copy with
one change named by what it changed; the matrix from the reports of the arms and mutants; the
page and the summary, with the repository's text kept inert."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aam_eval_action.errors import UsageError
from aam_eval_action.loader import load_package
from aam_eval_action.render.sensitivity import markdown
from aam_eval_action.render.sensitivity_html import render_html
from aam_eval_action.report_model import CaseResult, JudgeVerdict, Report, RunConfig, Summary
from aam_eval_action.sensitivity import matrix
from aam_eval_action.sensitivity.mutants import apply, blank_description, make, mutants_of, sections, select
from aam_eval_action.sensitivity_model import Sensitivity

from conftest import ROOT, aam_eval
from support.browser import report_page, texts

FIXTURE = ROOT / "tests/fixtures/sensitivity/release-notes"
SKILL = """---
name: house
description: >
  Writes things
  in the house style.
license: MIT
---

# House style

Intro.

## Rules

Rule one.

```md
## Not a heading
```

### A sub-part

More.

## History <script>alert(1)</script>

Adopted in 2019.
"""


def test_a_skill_has_its_mutants_each_named_by_what_it_changed(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "skills/house/scripts").mkdir(parents=True)
    (pkg / "skills/house/SKILL.md").write_text(SKILL)
    (pkg / "skills/house/scripts/run.py").write_text("print('ok')\n")
    (pkg / "skills/house/notes.md").write_text("Notes.\n")
    (pkg / "hooks").mkdir()
    (pkg / "hooks/hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [], "Stop": []}}))
    (pkg / "package.agent.json").write_text('{"name": "house", "version": "1.0.0"}')
    (pkg / "evals").mkdir()
    (pkg / "evals/eval-config.json").write_text('{"version": 1, "engine": "claude-code"}')
    found = mutants_of(load_package(pkg).layout)
    assert [m.id for m in found] == [
        "house/body", "house/description", "house/broadened", "house/section/rules",
        "house/section/history-script-alert-1-script", "house/file-removed/notes-md",
        "house/file-removed/scripts-run-py", "house/script-fails/scripts-run-py", "hooks/pretooluse", "hooks/stop"]
    assert [m.direction for m in found].count("over-claims") == 1  # one skill: no sibling to borrow from
    found.pop(2)
    assert found[3].what == 'house: section "History <script>alert(1)</script>" deleted' and found[3].line == 25
    # The title above every section is not one; a heading in a code fence is no heading; a
    # section runs to the next heading of its level.
    assert [(h, a, b) for h, a, b in sections(SKILL)] == [("Rules", 13, 25), ("History <script>alert(1)</script>", 25, 28)]
    copy = make(found[2], pkg, tmp_path / "copy")
    text = (copy / "skills/house/SKILL.md").read_text()
    assert "Rule one" not in text and "A sub-part" not in text and "Adopted in 2019" in text and "Intro." in text
    assert (pkg / "skills/house/SKILL.md").read_text() == SKILL  # the package itself is never changed
    assert blank_description(SKILL).splitlines()[1:4] == ['name: house', 'description: ""', "license: MIT"]
    body = tmp_path / "body"
    make(found[0], pkg, body)
    assert (body / "skills/house/SKILL.md").read_text() == SKILL.split("\n# House style")[0]  # the frontmatter
    failing = make(found[6], pkg, tmp_path / "failing")
    assert (failing / "skills/house/scripts/run.py").read_text() == "import sys\nsys.exit(1)\n"
    removed = make(found[5], pkg, tmp_path / "removed")
    assert not (removed / "skills/house/scripts/run.py").exists()
    apply(found[7], removed)
    assert json.loads((removed / "hooks/hooks.json").read_text()) == {"hooks": {"Stop": []}}
    assert [m.id for m in select(found, "section,hooks/stop")] == [
        "house/section/rules", "house/section/history-script-alert-1-script", "hooks/stop"]
    with pytest.raises(UsageError, match="'sections' selects no mutant; kinds are body, description, broadened"):
        select(found, "sections")


THREE_SKILLS = {
    "release-notes": "description: >\n  Writes the release notes\n  of a version.\n",
    "changelog": "description: Adds an entry to the changelog of a version.\n",
    "commit-message": 'description: "Writes: a commit message."\n',
}


def test_a_skill_is_made_to_over_claim_broadened_or_given_its_nearest_siblings_wording(tmp_path: Path) -> None:
    """The mutants of the other direction: a skill's description broadened to every request,
    and given the wording of the sibling whose description shares the most words with its own
    (appended: it keeps its own claim). Each copy's frontmatter still reads, as its CLI reads it."""
    from aam_eval_action.layouts.common import frontmatter
    from aam_eval_action.sensitivity.mutants import BROADENED

    pkg = tmp_path / "pkg"
    for name, description in THREE_SKILLS.items():
        (pkg / "skills" / name).mkdir(parents=True)
        (pkg / "skills" / name / "SKILL.md").write_text(f"---\nname: {name}\n{description}---\n\n# {name}\n\nDo it.\n")
    (pkg / "package.agent.json").write_text('{"name": "writers", "version": "1.0.0"}')
    (pkg / "evals").mkdir()
    (pkg / "evals/eval-config.json").write_text('{"version": 1, "engine": "claude-code"}')
    found = select(mutants_of(load_package(pkg).layout), "over-claims")
    assert [(m.id, m.kind, m.direction, m.line) for m in found] == [
        ("changelog/broadened", "broadened", "over-claims", 3),
        ("changelog/sibling/release-notes", "sibling", "over-claims", 3),  # "version" is shared; ties go by name
        ("commit-message/broadened", "broadened", "over-claims", 3),
        ("commit-message/sibling/release-notes", "sibling", "over-claims", 3),  # "writes"
        ("release-notes/broadened", "broadened", "over-claims", 3),
        ("release-notes/sibling/changelog", "sibling", "over-claims", 3)]
    assert found[5].what == "release-notes: description given changelog's wording"
    described = {}
    for m in found:
        copy = make(m, pkg, tmp_path / m.id)
        front, body = frontmatter(copy, m.file)
        described[m.id] = front["description"]
        assert (copy / m.file).read_text().splitlines()[body - 1:] == ["", f"# {m.skill}", "", "Do it."]
    assert described["release-notes/broadened"] == f"Writes the release notes of a version. {BROADENED}"
    assert described["release-notes/sibling/changelog"] == (
        "Writes the release notes of a version. Adds an entry to the changelog of a version.")
    assert described["commit-message/broadened"] == f"Writes: a commit message. {BROADENED}"
    assert [m.direction for m in select(mutants_of(load_package(pkg).layout), "removes")] == ["removes"] * 6


def test_sensitivity_lists_the_mutants_before_it_spends_anything() -> None:
    listed = aam_eval("sensitivity", "--package", str(FIXTURE), "--list", "--mutants", "release-notes/*")
    assert listed.code == 0, listed.err
    assert listed.out.splitlines()[2:5] == [
        "release-notes/broadened  release-notes: description broadened to every request  "
        "(skills/release-notes/SKILL.md:3)",
        "release-notes/sibling/changelog-style  release-notes: description given changelog-style's wording  "
        "(skills/release-notes/SKILL.md:3)",
        'release-notes/section/headline  release-notes: section "Headline" deleted  (skills/release-notes/SKILL.md:10)']
    assert "release-notes/script-fails/scripts-wrap-sh" in listed.out
    assert not [line for line in listed.out.splitlines() if line.startswith("changelog-style")]


def _case(name: str, verdict: str, checks: dict[str, str], **more: object) -> CaseResult:
    return CaseResult(name=name, verdict=verdict, deterministic_checks=checks,  # type: ignore[arg-type]
                      judge_verdict=JudgeVerdict(result="SKIP"), file=f"evals/cases/{name}.yaml", line=1,
                      **more)  # type: ignore[arg-type]


def _report(*cases: CaseResult) -> Report:
    return Report(version=1, id="r", timestamp="t", duration_seconds=0.0, config=RunConfig(engine="claude-code"),
                  summary=Summary(total=len(cases), passed=0, failed=0, pass_rate=0.0), cases=list(cases))


def test_the_matrix_says_what_killed_each_mutant_and_which_checks_are_weak() -> None:
    from aam_eval_action.sensitivity.mutants import Mutant

    with_arm = _report(
        _case("strong", "PASS", {"contains": "PASS", "regex": "PASS"}, baseline_verdict="FAIL",
              baseline_checks={"contains": "FAIL", "regex": "PASS"}),
        _case("weak", "PASS", {"contains": "PASS"}, baseline_verdict="PASS", baseline_checks={"contains": "PASS"}),
        _case("upside", "FAIL", {"not_contains": "FAIL"}, baseline_verdict="PASS",
              baseline_checks={"not_contains": "PASS"}))
    dates = Mutant("s/section/dates", "section", 's: section "Dates" deleted', "skills/s/SKILL.md", "s", "Dates", 9)
    history = Mutant("s/section/history", "section", 's: section "History" deleted', "skills/s/SKILL.md", "s")
    broken = Mutant("s/body", "body", "s: body emptied", "skills/s/SKILL.md", "s")
    broad = Mutant("s/broadened", "broadened", "s: description broadened to every request", "skills/s/SKILL.md",
                   "s", direction="over-claims")
    runs = [
        (dates, _report(_case("strong", "FAIL", {"contains": "FAIL", "regex": "PASS"}),
                        _case("weak", "PASS", {"contains": "PASS"}), _case("upside", "FAIL", {"not_contains": "FAIL"})),
         None),
        (history, _report(_case("strong", "PASS", {"contains": "PASS", "regex": "PASS"}),
                          _case("weak", "PASS", {"contains": "PASS"})), None),
        (broken, _report(_case("strong", "ERROR", {}, error="replay miss: no cassette"),
                         _case("weak", "ERROR", {}, error="replay miss: no cassette")), None),
        (broad, _report(_case("strong", "PASS", {"contains": "PASS", "regex": "PASS"}),
                        _case("weak", "PASS", {"contains": "PASS"})), None),
    ]
    rows, checks = matrix.build("pkg", "claude-code", with_arm, runs)
    assert [(r.id, r.status, [(k.case, k.check) for k in r.killed_by], r.kill_rate) for r in rows] == [
        ("s/section/dates", "killed", [("strong", "contains")], 0.5),
        ("s/section/history", "survived", [], 0.0),
        ("s/body", "not-measured", [], None),
        ("s/broadened", "survived", [], 0.0)]
    assert rows[2].note == "2 case(s) not measured: strong: replay miss: no cassette"
    by = {(c.case, c.check): c for c in checks}
    assert (by["strong", "contains"].discriminates, by["strong", "contains"].weak) == (True, False)
    assert by["strong", "contains"].flipped_by == ["s/section/dates"]
    assert (by["strong", "regex"].discriminates, by["strong", "regex"].weak) == (False, True)
    assert (by["weak", "contains"].weak, by["upside", "not_contains"].backwards) == (True, True)
    low, high = by["strong", "contains"].difference or (0, 0)
    assert low < 0 < high  # one run per arm: its interval cannot exclude no difference
    result = matrix.finish(Sensitivity(package="pkg", engines=["claude-code"], mutants=rows, checks=checks))
    assert result.uncovered == ["claude-code: s/section/history", "claude-code: s/broadened"]
    assert result.weak == ["claude-code: strong / regex", "claude-code: weak / contains"]


def test_a_guard_against_a_false_trigger_is_moved_by_an_over_claiming_mutant_never_called_weak() -> None:
    """The field note: a case that checks the skill does not fire on an unrelated request passes
    with and without the package and under every mutant that removes something, none of which
    could ever fail it. Measured by those alone it is "not weak yet", never weak; the skill's
    description broadened to every request kills it. The matrix says each mutant's direction."""
    from aam_eval_action.render.sensitivity import console_lines
    from aam_eval_action.sensitivity.mutants import Mutant

    def guard(fired: bool) -> CaseResult:
        return _case("unrelated-request", "FAIL" if fired else "PASS",
                     {"skill_triggered": "FAIL" if fired else "PASS", "not_contains": "PASS"},
                     baseline_verdict="PASS", baseline_checks={"skill_triggered": "PASS", "not_contains": "PASS"})

    notes = _case("notes", "PASS", {"contains": "PASS"}, baseline_verdict="FAIL", baseline_checks={"contains": "FAIL"})
    with_arm = _report(guard(False), notes)
    body = Mutant("s/body", "body", "s: body emptied", "skills/s/SKILL.md", "s")
    broad = Mutant("s/broadened", "broadened", "s: description broadened to every request", "skills/s/SKILL.md",
                   "s", line=3, direction="over-claims")
    removing = [(body, _report(guard(False), _case("notes", "FAIL", {"contains": "FAIL"})), None)]

    rows, checks = matrix.build("pkg", "claude-code", with_arm, removing)
    by = {(c.case, c.check): c for c in checks}
    assert [(c.weak, c.untried) for c in (by["unrelated-request", "skill_triggered"],
                                          by["unrelated-request", "not_contains"])] == [(False, ["over-claims"])] * 2
    result = matrix.finish(Sensitivity(package="pkg", engines=["claude-code"], mutants=rows, checks=checks))
    said = [text for text, _ in console_lines(result)]
    assert result.weak == [] and "1 of 1 measured mutant(s) killed; 0 uncovered; 0 weak check(s)" in said
    assert ("  unrelated-request / skill_triggered  with PASS  without PASS  (evals/cases/unrelated-request.yaml:1)  "
            "not weak yet: unmoved, but no over-claiming mutant was measured on its case (--mutants over-claims)") in said
    assert "| claude-code | unrelated-request / skill&#95;triggered (evals/cases/unrelated-request.yaml:1) | PASS " \
           "| PASS | 0 | not weak yet: no over-claiming mutant |" in markdown(result)
    assert "not weak yet: no over-claiming mutant measured" in render_html(result)

    both = [*removing, (broad, _report(guard(True), notes), None)]
    rows, checks = matrix.build("pkg", "claude-code", with_arm, both)
    assert [(r.id, r.direction, r.status, [(k.case, k.check) for k in r.killed_by]) for r in rows] == [
        ("s/body", "removes", "killed", [("notes", "contains")]),
        ("s/broadened", "over-claims", "killed", [("unrelated-request", "skill_triggered")])]
    by = {(c.case, c.check): c for c in checks}
    fired = by["unrelated-request", "skill_triggered"]
    assert (fired.discriminates, fired.flipped_by, fired.untried, fired.weak) == (False, ["s/broadened"], [], False)
    assert by["unrelated-request", "not_contains"].weak  # unmoved by a mutant of either direction: weak
    result = matrix.finish(Sensitivity(package="pkg", engines=["claude-code"], mutants=rows, checks=checks))
    said = [text for text, _ in console_lines(result)]
    assert "  killed       over-claims  s/broadened  kill rate 50%  by unrelated-request/skill_triggered" in said
    assert "  killed       removes      s/body  kill rate 50%  by notes/contains" in said
    assert ("  unrelated-request / skill_triggered  with PASS  without PASS  flipped by 1 (over-claims)  "
            "(evals/cases/unrelated-request.yaml:1)") in said
    assert ("  unrelated-request / not_contains  with PASS  without PASS  (evals/cases/unrelated-request.yaml:1)  "
            "WEAK: passes with and without the package, and under every mutant of both directions") in said
    shown = markdown(result)
    assert "| claude-code | s: description broadened to every request | over-claims | killed " \
           "| unrelated-request/skill&#95;triggered |" in shown
    assert "| 1 (over-claims) |  |" in shown and "| 0 | weak |" in shown
    assert "s/broadened (over-claims, killed)" in render_html(result)
    assert json.loads(result.model_dump_json())["mutants"][1]["direction"] == "over-claims"

    # A package with nothing to over-claim (no skill with a description) has mutants of one
    # direction: that one is all a check can be measured by.
    _, checks = matrix.build("pkg", "claude-code", with_arm, removing, directions={"removes"})
    assert all(c.weak for c in checks if c.case == "unrelated-request")


def test_the_page_and_the_summary_keep_the_repository_text_inert(tmp_path: Path) -> None:
    """A heading is the repository's text: on the page it is shown, never run; in the job
    summary it is no markup."""
    from aam_eval_action.sensitivity.mutants import Mutant

    hostile = 's: section "<img src=x onerror=alert(1)>" deleted'
    mutant = Mutant("s/section/img-src-x", "section", hostile, "skills/s/SKILL.md", "s")
    with_arm = _report(_case("strong", "PASS", {"contains": "PASS"}, baseline_verdict="FAIL",
                             baseline_checks={"contains": "FAIL"}, agent_output_snippet="<b>ok</b>"))
    under = _report(_case("strong", "FAIL", {"contains": "FAIL"}, agent_output_snippet="<i>no</i>"))
    rows, checks = matrix.build("pkg", "claude-code", with_arm, [(mutant, under, None)])
    result = Sensitivity(package="pkg", engines=["claude-code"], mutants=rows, checks=checks,
                                sessions=[*matrix.sessions_of("claude-code", "with", with_arm),
                                          *matrix.sessions_of("claude-code", "without", with_arm, without=True),
                                          *matrix.sessions_of("claude-code", mutant.id, under)])
    page = tmp_path / "s.html"
    page.write_text(render_html(matrix.finish(result)))
    assert "<img src=x" not in page.read_text() and "&lt;img src=x" in page.read_text()
    summary = markdown(result)
    assert "<img" not in summary and "&lt;img" in summary
    with report_page(page, ready=None) as shown:
        shown.click("td.killed summary")
        opened = texts(shown, "td.killed details div")[0]
        assert "with the package: PASS\n<b>ok</b>" in opened and "s/section/img-src-x: FAIL\n<i>no</i>" in opened
        assert shown.requests() == [page.as_uri()] and shown.problems() == []
        assert shown.js("document.images.length") == 0


def test_the_public_suites_have_mutants_of_their_guidance_never_of_their_evals(tmp_path: Path) -> None:
    """On the vendored public `claude plugin eval` repositories (tests/fixtures/cpe-corpus, as
    they are): each skill's sections, files and hooks are mutants; a suite kept inside a skill's
    folder is never one; a section mutant deletes exactly its lines."""
    from aam_eval_action.loader import load_repo

    corpus = ROOT / "tests/fixtures/cpe-corpus"
    counts = {}
    for repo in sorted(p for p in corpus.iterdir() if p.is_dir()):
        found = [m for package in load_repo(repo).packages for m in mutants_of(package.layout)]
        counts[repo.name] = len(found)
        assert not [m.file for m in found if "/evals/" in f"/{m.file}"], repo.name
    assert counts["homeassistant-ai__skills"] > 0 and counts["jaylordibe__claude-engineering-framework"] > 100
    assert sum(counts.values()) >= 350, counts
    video = load_repo(corpus / "sonilo-ai__skills").packages[0]
    errors = next(m for m in mutants_of(video.layout) if m.id == "video-to-sound/section/error-handling")
    copy = make(errors, corpus / "sonilo-ai__skills", tmp_path / "copy")
    before = (corpus / "sonilo-ai__skills" / errors.file).read_text().splitlines()
    after = (copy / errors.file).read_text().splitlines()
    start = next(i for i, line in enumerate(before) if line.startswith("## Error Handling"))
    end = next((i for i in range(start + 1, len(before)) if before[i].startswith(("# ", "## "))), len(before))
    assert after == before[:start] + before[end:]


def test_a_package_adds_mutants_of_its_own_checked_against_its_files(tmp_path: Path) -> None:
    import shutil

    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "pkg"))
    config = pkg / "evals/eval-config.json"
    settings = json.loads(config.read_text())
    own = [{"name": "no-acme", "file": "skills/release-notes/SKILL.md", "replace": '"Acme 2.0"', "with": '"it"'},
           {"name": "no-wrap", "file": "skills/release-notes/scripts/wrap.sh", "remove": True}]
    config.write_text(json.dumps({**settings, "mutants": own}, indent=2))
    listed = aam_eval("sensitivity", "--package", str(pkg), "--list", "--mutants", "own")
    assert listed.out.splitlines() == [
        "own/no-acme  no-acme: a text of skills/release-notes/SKILL.md replaced  (skills/release-notes/SKILL.md:12)",
        "own/no-wrap  no-wrap: skills/release-notes/scripts/wrap.sh removed  (skills/release-notes/scripts/wrap.sh)"]
    from aam_eval_action.sensitivity.mutants import own_mutants

    package = load_package(pkg)
    [changed, _] = own_mutants(pkg, package.config.mutants, package.config_location)
    copy = make(changed, pkg, tmp_path / "copy")
    assert 'as "it".' in (copy / "skills/release-notes/SKILL.md").read_text()
    assert changed.direction == "removes"
    claims = {"name": "claims-changelogs", "file": "skills/release-notes/SKILL.md", "replace": "draft release notes.",
              "with": "draft release notes or changelog entries.", "direction": "over-claims"}
    config.write_text(json.dumps({**settings, "mutants": [claims]}, indent=2))
    package = load_package(pkg)
    assert [(m.id, m.direction) for m in own_mutants(pkg, package.config.mutants, package.config_location)] == [
        ("own/claims-changelogs", "over-claims")]
    # A text that is not in the file, and a file outside the package: refused with where.
    config.write_text(json.dumps({**settings, "mutants": [{**own[0], "replace": "not there"}]}, indent=2))
    refused = aam_eval("sensitivity", "--package", str(pkg), "--list")
    assert refused.code == 2 and "evals/eval-config.json:" in refused.err
    assert "mutants[0].replace: the text is not in skills/release-notes/SKILL.md" in refused.err, refused.err
    config.write_text(json.dumps({**settings, "mutants": [{**own[1], "file": "../outside.sh"}]}, indent=2))
    assert "escapes its root" in aam_eval("sensitivity", "--package", str(pkg), "--list").err
    config.write_text(json.dumps({**settings, "mutants": [{"name": "both", "file": "x", "remove": True,
                                                            "replace": "y"}]}, indent=2))
    assert "give either `replace` (and `with`) or `remove: true`" in aam_eval(
        "sensitivity", "--package", str(pkg), "--list").err


def test_repeated_runs_give_each_check_an_interval() -> None:
    from aam_eval_action.report_model import Attempt

    def runs(verdict: str, n: int) -> list[Attempt]:
        return [Attempt(verdict=verdict, checks={"contains": verdict}) for _ in range(n)]  # type: ignore[arg-type]

    strong = _case("strong", "PASS", {"contains": "PASS"}, baseline_verdict="FAIL",
                   baseline_checks={"contains": "FAIL"}, attempts=runs("PASS", 8), baseline_attempts=runs("FAIL", 8))
    _, [row] = matrix.build("pkg", "claude-code", _report(strong), [])
    assert (row.passes_with, row.passes_without) == ((8, 8), (0, 8))
    low, high = row.difference or (0, 0)
    assert 0 < low < high == 1.0  # eight runs an arm: the difference excludes none


def test_a_mock_stand_in_answers_an_error_as_its_mutant(tmp_path: Path) -> None:
    """A `claude plugin eval` suite's mock of an MCP server tool (a fixed responder) is made to
    answer with a tool error, its `expect:` guard kept; the model-played `_server.md` is not."""
    from aam_eval_action.loader import load_repo
    from aam_eval_action.mocks.reading import load

    plugin = ROOT / "tests/fixtures/cpe-plugin"
    found = [m for m in mutants_of(load_repo(plugin).packages[0].layout) if m.kind == "mock-error"]
    assert [m.id for m in found] == ["mocks/tracker/create-issue", "mocks/calendar/book-room",
                                     "mocks/tracker/create-issue-2"]
    copy = make(found[0], plugin, tmp_path / "copy")
    served = load(copy, ["evals/mocks", "evals/issues/file-a-bug/mocks"]).servers["tracker"].tools["create_issue"]
    assert served.is_error and served.expect == {"title": "/crash/i", "labels": {"0": ["bug", "regression"]}}
    assert not load(plugin, ["evals/issues/file-a-bug/mocks"]).servers["tracker"].tools["create_issue"].is_error


def test_an_mcp_server_answers_every_tool_call_with_an_error_as_its_mutant(tmp_path: Path) -> None:
    """A server the package starts by a command (`mcp/servers.json`, a manifest's own entry) is
    relayed: it starts and lists its tools as it is, and every tool call is answered with a tool
    error. A server at a URL cannot be relayed and has no mutant."""
    import subprocess

    from aam_eval_action.layouts.detect import read_package

    pkg = Path(shutil.copytree(ROOT / "tests/fixtures/engine-mcp-pkg", tmp_path / "pkg"))
    servers = json.loads((pkg / "mcp/servers.json").read_text())
    servers["mcpServers"]["docs"] = {"url": "https://example.invalid/mcp"}
    (pkg / "mcp/servers.json").write_text(json.dumps(servers))
    [echo] = [m for m in mutants_of(read_package(pkg)) if m.kind == "mcp-error"]
    assert (echo.id, echo.what) == ("mcp/echo", "MCP server echo (mcp/servers.json) answers every tool call with an "
                                                "error")
    copy = make(echo, pkg, tmp_path / "copy")
    config = json.loads((copy / "mcp/servers.json").read_text())["mcpServers"]
    assert config["docs"] == {"url": "https://example.invalid/mcp"}
    relayed = config["echo"]
    assert relayed["command"] == "python3" and relayed["args"][2:] == ["python3", "${CLAUDE_PLUGIN_ROOT}/scripts/echo_mcp.py"]
    argv = [relayed["command"], *(a.replace("${CLAUDE_PLUGIN_ROOT}", str(copy)) for a in relayed["args"])]
    asked = [{"id": 1, "method": "initialize", "params": {}}, {"method": "notifications/initialized"},
             {"id": 2, "method": "tools/list"},
             {"id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}]
    done = subprocess.run(argv, input="".join(json.dumps({"jsonrpc": "2.0", **m}) + "\n" for m in asked),
                          capture_output=True, text=True, timeout=30, check=True)
    answers = {m["id"]: m["result"] for m in map(json.loads, done.stdout.splitlines())}
    assert answers[1]["serverInfo"]["name"] == "echo" and answers[2]["tools"][0]["name"] == "echo"
    assert answers[3] == {"isError": True, "content": [
        {"type": "text", "text": "Internal error: the server failed to answer this call."}]}
    # In a manifest: the server's own entry, wherever the manifest keeps it.
    extension = ROOT / "tests/fixtures/layouts/gemini-extension"
    [deployer] = [m for m in mutants_of(read_package(extension)) if m.kind == "mcp-error"]
    copy = make(deployer, extension, tmp_path / "extension")
    assert json.loads((copy / deployer.file).read_text())["mcpServers"]["deployer"]["command"] == "python3"


def test_the_forced_arm_invokes_the_skill_in_each_engines_way_or_says_why_not() -> None:
    from aam_eval_action.errors import AamEvalError
    from aam_eval_action.pipeline.forced import forced

    package = load_package(FIXTURE)
    [case] = [c for c in package.cases if c.case.name == "changelog-entry"]
    prompts = {engine: forced(case, package.layout, engine) for engine in ("claude-code", "codex", "gemini-cli")}
    assert {e: (p[0].case.input.prompt.split(" Add")[0], p[1]) for e, p in prompts.items()} == {
        "claude-code": ("/changelog-style", "its slash command, /changelog-style"),
        "codex": ("$changelog-style", "a $ mention, $changelog-style"),
        "gemini-cli": ("@.agents/skills/changelog-style/SKILL.md",
                       "its file reference, @.agents/skills/changelog-style/SKILL.md")}
    with pytest.raises(AamEvalError, match="not forced: under -p, Copilot CLI expands neither a skill's /name nor an "
                                           "@file reference on copilot"):
        forced(case, package.layout, "copilot")
    # A guard against a false trigger: invoking its skill by name would only fail it.
    [guard] = [c for c in package.cases if c.case.name == "unrelated-request"]
    with pytest.raises(AamEvalError, match="not forced: the case checks that its skill does not fire"):
        forced(guard, package.layout, "claude-code")
