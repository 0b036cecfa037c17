"""Public `claude plugin eval` suites, read as that runner reads them, on its pinned release and
the one before.

The repositories are vendored as they are (tests/fixtures/cpe-corpus, each with its source,
commit and licence); what the runner loads and refuses in each is stored per release
(tests/golden/cpe-corpus, refreshed by `python tests/support/cpe_corpus.py`). Every case folder
it loads, we load, under the name it gives; every one it refuses, we refuse, with its reason.
One test runs the pinned runner again, so a stored read that went stale fails here.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import PINNED_CLAUDE, ROOT, aam_eval, installed
from support.cpe_corpus import (
    CORPUS,
    SCORED,
    case_folder,
    flat,
    golden_path,
    ours_reads,
    recordings,
    refusing_server,
    releases,
    repositories,
    runner_reads,
    scored_releases,
    scores_path,
    table_rows,
)

PINNED = PINNED_CLAUDE


def test_the_pinned_release_and_the_one_before_are_stored() -> None:
    assert releases()[:1] == [PINNED] and len(releases()) >= 2 and scored_releases() == sorted(releases()[:2])
    assert {json.loads(golden_path(v).read_text())["claude"] for v in releases()} == set(releases())
    stored = [set(json.loads(golden_path(v).read_text())["repositories"]) for v in releases()]
    assert all(names == {r.name for r in repositories()} for names in stored)


@pytest.mark.parametrize("release", releases())
def test_we_load_what_the_runner_loads_and_refuse_what_it_refuses(release: str) -> None:
    stored = json.loads(golden_path(release).read_text())["repositories"]
    loaded = refused = 0
    for repo in repositories():
        theirs, ours = stored[repo.name], ours_reads(repo)
        assert ours["loaded"] == theirs["loaded"], repo.name
        assert set(ours["refused"]) == set(theirs["refused"]), repo.name
        for folder, why in theirs["refused"].items():
            assert flat(why).split(" (")[0] in flat(ours["refused"][folder]), (repo.name, folder, why)
        loaded += len(theirs["loaded"])
        refused += len(theirs["refused"])
    assert loaded and refused


@pytest.mark.cli
def test_the_stored_reads_are_the_pinned_runners(tmp_path: Path) -> None:
    installed("claude-code")
    claude = shutil.which("claude")
    assert claude is not None
    stored = json.loads(golden_path(PINNED).read_text())["repositories"]
    with refusing_server() as url, ThreadPoolExecutor(4) as pool:  # each read waits mostly on the CLI
        reads = {repo.name: pool.submit(runner_reads, claude, repo, tmp_path, url) for repo in repositories()}
        now = {name: read.result() for name, read in reads.items()}
    assert now == stored, "the runner reads the corpus differently now: python tests/support/cpe_corpus.py"


@pytest.mark.parametrize("release", scored_releases())
@pytest.mark.parametrize("name", sorted(SCORED))
def test_one_run_scores_every_case_and_grader_as_the_runner_did(name: str, release: str, tmp_path: Path) -> None:
    """The runner's one run (stored) and ours, recorded through the same claude against the same
    scripted model (stored), replayed here offline: every case's score and every grader's verdict,
    for every case the runner loads (the ones it refuses are refused here too)."""
    repo = Path(shutil.copytree(CORPUS / name, tmp_path / name))
    shutil.copytree(recordings(name), repo / "evals/cassettes")
    theirs = json.loads(scores_path(name, release).read_text())["cases"]
    report = tmp_path / "ours.json"
    done = aam_eval("run", "--package", str(repo), "--replay", "--no-rerun", "--ablation", "none", "--runs", "1",
                    "-o", str(report))
    assert report.is_file(), done
    found = json.loads(report.read_text())["cases"]
    ours = {case_folder(c["file"]): c for c in found if c.get("score") is not None}
    refused = {case_folder(c["file"]) for c in found if c.get("score") is None}
    assert set(ours) == set(theirs) and not refused & set(theirs)
    for folder, case in theirs.items():
        mine = ours[folder]
        assert round(mine["score"], 6) == round(case["score"], 6), (folder, mine.get("graders"))
        assert {g["name"]: g["passed"] for g in mine["graders"]} == case["graders"], folder
        assert mine["replay_kind"] == "snapshot"


def test_the_docs_table_is_the_corpus() -> None:
    docs = (ROOT / "docs/claude-plugin-eval.md").read_text()
    assert "\n".join(table_rows(PINNED)) in docs, "\n".join(table_rows(PINNED))
