"""`claude plugin eval`'s regex graders read as its JavaScript engine reads them.

The oracle is the pinned runner itself: a table of patterns that tell ECMA-262 from Python's `re`
(tests/support/js_regex_table.py: each a regex grader, or a tool grader's `input_match`) was run
through it once, and what it said of each row (passed, and its explanation: what matched, how
many, or "grader threw: …" in its words) is stored (tests/golden/js-regex). Every row is graded
here by our engine with no CLI; one end-to-end test runs the runner on the table again.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action import jsregex
from aam_eval_action.errors import ConfigError
from aam_eval_action.graders import from_dicts
from aam_eval_action.pipeline.plugin_eval import RunInputs, grade_run
from aam_eval_action.session import Session, ToolCall

from conftest import PINNED_CLAUDE, ROOT, aam_eval, installed
from support import js_regex_table as table


def _stored() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(table.golden_path(PINNED_CLAUDE).read_text())["rows"]
    return rows


def _verdicts(rows: list[dict[str, Any]]) -> dict[str, tuple[bool, str]]:
    return {r["grader"]["name"]: (r["passed"], r["explanation"]) for r in rows}


def test_the_stored_answers_are_for_this_table() -> None:
    assert [r["grader"] for r in _stored()] == table.graders(), "python tests/support/js_regex_table.py"
    assert len(table.ROWS) >= 80


def test_every_row_is_graded_as_the_runner_graded_it() -> None:
    rows = _stored()
    session = Session(engine="claude-code", model_provider="anthropic", output=table.ANSWER,
                      tool_calls=[ToolCall(name="Skill", input=table.SKILL_CALL)])
    results = grade_run(from_dicts([r["grader"] for r in rows]), RunInputs(session=session, files=table.SUBJECTS))
    assert {c.name: (c.passed, c.detail) for c in results} == _verdicts(rows)
    assert all(c.scored for c in results)


def test_pythons_re_would_grade_many_rows_otherwise() -> None:
    """What the table discriminates: Python's `re` (the JS flags i, m, s as its own) gets at least
    half of the regex rows wrong, refused or counted differently."""
    wrong = 0
    for row in _stored():
        grader = row["grader"]
        if grader["type"] != "regex":
            continue
        text = table.ANSWER if grader["target"] == "last_message" else table.SUBJECTS[grader["target"]["path"]]
        flags = sum(f for c, f in (("i", re.I), ("m", re.M), ("s", re.S)) if c in grader["flags"])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # its FutureWarnings on "[[" and "&&"
                found = len(re.findall(grader["pattern"], text, flags))
        except (re.error, OverflowError):
            found = -1
        threw = row["explanation"].startswith("grader threw")
        counted = re.match(r"found (\d+) matches", row["explanation"])
        if threw != (found < 0) or (counted and int(counted.group(1)) != found) or (
                grader["match"] == "contains" and not threw and row["passed"] != (found > 0)):
            wrong += 1
    assert wrong >= 45, wrong


def test_each_of_the_engines_words_is_one_the_runner_said() -> None:
    """The mapping from QuickJS-ng's words to the runner's is observed, not guessed: every word of
    the engine in WORDS comes up on a row of the table, and every word it maps to is one the
    runner wrote there."""
    said = {r["explanation"].removeprefix("grader threw: ") for r in _stored() if "grader threw" in r["explanation"]}
    theirs = {w.removeprefix(jsregex.PREFIX) for w in said}
    assert {w for words in jsregex.WORDS.values() for w in words} <= theirs
    assert jsregex.FLAGS_REFUSED in said
    engine: set[str] = set()
    for row in _stored():
        grader = row["grader"]
        for pattern, flags in ((grader.get("pattern"), grader.get("flags", "")), (grader.get("input_match"), "")):
            if pattern:
                words = jsregex._run("check", pattern, flags)
                engine |= {words} if isinstance(words, str) else set()
    for key in jsregex.WORDS:
        assert any(w == key or w.startswith(key) for w in engine), key


def test_the_api_and_vallys_prefixes() -> None:
    found = jsregex.compile("great question", "i")
    assert found.search("Great question!") and found.count("great question, great question") == 2
    assert jsregex.error("(?i)great question") == "Invalid regular expression: unrecognized character after (?"
    assert jsregex.error("a", "ii") == "Invalid flags supplied to RegExp constructor."
    assert jsregex.error("a{2,1") is None and jsregex.compile("a{2,1").search("a{2,1")
    with pytest.raises(jsregex.JsRegexError, match="negated class set may contain strings"):
        jsregex.compile("[^\\q{ab|c}--\\q{ab}]", "v")
    assert jsregex.vally("(?i)great question") == ("great question", "i")
    assert jsregex.vally("(?i)(?ms)^a.b") == ("^a.b", "ims")
    assert jsregex.vally("a(?i)b") == ("a(?i)b", "")
    assert jsregex.compile(*jsregex.vally("(?s)(?i)A.B")).search("a\nb")
    assert jsregex.compile("\\ud83d").search("\ud83d lone")  # any text reaches the engine as it is


def test_a_runaway_pattern_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsregex, "TIME_LIMIT", 0.2)
    with pytest.raises(jsregex.JsRegexTimeout, match=r"ran past 0\.2 s"):
        jsregex.compile("(a+)+$").search("a" * 40 + "b")


def test_flags_beyond_javascripts_refuse_the_case_as_there() -> None:
    with pytest.raises(ConfigError, match=r"graders\.0\.flags: must be JS RegExp flags \(d g i m s u v y\)"):
        from_dicts([{"name": "x", "type": "regex", "pattern": "a", "flags": "x"}])
    assert from_dicts([{"name": "x", "type": "regex", "pattern": "a", "flags": "ii"}])  # throws when it runs


def test_check_warns_of_a_pattern_the_runner_cannot_compile(tmp_path: Path) -> None:
    plugin = Path(shutil.copytree(ROOT / "tests/fixtures/cpe-plugin", tmp_path / "team-notes"))
    polite = plugin / "evals/polite"
    polite.mkdir()
    (polite / "case.yaml").write_text(
        'schema_version: "1.0"\nname: polite\nexecution:\n  prompt: "Minutes, please."\nruns: 1\ngraders:\n'
        "  - {name: flattery, type: regex, pattern: '(?i)great question|good point', match: not_contains}\n"
        "  - {name: year, type: regex, pattern: '(?P<y>\\d{4})-(?P=y)'}\n"
        "  - {name: fired, type: tool_used, tool: Skill, input_match: '(?i)minutes'}\n"
        "  - {name: fine, type: regex, pattern: '(?<y>\\d{4})', flags: u}\n")
    said = aam_eval("check", "--package", str(plugin))
    text = said.out + said.err
    assert ('evals/polite/case.yaml:7: grader "flattery" can never pass: that runner compiles its pattern as '
            "JavaScript, which refuses it (grader threw: Invalid regular expression: unrecognized character after "
            "(?); write pattern: 'great question|good point' with flags: i") in " ".join(text.split())
    assert "evals/polite/case.yaml:8: grader \"year\" can never pass" in text
    assert "write pattern: '(?<y>\\d{4})-\\k<y>'" in text
    assert 'evals/polite/case.yaml:9: grader "fired" can never pass: its input_match is compiled' in text
    assert '"fine"' not in text


@pytest.mark.cli
def test_the_stored_answers_are_the_pinned_runners(tmp_path: Path) -> None:
    """One run of the runner on the whole table (one case, one grader per row): its answers are the
    stored ones, which the test above holds our engine to."""
    installed("claude-code")
    claude = shutil.which("claude")
    assert claude is not None
    answers = table.runner_answers(claude, tmp_path)
    now = {name: (a["passed"], a["explanation"]) for name, a in answers.items()}
    assert now == _verdicts(_stored()), "the runner reads the table differently now: python " \
                                        "tests/support/js_regex_table.py"
