"""The table of patterns that tells JavaScript's regular expressions from Python's, as the pinned
`claude plugin eval` grades them.

    python tests/support/js_regex_table.py [--claude PATH]

runs the runner once on one case holding one grader per row (a scaffold script writes the
subjects, the scripted model loads a skill and answers in one line), and stores what it said of
each (passed, and its explanation) in tests/golden/js-regex/claude-<version>.json. The tests read
that file: the unit test grades every row with our engine, with no CLI; the end-to-end test runs
the runner again and expects the same answers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
GOLDEN = ROOT / "tests/golden/js-regex"
PROMPT = "Answer the regex question."
ANSWER = "Great question! Here is the answer."
"""The agent's last message (after it loads the `probe` skill)."""
SUBJECTS = {
    "q.txt": "Great question, thanks.\n",
    "u.txt": "caf\u00e9 \u0663 d\u00e9j\u00e0 vu\r\nnext\u2028line\rend\ufeff\u20ac \u017f \u212a\u00a0x",
    "e.txt": "\U0001F600 x u{1F600} p{L} a{,3} \\c ] { } 8 \x01 Z A h \n",
    "k.txt": "\u017f\u212a A a z \u1e9e \u0131 \u03c2",
    "m.txt": "\U0001f44d\U0001f3fd \U0001f1eb\U0001f1f7 x",
    "n.txt": "2024-05 abab b aaa",
}
"""The files the scaffold writes (byte for byte), each a regex grader's `{source: file}` target."""

