"""Vally suites read as Vally reads them: the vendored public corpus (every stimulus listed or
its file refused, each suite's selection, the table docs/vally.md keeps), and the refusals of
Vally's lint, each with its file and line, one broken file hiding no other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, aam_eval
from support.vally_corpus import BEGIN, CORPUS, END, read, repos, table


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


SKILL = "---\nname: {n}\ndescription: Does {n} things when asked about {n}.\n---\nDo {n}.\n"
GOOD = """name: good
stimuli:
  - name: Says hello
    prompt: say hello
    graders:
      - type: output-contains
        config: {substring: hello}
"""


def _load(root: Path) -> tuple[list[str], list[str]]:
    from aam_eval_action.loader import load_repo

    repo = load_repo(root)
    names = sorted(c.case.title or c.case.name for p in repo.packages for c in p.cases)
    errors = sorted(str(e) for p in repo.packages for e in p.errors)
    return names, errors


def test_the_docs_table_is_the_corpus_as_read() -> None:
    text = (ROOT / "docs/vally.md").read_text()
    kept = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert kept == table(), "regenerate it: python tests/support/vally_corpus.py"


def test_every_stimulus_of_the_corpus_is_listed_or_its_file_refused_with_why() -> None:
    import yaml

    assert len(repos()) >= 6
    listed = 0
    for repo in repos():
        r = read(repo)
        source = json.loads((repo / "SOURCE.json").read_text())
        assert source["licence"] and (repo / source["licence_file"]).is_file() and len(source["commit"]) == 40
        for rel, why in r.refused.items():  # file:line: field: what is wrong
            assert why.startswith(f"{rel}:") and why.split(":")[1].isdigit(), why
        # Every stimulus of every spec Vally discovers: listed, or its file refused.
        from aam_eval_action.vally.layout import read as read_layout
        from aam_eval_action.vally.project import read_project

        project = read_project(repo, read_layout(repo).skill_dirs)
        for spec in project.files:
            written = yaml.safe_load((repo / spec.rel).read_text())["stimuli"]
            assert spec.error or [s.name for s in spec.stimuli] == [s["name"] for s in written], spec.rel
        listed += len(r.stimuli)
    assert listed == 756


def test_a_suite_selects_as_vally_does() -> None:
    """By tag (AND across keys, OR within a list), by the files a suite lists (also inside a
    dot-folder, which only a listed path reaches), and both; nested configs each their own."""
    chess = read(CORPUS / "mjrousos__ChessTrainer")
    assert chess.suites == {
        "full": 32,
        "smoke": 13,
        "pr": 13,
        "routing": 13,
        "response-quality": 12,
        "llm": 15,
    }
    functions = read(CORPUS / "Azure__azure-functions-skills")
    assert functions.suites["full"] == 24 and functions.suites["live"] == 1  # `tier: [smoke, full]` is OR
    tools = read(CORPUS / "Azure__azure-sdk-tools")
    assert tools.suites["pr-gate"] == 156 and tools.suites["unit"] == 132


def test_run_dry_run_lists_a_suite_under_the_stimuli_names() -> None:
    repo = CORPUS / "Azure__azure-functions-skills"
    done = aam_eval("run", "--package", str(repo), "--dry-run", "--suite", "triggers")
    assert done.code == 0, done.err
    shown = [line.split("  target")[0] for line in done.out.splitlines() if "  target skill:" in line]
    assert len(shown) == 7 and "Routing — create TypeScript HTTP function" in shown, done.out
    assert "live (no cassette recorded for engine copilot" in done.out  # Vally's executor: Copilot CLI
    assert "baseline" not in done.out  # one arm, as `vally eval` runs
    wrong = aam_eval("run", "--package", str(repo), "--dry-run", "--suite", "nightly")
    assert wrong.code != 0, wrong.out
    assert "no such suite in .vally.yaml (suites: full, integration, live, pr, smoke, triggers)" in wrong.err


REFUSED = {
    "evals/field/eval.yaml": (
        "stimuli:\n  - name: a\n    prompt: hi\n    expect_activation: true\n",
        "evals/field/eval.yaml:4: stimuli[0].expect_activation: unknown stimulus field 'expect_activation'",
    ),
    "evals/grader/eval.yaml": (
        "stimuli:\n  - name: a\n    prompt: hi\n    graders:\n      - type: output-contain\n"
        "        config: {substring: x}\n",
        "evals/grader/eval.yaml:5: stimuli[0].graders[0].type: unknown-grader-type: "
        "'output-contain'; did you mean output-contains?",
    ),
    "evals/timeout/eval.yaml": (
        "defaults:\n  timeout: 120\nstimuli:\n  - name: a\n    prompt: hi\n",
        "evals/timeout/eval.yaml:2: defaults.timeout: 120: a duration needs a unit",
    ),
    "evals/weights/eval.yaml": (
        "scoring:\n  weights:\n    prompt: 2\nstimuli:\n  - name: a\n    prompt: hi\n"
        "    graders:\n      - type: completed\n",
        "evals/weights/eval.yaml:3: scoring.weights.prompt: invalid-scoring-weight-key: a "
        "weight for 'prompt', which no grader of this eval is",
    ),
    "evals/both/eval.yaml": (
        "stimuli:\n  - name: a\n    prompt: hi\n    graders:\n      - type: skill-invocation\n"
        "        config: {required: [greet], disallowed: [greet]}\n",
        "evals/both/eval.yaml:6: stimuli[0].graders[0].config: skill-invocation: 'greet' is both "
        "required and disallowed; a skill cannot appear in both lists",
    ),
}


def test_each_rule_of_vallys_lint_refuses_its_file_with_the_line_and_hides_no_other(tmp_path: Path) -> None:
    files = {rel: text for rel, (text, _) in REFUSED.items()}
    root = _project(
        tmp_path,
        {
            **files,
            "evals/good/eval.yaml": GOOD,
            "skills/greet/SKILL.md": SKILL.format(n="greet"),
            ".vally.yaml": "paths:\n  evals: [evals]\n",
        },
    )
    names, errors = _load(root)
    assert names == ["Says hello"]
    for _, said in REFUSED.values():
        assert any(e.startswith(said) for e in errors), (said, errors)
    assert len(errors) == len(REFUSED)


def test_discovery_without_a_config_and_with_a_nested_one(tmp_path: Path) -> None:
    """No .vally.yaml: `evals/**/eval.yaml` (Vally's defaults). A nested one governs its folder,
    with its own evalFilenames; a `tasks:` eval.yaml (waza's) is no Vally spec."""
    root = _project(
        tmp_path,
        {
            "skills/greet/SKILL.md": SKILL.format(n="greet"),
            "evals/a/eval.yaml": GOOD,
            "evals/b/other.yaml": GOOD.replace("Says hello", "Not found"),
            "tools/x/.vally.yaml": "paths:\n  evals: [cases]\n  evalFilenames: ['*.eval.yaml']\n",
            "tools/x/cases/one.eval.yaml": GOOD.replace("name: good", "name: nested").replace(
                "Says hello", "Nested"
            ),
            "tools/x/cases/eval.yaml": GOOD.replace("Says hello", "Not the nested config's name"),
        },
    )
    from aam_eval_action.vally.project import read_project

    project = read_project(root, {"greet": "skills/greet"})
    assert [s.item_id for s in project.stimuli()] == ["good::Says hello", "nested::Nested"]


def test_a_stimulus_name_two_evals_share_is_qualified(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "skills/greet/SKILL.md": SKILL.format(n="greet"),
            "evals/a/eval.yaml": GOOD.replace("name: good", "name: alpha"),
            "evals/b/eval.yaml": GOOD.replace("name: good", "name: beta"),
            ".vally.yaml": "suites:\n  all:\n    filter: {}\n",
        },
    )
    names, errors = _load(root)
    assert names == ["alpha::Says hello", "beta::Says hello"] and not errors


@pytest.mark.parametrize(
    "text, why",
    [
        (
            "stimuli:\n  - name: a\n    prompt: hi\n    environment:\n      skills: [../../../outside]\n",
            "leaves the repository",
        ),
        (
            "stimuli:\n  - name: a\n    prompt: hi\n    environment:\n      files:\n        - {src: x.txt}\n",
            "environment-file-missing-field",
        ),
        (
            "stimuli:\n  - name: a\n    prompt: hi\n    environment:\n      files:\n        - {src: nothing.txt, dest: a}\n",
            "environment-file-not-found",
        ),
        (
            "stimuli:\n  - name: a\n    prompt: hi\n  - name: a\n    prompt: again\n",
            "duplicate-stimulus-name",
        ),
        (
            "stimuli:\n  - name: a\n    prompt: hi\n    environment:\n      env: {ANTHROPIC_BASE_URL: 'https://x.example'}\n",
            "env.ANTHROPIC_BASE_URL: not settable from an eval file",
        ),
        (
            "stimuli:\n  - name: a\n    prompt: hi\n    environment:\n      env: {NODE_OPTIONS: '--require /tmp/x.js'}\n",
            "env.NODE_OPTIONS: not settable from an eval file",
        ),
        (
            "stimuli:\n  - name: a\n    prompt: hi\n    environment:\n      mcpServers:\n        s: {type: http, command: x}\n",
            "only stdio servers start here",
        ),
    ],
)
def test_hostile_or_broken_environments_are_refused(tmp_path: Path, text: str, why: str) -> None:
    root = _project(tmp_path, {"skills/greet/SKILL.md": SKILL.format(n="greet"), "evals/a/eval.yaml": text})
    names, errors = _load(root)
    assert not names and len(errors) == 1 and why in errors[0], errors


def test_an_experiment_of_skills_against_none_runs_each_stimulus_with_and_without_them() -> None:
    """dotnet/skills' experiment (`baseline` with no skills, `skilled` with the one under test,
    `${eval.grandparent}`/`${eval.parent}` in its path, `!(agent.*)` in its globs): its evals,
    which no `.vally.yaml` finds, are read with the skilled variant's skill and run in both arms;
    an experiment comparing two versions of a skill is listed with why it is no pair."""
    from aam_eval_action.vally.layout import read as read_layout
    from aam_eval_action.vally.project import read_project

    repo = CORPUS / "elvisw__dotnet-skills"
    project = read_project(repo, read_layout(repo).skill_dirs)
    [ex] = project.experiments
    assert ex.why_not is None and not any("/agent." in rel for rel in ex.evals) and len(ex.evals) == 17
    stimuli = project.stimuli()
    assert len(stimuli) == 61 and all(s.case is not None and s.case.with_and_without for s in stimuli)
    scripts = next(s for s in stimuli if s.rel == "tests/dotnet-advanced/csharp-scripts/eval.yaml")
    assert scripts.skills == {"csharp-scripts": "plugins/dotnet-advanced/skills/csharp-scripts"}
    assert scripts.case is not None and scripts.case.target == "skill:csharp-scripts"
    done = aam_eval("run", "--package", str(repo), "--dry-run")
    listed = [line for line in done.out.splitlines() if "  target skill:" in line]
    assert len(listed) == 61 and all(" · baseline " in line for line in listed), done.out[-2000:]
    heaths = read_project(CORPUS / "heaths__plugins", read_layout(CORPUS / "heaths__plugins").skill_dirs)
    assert heaths.experiments[0].why_not == ("neither variant runs without skills: two versions of a skill are "
                                             "compared, not its lift")
    assert not any(s.case is not None and s.case.with_and_without for s in heaths.stimuli())


def test_a_git_worktree_stages_that_repository_at_its_ref_and_its_tree_is_in_the_fingerprint(tmp_path: Path) -> None:
    """`environment.git {type: worktree, source, ref}`: the workspace starts from the source
    repository's files at `ref` (not its working tree); the ref's tree is an input of the
    recording, so a new commit there re-executes; a clone from a URL is refused."""
    from aam_eval_action.loader import load_repo
    from aam_eval_action.replay.fingerprint import agent_fingerprint
    from aam_eval_action.vally import git_tree

    spec = ("stimuli:\n  - name: Reads the spec\n    prompt: read api.md\n    environment:\n      git:\n"
            "        type: worktree\n        source: ../../cache/specs\n        ref: main\n")
    root = _project(tmp_path, {"skills/greet/SKILL.md": SKILL.format(n="greet"), "evals/a/eval.yaml": spec,
                               "cache/specs/api.md": "v1\n"})
    specs = root / "cache/specs"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(specs)]
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "v1"]):
        subprocess.run([*git, *args], check=True)
    (specs / "api.md").write_text("uncommitted\n")
    [package] = load_repo(root).packages
    [loaded] = package.cases
    assert loaded.case.git_tree == ("cache/specs", "main")
    git_tree.export(root, "cache/specs", "main", tmp_path / "ws")
    assert (tmp_path / "ws/api.md").read_text() == "v1\n"

    def fingerprint() -> str:
        return agent_fingerprint(package.layout, loaded.case, package.config, "copilot", "m").digest

    before = fingerprint()
    subprocess.run([*git, "commit", "-qam", "v2"], check=True)
    assert fingerprint() != before
    clone = spec.replace("type: worktree", "type: clone").replace("source: ../../cache/specs",
                                                                  "url: https://example.com/x.git")
    (root / "evals/a/eval.yaml").write_text(clone)
    _, errors = _load(root)
    assert len(errors) == 1 and "a clone from a URL is not made here" in errors[0], errors


