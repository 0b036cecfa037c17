"""A SKILL.md whose frontmatter is not valid YAML but every CLI but one reads: an unquoted `: `
inside the description (`description: Work with airflow files and projects: create, …`), as a
public Airflow skills repository writes it (tests/fixtures/colon-skill-repo).

Claude Code, Codex and Gemini CLI list that skill with the whole rest of the line as its
description; Copilot CLI leaves it out. The package is taken as it is: `check` and `run` load it
and warn with the file, the line and the quoted form, and each engine gets the file as written,
so each real CLI does with it what it does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, aam_eval, installed

FIXTURE = ROOT / "tests/fixtures/colon-skill-repo"
DESCRIPTION = "Work with airflow files and projects: create, inspect, and upgrade DAGs and their settings."


def test_check_loads_the_skill_and_warns_with_the_quoted_form(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(FIXTURE, tmp_path / "airflow-skills"))
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 0, result.err
    assert "skill   airflow " in result.out and "upgrade-a-dag" in result.out
    assert (f"warning skills/airflow/SKILL.md:3: frontmatter: description: an unquoted ': ' in the value is not "
            "valid YAML; Claude Code, Codex and Gemini CLI read the rest of the line as it, Copilot CLI does not "
            f'load the skill; quote it: description: "{DESCRIPTION}"') in result.out
    assert aam_eval("check", "--package", str(repo), "--strict").code != 0  # a warning, an error with --strict


@pytest.mark.cli
def test_each_cli_does_with_it_what_it_does(tmp_path: Path) -> None:
    from aam_eval_action.testing.model_server import ModelServer, skill_listing

    keys = {"ANTHROPIC_API_KEY": "sk-ant-test-colon", "OPENAI_API_KEY": "sk-test-colon", "GEMINI_API_KEY": "gm-colon"}
    listed: dict[str, dict[str, str]] = {}
    for engine in ("claude-code", "codex", "copilot", "gemini-cli"):
        installed(engine)
        repo = Path(shutil.copytree(FIXTURE, tmp_path / engine))
        with ModelServer([{"match": "*", "agent": [{"text": "The DAG is upgraded."}]}],
                         api_key=tuple(keys.values())) as server:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
                    "GOOGLE_GEMINI_BASE_URL": server.url, **keys}
            flags = ["--model", "gpt-5.5"] if engine == "codex" else []
            ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(repo), "--record",
                                  "--engine", engine, *flags, "--no-self-check",
                                  "-o", str(tmp_path / f"{engine}.json")],
                                 env=env, capture_output=True, text=True, timeout=300, check=False)
            assert (tmp_path / f"{engine}.json").is_file(), ran.stdout + ran.stderr
            assert "skills/airflow/SKILL.md:3: frontmatter: description: an unquoted ': '" in ran.stdout + ran.stderr
            listed[engine] = dict(pair for r in server.requests for pair in skill_listing(r.body))
    for engine in ("claude-code", "codex", "gemini-cli"):
        assert listed[engine]["airflow"] == DESCRIPTION, engine
    assert "airflow" not in listed["copilot"] and "dag-testing" in listed["copilot"]