M, T = "contains", "last_message"
ROWS: list[tuple[str, str, str, str]] = [
    # (pattern, flags, target, match). What Python's `re` reads otherwise is said after each.
    ("(?i)great question|good point", "", T, M),  # a public suite's: Python reads (?i) as a flag
    ("great question", "i", T, M),
    ("thanks\\.$", "", "q.txt", M),  # Python's $ matches before a final newline
    ("thanks\\.$", "m", "q.txt", "count:1"),
    ("thanks\\.\\Z", "", "q.txt", M),  # \Z is a literal Z
    ("caf\\w", "", "u.txt", M),  # \w is ASCII
    ("\\d", "", "u.txt", "count:0"),  # \d is ASCII (Python: the Arabic-Indic ٣)
    ("caf\\b", "", "u.txt", M),  # é is not a word character
    ("next.line", "", "u.txt", M),  # . stops at U+2028
    ("next.line", "s", "u.txt", M),
    ("vu.next", "", "u.txt", M),  # . stops at \r
    ("^end", "m", "u.txt", M),  # \r ends a line
    ("end\\s", "", "u.txt", M),  # \s takes U+FEFF
    ("s", "i", "k.txt", "count:0"),  # ſ folds to s only with u
    ("s", "iu", "k.txt", "count:1"),
    ("\u00df", "i", "k.txt", M),  # ẞ folds to ß only with u
    ("\\p{L}", "", "e.txt", M),  # without u, \p{L} is the text p{L}
    ("\\p{L}+", "u", "u.txt", "count:9"),
    ("^.\\s", "", "e.txt", M),  # without u, . is one UTF-16 unit of the emoji
    ("^.\\s", "u", "e.txt", M),
    (".", "", "e.txt", "count:44"),
    ("a{,3}", "", "e.txt", "count:1"),  # a literal; Python 3.11 reads {,3} as {0,3}
    ("]", "", "e.txt", M),
    ("\\c", "", "e.txt", M),  # Annex B: a backslash and c (Python: bad escape)
    ("\\1", "", "e.txt", M),  # Annex B: octal \x01 (Python: invalid group reference)
    ("\\8", "", "e.txt", M),
    ("[\\d-z]", "", "e.txt", "count:6"),  # Annex B: \d, -, z (Python: bad range)
    ("\\A", "", "e.txt", M),  # the letter A, not the start
    ("(?<=a+)b", "", "n.txt", "count:2"),  # variable-length lookbehind (Python: refused)
    ("(?<w>a)b\\k<w>", "", "n.txt", M),  # (Python: (?P<w>) only)
    ("(?<w>a)|(?<w>b)", "", "n.txt", "count:8"),  # one name in two alternatives
    ("(a)|\\1b", "", "n.txt", "count:8"),  # a reference to a group that did not take part is empty
    ("[^]", "", "n.txt", "count:18"),
    ("[]", "", "n.txt", M),
    ("(?=a)*", "", "n.txt", "count:19"),  # Annex B: a quantified lookahead
    ("x*", "", "n.txt", "count:19"),
    ("(?:)", "u", "m.txt", "count:8"),  # an empty match steps a code point with u
    ("(?:)", "", "m.txt", "count:12"),
    ("ab", "y", "n.txt", M),  # sticky: only at the start
    ("\\d", "y", "n.txt", "count:4"),
    ("(?i:AB)ab", "", "n.txt", M),  # modifiers
    ("[\\p{L}--[a-z]]", "v", "u.txt", "count:5"),
    ("\\p{RGI_Emoji}", "v", "m.txt", "count:2"),
    ("a{99999999999}", "", "n.txt", M),
    ("a{2,1", "", "n.txt", M),  # a literal (QuickJS-ng refuses it: corrected)
    ("[^\\q{ab|c}--\\q{ab}]", "v", "n.txt", M),  # refused (QuickJS-ng lets it through: corrected)
    # what the runner refuses, one row per word of its engine
    ("(?P<w>Great)", "", T, M),
    ("(?i", "", "n.txt", M),
    ("(?-:a)", "", "n.txt", M),
    ("(?i-i)", "", "n.txt", M),
    ("(?ii:a)", "", "n.txt", M),
    ("(", "", "n.txt", M),
    (")", "", "n.txt", M),
    ("(?<1a>x)", "", "n.txt", M),
    ("(?<a>x)\\k<a", "", "n.txt", M),
    ("\\k<a", "u", "n.txt", M),
    ("(?<w>a)(?<w>b)", "", "n.txt", M),
    ("(?<a>x)\\k", "", "n.txt", M),
    ("\\k", "u", "n.txt", M),
    ("\\k<a>(?<b>x)", "", "n.txt", M),
    ("(a)\\2", "u", "n.txt", M),
    ("\\00", "u", "n.txt", M),
    ("[\\1]", "u", "n.txt", M),
    ("\\c0", "u", "n.txt", M),
    ("\\c", "u", "n.txt", M),
    ("\\Z", "u", "n.txt", M),
    ("\\u12", "u", "n.txt", M),
    ("\\u{110000}", "u", "n.txt", M),
    ("\\p{Foo}", "u", "n.txt", M),
    ("\\p", "u", "n.txt", M),
    ("\\p{L", "u", "n.txt", M),
    ("a{1", "u", "n.txt", M),
    ("a\\", "", "n.txt", M),
    ("[a", "", "n.txt", M),
    ("a++", "", "n.txt", M),  # possessive (Python 3.11 takes it)
    ("(?<=a)*", "", "n.txt", M),
    ("(?=a)*", "u", "n.txt", M),
    ("a{2,1}", "", "n.txt", M),
    ("a{,3}", "u", "n.txt", M),
    ("{2}", "u", "n.txt", M),
    ("}", "u", "n.txt", M),
    ("]", "u", "n.txt", M),
    ("[z-a]", "", "n.txt", M),
    ("[\\d-z]", "u", "n.txt", M),
    ("[a&&&b]", "v", "n.txt", M),
    ("[a-z&&b]", "v", "n.txt", M),
    ("[a--b&&c]", "v", "n.txt", M),
    ("[(]", "v", "n.txt", M),
    ("[a-z--[aeiou]]", "v", "n.txt", M),
    ("[^\\p{RGI_Emoji}]", "v", "n.txt", M),
    ("a", "ii", "n.txt", M),
    ("a", "uv", "n.txt", "not_contains"),
]
"""One regex grader each."""

