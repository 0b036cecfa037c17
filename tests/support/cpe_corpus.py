"""The public `claude plugin eval` suites vendored in tests/fixtures/cpe-corpus, as that runner
reads and scores them, and as we do.

    python tests/support/cpe_corpus.py [--claude PATH]...

refreshes tests/golden/cpe-corpus/: for each `claude` given (default: the one on PATH), and
each vendored repository, the case folders the runner loads (with the names it gives them) and
the ones it refuses (with its reason), from `claude plugin eval` on a copy of the repository
whose every model call is refused (nothing spent); then, for the pinned release, one run of the
scored suites through the runner and through `aam-eval run --record`, both against the scripted
model server with the same scenarios: the runner's scores, and our recordings, which the
default tests replay.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fixtures/cpe-corpus"
GOLDEN = ROOT / "tests/golden/cpe-corpus"
CASE_FILES = ("case.yaml", "prompt.md")

SCORED: dict[str, list[dict[str, Any]]] = {
    # sonilo-ai/skills' routing cases: the agent loads the skill three prompts are about, answers
    # one without a skill and loads the wrong skill for the last, so its graders pass and fail.
    "sonilo-ai__skills": [
        {"match": "re-voiced rather than subtitled", "agent": [
            {"skill": "skills:auto-dubbing"}, {"text": "Auto-dubbing re-voices each language."}]},
        {"match": "background music and sound effects both", "agent": [
            {"skill": "skills:video-to-sound"}, {"text": "One pass gives both."}]},
        {"match": "lo-fi chill beat", "agent": [{"text": "Describe the mood and I will write the brief."}]},
        {"match": "original soundtrack that follows the cut", "agent": [
            {"skill": "skills:video-to-music"}, {"text": "Scored to the cut."}]},
        {"match": "footsteps, punches and impacts", "agent": [
            {"skill": "skills:text-to-sfx"}, {"text": "Effects drafted."}]},
    ],
}
ANSWERED = [{"match": "*", "agent": [{"text": "Done: the task is finished, as asked."}],
             "judge": {"result": "PASS", "reason": "scripted"}}]
"""Every other suite with cases the runner loads: each session answers in one line, and the
judge passes every criterion (so each grader's verdict rests on the rule it applies)."""
for _repo in ("NecturaLabs__AgentSkills", "coderabbitai__skills", "eyepop-ai__eyepop-skills",
              "homeassistant-ai__skills", "jame581__LogseqBrain",
              "jimweller__clanker-output-style-plugin", "k97__skills", "mdrubelamin2__omc-slim",
              "ssdvtechno__maxpylang-claude-plugin", "starslingdev__skills"):
    SCORED[_repo] = ANSWERED
"""The suites run end to end, each with the scripted model's scenarios for its cases."""


def repositories() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


def case_folder(path: str) -> str:
    """A case's folder from what names it (its folder, or its case.yaml / prompt.md)."""
    return path.rsplit("/", 1)[0] if path.rsplit("/", 1)[-1] in CASE_FILES else path.rstrip("/")


def flat(text: str) -> str:
    """A message with its runs of white space as one space (the runner wraps long ones)."""
    return " ".join(text.split())


# --- the runner ---


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Answers every request with a 400: the CLI ends its run at once (no model here)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": "refused by the test"}}).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def refusing_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def claude_plugin_eval(claude: str, cwd: Path, home: Path, base_url: str, key: str, out: Path,
                       *flags: str) -> subprocess.CompletedProcess[str]:
    """The real `claude plugin eval` on the folder `cwd`, as a user runs it in CI (trusted, not
    published), against `base_url`, with a fresh HOME; its --json result goes to `out`."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= {"HOME": str(home), "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": key,
            "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return subprocess.run([claude, "plugin", "eval", ".", "--trust-plugin", "--no-publish", *flags,
                           "--json", str(out)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def runner_reads(claude: str, repo: Path, work: Path, base_url: str) -> dict[str, Any]:
    """What the runner loads and refuses in a copy of `repo` (its runs end at once)."""
    copy = Path(shutil.copytree(repo, work / repo.name))
    out = work / f"{repo.name}.json"
    done = claude_plugin_eval(claude, copy, work / f"home-{repo.name}", base_url, "sk-ant-test-corpus", out,
                              "--ablation", "none", "--runs", "1")
    said = done.stdout + done.stderr
    result = json.loads(out.read_text()) if out.is_file() else {"cases": []}
    refused = {}
    for path, why in re.findall(r"^✗ (\S+?): (.*)$", said, flags=re.M):
        refused[case_folder(Path(path).relative_to(copy.resolve()).as_posix()
                            if path.startswith("/") else path)] = why.strip()
    return {"loaded": {c["dir"]: c["name"] for c in result["cases"]}, "refused": refused}


def runner_version(claude: str) -> str:
    out = subprocess.run([claude, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[0]


# --- ours ---


def ours_reads(repo: Path) -> dict[str, Any]:
    """What we load and refuse in `repo`: the same shape as `runner_reads`."""
    from aam_eval_action.loader import load_repo

    loaded = load_repo(repo)
    cases = {case_folder(c.file): c.case.title or c.case.name
             for p in loaded.packages for c in p.cases if c.file}
    refused = {case_folder(e.file): str(e) for p in loaded.packages for e in p.errors}
    return {"loaded": cases, "refused": refused}


def golden_path(version: str) -> Path:
    return GOLDEN / f"claude-{version}.json"


def releases() -> list[str]:
    """The runner releases with stored reads, newest first."""
    found = [p.stem.removeprefix("claude-") for p in GOLDEN.glob("claude-*.json")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")), reverse=True)


def refresh_reads(claude: str) -> Path:
    version = runner_version(claude)
    with tempfile.TemporaryDirectory() as work, refusing_server() as url:
        reads = {repo.name: runner_reads(claude, repo, Path(work), url) for repo in repositories()}
    path = golden_path(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"claude": version, "repositories": reads}, indent=2, sort_keys=True) + "\n")
    return path


def scores_path(repo: str, release: str) -> Path:
    return GOLDEN / "scores" / f"claude-{release}" / f"{repo}.json"


def scored_releases() -> list[str]:
    """The runner releases with stored scores."""
    return sorted(p.name.removeprefix("claude-") for p in (GOLDEN / "scores").glob("claude-*"))


def recordings(repo: str) -> Path:
    return GOLDEN / "recordings" / repo


def runner_scores(result: dict[str, Any]) -> dict[str, Any]:
    """Per case folder: its score and each grader's verdict, from the runner's --json result."""
    return {c["dir"]: {"score": c["aggregates"]["score"],
                       "graders": {g["name"]: g["passed"] for g in c["arms"]["with"][0]["graders"]}}
            for c in result["cases"]}


def refresh_scores(claude: str, names: list[str] | None = None, record: bool = True) -> None:
    """One run of each scored suite through the runner and (with `record`) through `aam-eval run
    --record`, both on the same claude against the scripted model server: the runner's scores,
    stored per release, and our recordings."""
    from aam_eval_action.testing.model_server import ModelServer

    key = "sk-ant-test-corpus-scores"
    for name, scenarios in SCORED.items():
        if names and name not in names:
            continue
        with tempfile.TemporaryDirectory() as work, ModelServer(scenarios, api_key=key) as server:
            theirs = Path(shutil.copytree(CORPUS / name, Path(work) / "theirs"))
            out = Path(work) / "theirs.json"
            done = claude_plugin_eval(claude, theirs, Path(work) / "home", server.url, key, out,
                                      "--ablation", "none", "--runs", "1")
            if not out.is_file():
                raise SystemExit(f"{name}: the runner wrote no result\n{done.stdout}{done.stderr}")
            result = json.loads(out.read_text())
            stored = scores_path(name, runner_version(claude))
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_text(json.dumps({"claude": result.get("claudeVersion"), "cases": runner_scores(result)},
                                         indent=2, sort_keys=True) + "\n")
            print(f"wrote {stored}")
            if not record:
                continue
            ours = Path(shutil.copytree(CORPUS / name, Path(work) / "ours"))
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key, "PATH": str(Path(claude).parent)
                    + os.pathsep + env.get("PATH", "")}
            ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(ours), "--record",
                                  "--engine", "claude-code", "--ablation", "none", "--runs", "1", "--no-self-check",
                                  "-o", str(Path(work) / "ours.json")], env=env, capture_output=True, text=True,
                                 timeout=900, check=False)
            if not (Path(work) / "ours.json").is_file():
                raise SystemExit(f"{name}: aam-eval wrote no report\n{ran.stdout}{ran.stderr}")
            shutil.rmtree(recordings(name), ignore_errors=True)
            shutil.copytree(ours / "evals/cassettes", recordings(name))
            print(f"wrote {recordings(name)}")


def table_rows(release: str) -> list[str]:
    """The docs' table of the corpus: one row per repository, from its SOURCE.json and what the
    runner of `release` loads and refuses in it."""
    stored = json.loads(golden_path(release).read_text())["repositories"]
    rows = []
    for repo in repositories():
        source = json.loads((repo / "SOURCE.json").read_text())
        read = stored[repo.name]
        cases = len(read["loaded"]) + len(read["refused"])
        rows.append(f"| [{source['repository']}]({source['url']}) | {cases} | {len(read['loaded'])} | "
                    f"{len(read['refused'])} | {', '.join(source.get('shapes') or []) or '-'} | "
                    f"{', '.join(source.get('grader_types') or []) or '-'} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claude", action="append",
                        help="a claude executable, the pinned release first (default: claude on PATH)")
    args = parser.parse_args()
    given = args.claude or [shutil.which("claude") or "claude"]
    for claude in given:
        print(f"wrote {refresh_reads(claude)}")
    for n, claude in enumerate(given):  # our recordings with the first (the pinned release)
        refresh_scores(claude, record=n == 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
