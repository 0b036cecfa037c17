"""A long replay reads its cassettes ahead on another core, and reads exactly what it would
have read itself: the same data, the same refusals, and a file written since read again."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.replay import prefetch
from aam_eval_action.replay.prefetch import load_file
from aam_eval_action.replay.untrusted import UntrustedFileError, read_now
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import aam_eval

BOMB = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"
TAGGED = "value: !!python/object/apply:os.system ['true']\n"


def _outcome(path: Path, inside: Path) -> tuple[str, Any]:
    try:
        return "ok", load_file(path, inside=inside)
    except UntrustedFileError as exc:
        return "refused", str(exc)


def _own(path: Path, inside: Path) -> tuple[str, Any]:
    try:
        return "ok", read_now(path, inside=inside)
    except UntrustedFileError as exc:
        return "refused", str(exc)


def test_files_read_ahead_are_what_the_run_would_read_itself(tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    root.mkdir()
    outside = tmp_path / "outside.yaml"
    outside.write_text("secret: 1\n")
    files = []
    for i in range(prefetch.MIN_FILES + 6):
        path = root / f"c{i:03d}.yaml"
        files.append(path)
        if i == 3:
            path.write_text(BOMB)
        elif i == 4:
            path.write_text(TAGGED)
        elif i == 5:
            path.symlink_to(outside)
        elif i == 6:
            continue  # listed, never written
        else:
            path.write_text(f"n: {i}\nwhen: 2026-01-0{1 + i % 9}\nitems: [a, 'b', {i}.5, null, true]\n")
    with prefetch.ahead([(f, root) for f in files]) as reader:
        assert reader is not None
        last = _outcome(files[-1], root)  # the reader has read every file before it
        (root / "c000.yaml").write_text("n: changed\n")  # written since it was read ahead
        seen = [_outcome(f, root) for f in files[:-1]] + [last]
        served = reader.served
    assert seen == [_own(f, root) for f in files]
    assert seen[0] == ("ok", (True, {"n": "changed"}))
    assert seen[3][0] == seen[4][0] == seen[5][0] == "refused"
    assert "c004.yaml:1: YAML tag" in seen[4][1] and "points outside" in seen[5][1]
    assert seen[6] == ("ok", (False, None))
    assert served == len(files) - 1  # all but the file written since came from the reader


def test_a_replay_of_many_cases_agrees_with_a_replay_of_few(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"case-{i:03d}" for i in range(prefetch.MIN_FILES // 2 + 4)]
    cases = [simple_case(n, judge=None, expected={"contains": ["done"]}) for n in names]
    pkg = write_package(tmp_path / "pkg", cases, files={"skills/demo/SKILL.md": "---\nname: demo\n---\nDo it.\n"})
    record_sessions(pkg, {n: f"done: {n}" if n != "case-002" else "nothing" for n in names})
    (pkg / "evals/cassettes/case-001/claude-code.session.yaml").write_text(TAGGED)

    served: list[int | None] = []
    real = prefetch.ahead

    @contextlib.contextmanager
    def watched(files: list[tuple[Path, Path | None]]) -> Iterator[prefetch.Reader | None]:
        with real(files) as reader:
            yield reader
            served.append(reader.served if reader else None)

    monkeypatch.setattr(prefetch, "ahead", watched)
    many, few = tmp_path / "many.json", tmp_path / "few.json"
    assert aam_eval("run", "--replay", "--package", str(pkg), "-o", str(many)).code == 1
    assert aam_eval("run", *names[:4], "--replay", "--package", str(pkg), "-o", str(few)).code == 1
    assert served == [len(names), None]  # each session, the refused one too, read ahead

    def cases_of(report: Path) -> dict[str, Any]:
        found = json.loads(report.read_text())["cases"]
        return {c["name"]: {k: v for k, v in c.items() if k != "duration_seconds"} for c in found}

    read_ahead, read_here = cases_of(many), cases_of(few)
    assert len(read_ahead) == len(names)
    assert {n: read_ahead[n] for n in names[:4]} == read_here
    assert read_here["case-001"]["verdict"] == "ERROR"
    assert "claude-code.session.yaml:1: YAML tag" in read_here["case-001"]["error"]
    assert read_here["case-002"]["verdict"] == "FAIL" and read_here["case-000"]["verdict"] == "PASS"


def test_a_short_replay_starts_no_reader(tmp_path: Path) -> None:
    files = [(tmp_path / f"{i}.yaml", tmp_path) for i in range(prefetch.MIN_FILES - 1)]
    with prefetch.ahead(files) as reader:
        assert reader is None