TOOL_GRADERS: list[dict[str, Any]] = [
    {"type": "tool_used", "tool": "Skill", "input_match": "(?i)PROBE"},
    {"type": "tool_used", "tool": "Skill", "input_match": '"skill":"rx:probe"\\}$'},
    {"type": "tool_used", "tool": "Skill", "input_match": "PROBE"},
    {"type": "tool_used", "tool": "Bash", "input_match": "(?i)x", "min": 0, "max": 0},
    {"type": "tool_order", "before": {"tool": "Skill", "input_match": "(?P<n>probe)"}, "after": "Skill"},
    {"type": "tool_order", "before": {"tool": "Read", "input_match": "("}, "after": "Skill"},
]
"""`input_match` (compiled with no flags, and only once a call of that tool is there)."""
SKILL_CALL = {"skill": "rx:probe"}


def graders() -> list[dict[str, Any]]:
    """Every row as the grader the case holds, named r00, r01…, t00…"""
    out: list[dict[str, Any]] = []
    for i, (pattern, flags, target, match) in enumerate(ROWS):
        where: Any = target if target == T else {"source": "file", "path": target}
        out.append({"name": f"r{i:02d}", "type": "regex", "pattern": pattern, "flags": flags, "match": match,
                    "target": where})
    out += [{"name": f"t{i:02d}", **g} for i, g in enumerate(TOOL_GRADERS)]
    return out


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar that reads back as `text`, whatever its characters."""
    out = []
    for c in text:
        o = ord(c)
        out.append("\\\\" if c == "\\" else '\\"' if c == '"' else c if 0x20 <= o < 0x7F
                   else f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
    return '"' + "".join(out) + '"'


def _yaml(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    return _quoted(value) if isinstance(value, str) else json.dumps(value)


def write_plugin(root: Path) -> Path:
    """The plugin with the one case (`evals/rx`): its scaffold writes SUBJECTS, its graders are
    the table's. Returns the case's folder."""
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin/plugin.json").write_text('{"name": "rx", "version": "0.1.0"}\n')
    (root / "skills/probe").mkdir(parents=True)
    (root / "skills/probe/SKILL.md").write_text("---\nname: probe\ndescription: Answers regex questions.\n---\n"
                                                "Answer in one line.\n")
    case = root / "evals/rx"
    case.mkdir(parents=True)
    octal = {name: "".join(f"\\{b:03o}" for b in text.encode()) for name, text in SUBJECTS.items()}
    (case / "setup.sh").write_text("set -e\n" + "".join(f"printf '{o}' > {n}\n" for n, o in octal.items()))
    lines = [f"  - {_yaml(g)}" for g in graders()]
    (case / "case.yaml").write_text(
        'schema_version: "1.0"\nname: rx\ncontext: {scaffold_script: setup.sh}\n'
        f"execution: {{prompt: {_quoted(PROMPT)}}}\nruns: 1\ngraders:\n" + "\n".join(lines) + "\n")
    return case


SCENARIOS = [{"match": PROMPT, "agent": [{"skill": SKILL_CALL["skill"]}, {"text": ANSWER}]}]


def runner_answers(claude: str, work: Path) -> dict[str, Any]:
    """The runner's verdict and explanation of every grader, from one run of the case."""
    from aam_eval_action.testing.model_server import ModelServer

    from support.cpe_corpus import claude_plugin_eval

    root = work / "rx"
    write_plugin(root)
    key = "sk-ant-test-js-regex"
    with ModelServer(SCENARIOS, api_key=key) as server:
        done = claude_plugin_eval(claude, root, work / "home", server.url, key, work / "out.json",
                                  "--ablation", "none", "--scaffold")
    assert (work / "out.json").is_file(), done.stdout + done.stderr
    [case] = json.loads((work / "out.json").read_text())["cases"]
    [run] = case["arms"]["with"]
    return {g["name"]: {"passed": g["passed"], "explanation": g["explanation"]} for g in run["graders"]}


def golden_path(version: str) -> Path:
    return GOLDEN / f"claude-{version}.json"


def refresh(claude: str) -> Path:
    from support.cpe_corpus import runner_version

    version = runner_version(claude)
    with tempfile.TemporaryDirectory() as work:
        answers = runner_answers(claude, Path(work))
    path = golden_path(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"grader": g, **answers[g["name"]]} for g in graders()]
    path.write_text(json.dumps({"claude": version, "rows": rows}, indent=1, ensure_ascii=False) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claude", default=shutil.which("claude") or "claude")
    print(refresh(parser.parse_args().claude))


if __name__ == "__main__":
    main()