def test_a_stimulus_naming_several_skills_installs_those_and_no_other(tmp_path: Path) -> None:
    spec = ("stimuli:\n  - name: Both\n    prompt: hi\n    environment:\n"
            "      skills: [../../skills/greet, ../../skills/notes]\n")
    root = _project(tmp_path, {**{f"skills/{n}/SKILL.md": SKILL.format(n=n) for n in ("greet", "notes", "other")},
                               "evals/a/eval.yaml": spec})
    from aam_eval_action.loader import load_repo

    [package] = load_repo(root).packages
    [loaded] = package.cases
    assert loaded.case.installs == "skills:greet,notes" and not loaded.skipped
    assert package.layout.skills_for(loaded.case.installs) == ["greet", "notes"]
    assert package.layout.files_for(loaded.case.installs) == ["skills/greet/SKILL.md", "skills/notes/SKILL.md"]


def test_constraints_are_graded_as_their_catalog_graders(tmp_path: Path) -> None:
    spec = ("scoring:\n  weights: {tool-calls: 2}\nstimuli:\n  - name: Limited\n    prompt: hi\n    graders:\n"
            "      - type: tool-calls\n        config: {required: [view]}\n    constraints:\n"
            "      max_turns: 4\n      max_tokens: 9000\n      max_duration: 90s\n      expect_tools: [bash]\n"
            "      reject_tools: [web_fetch]\n      expect_skills: [greet]\n")
    root = _project(tmp_path, {"skills/greet/SKILL.md": SKILL.format(n="greet"), "evals/a/eval.yaml": spec})
    from aam_eval_action.loader import load_repo

    [package] = load_repo(root).packages
    [loaded] = package.cases
    limits = {g.name: (g.type, g.options, g.weight) for g in loaded.graders if g.name.startswith("constraint-")}
    assert limits == {
        "constraint-max-turns": ("turn-count", {"max": 4}, 1.0),
        "constraint-max-tokens": ("token-budget", {"max": 9000}, 1.0),
        "constraint-max-duration": ("wall-time", {"max": "90s"}, 1.0),
        "constraint-expect-tools": ("tool-calls", {"required": ["^bash$"]}, 2.0),
        "constraint-reject-tools": ("tool-calls", {"disallowed": ["^web_fetch$"]}, 2.0),
        "constraint-expect-skills": ("skill-invocation", {"required": ["greet"]}, 1.0),
    }
    assert loaded.case.timeout == 90 and loaded.case.execution is not None
    assert loaded.case.execution.max_turns == 4 and "constraints" not in dict(loaded.skipped)
