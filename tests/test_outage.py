"""An outage is an error, never a verdict, wherever this tool calls the model itself.

The agent CLIs' side is tests/test_outage_e2e.py (all four engines, a server down for one case
and failing every third request once for the others). Here: what the recording proxy makes of
a stream cut mid-answer and of errors a retry got past; the judge, the simulated user and a
`claude plugin eval` judge's plain call through the real SDKs against a scripted server that
stays down; `aam-eval init`'s drafts (`tune`'s proposer asks through the same call); and how a
case the API kept from running is counted by the report, the diff, the comment and the gate.
"""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.commands.action import exit_code
from aam_eval_action.diff import diff_reports
from aam_eval_action.github.inputs import ActionInputs
from aam_eval_action.model_calls import ask_plain
from aam_eval_action.pipeline import judge, simulated_user
from aam_eval_action.redact import Redactor
from aam_eval_action.render.comment import render_comment
from aam_eval_action.render.text import format_text
from aam_eval_action.replay.outage import ApiDown, outage
from aam_eval_action.replay.proxy import RecordingProxy, Upstream
from aam_eval_action.replay.traffic import ModelTraffic, Normaliser, Paths
from aam_eval_action.report import summarize
from aam_eval_action.testing.model_server import ModelServer

from conftest import aam_eval
from support.reports import case, report

FIXTURES = Path(__file__).parent / "fixtures"
DOWN = {"status": 529, "message": "Overloaded"}
SAID = "the model API answered 529 overloaded_error 5 times"
"""The SDKs try a call five times (four retries) before they give up."""


def _through_proxy(server: ModelServer, tmp_path: Path, prompts: list[str]) -> ModelTraffic:
    """Each prompt as an agent turn through a recording proxy, retried once on an error (as a
    CLI does): the session's traffic."""
    paths = Paths(tmp_path / "ws", tmp_path / "home", tmp_path)
    with RecordingProxy(Upstream(server.url, key=server.api_key), Normaliser(paths, Redactor({}))) as proxy:
        for prompt in prompts:
            body = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "stream": True,
                    "messages": [{"role": "user", "content": prompt}],
                    "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]}
            for _ in range(2):
                request = urllib.request.Request(proxy.url + "/v1/messages", json.dumps(body).encode(), {
                    "content-type": "application/json", "x-api-key": "stand-in", "anthropic-version": "2023-06-01"})
                try:
                    with urllib.request.urlopen(request, timeout=10) as answer:
                        data = answer.read()
                    if b"message_stop" in data:
                        break
                except (urllib.error.URLError, OSError):
                    continue
    return proxy.traffic()  # stopped: every answer handed out is kept


@pytest.mark.parametrize("fault", [DOWN, {"status": 429}, {"status": 503}, {"cut": True}])
def test_an_api_that_stays_down_ends_the_session_and_says_what_it_answered(fault: dict[str, Any], tmp_path: Path) -> None:
    scenarios = [{"match": "Count the rows", "down": fault}, {"match": "Say hello", "agent": [{"text": "Hello."}]}]
    with ModelServer(scenarios) as server:
        traffic = _through_proxy(server, tmp_path, ["Say hello", "Count the rows"])
    said = {529: "529 overloaded_error twice", 429: "429 rate_limit_error twice", 503: "503 api_error twice",
            None: "a stream cut mid-answer twice"}[fault.get("status")]
    assert outage(traffic) == f"the model API answered {said}; last at turn 1"
    if fault.get("cut"):
        assert [e.response.cut for e in traffic.exchanges] == [None, True, True]


def test_errors_a_retry_got_past_are_weather_not_an_outage(tmp_path: Path) -> None:
    with ModelServer([{"match": "*", "agent": [{"text": "Done."}]}], flaky=2) as server:
        traffic = _through_proxy(server, tmp_path, ["one", "two", "three"])
    statuses = [(e.response.status, e.response.cut) for e in traffic.exchanges]
    assert (529, None) in statuses and statuses[-1] == (200, None), statuses
    assert outage(traffic) is None


def _env(monkeypatch: pytest.MonkeyPatch, server: ModelServer) -> None:
    for provider, url in (("ANTHROPIC", server.url), ("OPENAI", server.url + "/v1")):
        monkeypatch.setenv(f"{provider}_BASE_URL", url)
        monkeypatch.setenv(f"{provider}_API_KEY", server.api_key)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_judge_the_simulated_user_and_a_plain_call_raise_api_down(provider: str) -> None:
    kind = "overloaded_error" if provider == "anthropic" else "server_error"
    model = "claude-sonnet-4-6" if provider == "anthropic" else "gpt-5.5"
    with ModelServer([{"match": "Summarise the notes", "down": DOWN, "judge": {"result": "PASS"}}]) as server:
        url = server.url + ("" if provider == "anthropic" else "/v1")
        calls = [
            lambda: judge.ask(provider=provider, model=model, text="Task: Summarise the notes", base_url=url,
                              api_key=server.api_key),
            lambda: simulated_user.ask(provider=provider, model=model, text="Summarise the notes", base_url=url,
                                       api_key=server.api_key),
            lambda: ask_plain(provider, model, "grade", "Summarise the notes", url, server.api_key),
        ]
        for call in calls:
            with pytest.raises(ApiDown, match=f"^the model API answered 529 {kind} 5 times$"):
                call()
        assert len(server.requests) == 3 * 5


def test_init_drafts_nothing_for_a_skill_whose_api_stays_down_and_records_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    repo = Path(shutil.copytree(FIXTURES / "routing-skills", tmp_path / "repo"))
    drafts = yaml.safe_load((FIXTURES / "routing-skills-drafts.yaml").read_text())
    drafts[0] = {**drafts[0], "down": DOWN}
    with ModelServer(drafts) as server:
        _env(monkeypatch, server)
        result = aam_eval("init", "--package", str(repo), "--positives", "4", "--negatives", "4", "--tasks", "1")
    assert result.code == 1
    assert result.out.count(SAID) == 1, result.out
    recorded = "".join(p.read_text() for p in (repo / "evals").rglob("*.yaml") if "cassettes" in p.parts)
    assert recorded and "overloaded" not in recorded and "529" not in recorded


def test_a_case_not_run_is_counted_apart_and_never_a_regression() -> None:
    down = case("json-row-count", "ERROR", reason="the model API answered 529 overloaded_error 11 times")
    down.api_down = True
    base = report([case("json-row-count"), case("csv-summary")])
    head = report([down, case("csv-summary")])
    head.summary = summarize(head.cases)
    assert head.summary.api_down == 1 and head.summary.errored == 1 and head.summary.graded == 1
    diff = diff_reports(base, head)
    assert diff.regressions == 0 and diff.counts["not-run"] == 1 and diff.head.api_down == 1
    assert diff.head.pass_rate == 1.0
    assert "1 not run: the model API was down" in format_text(diff)
    assert "**1 not run: the model API was down**" in render_comment(diff)
    inputs = ActionInputs.model_validate({"fail-on": "regression"})
    assert exit_code(inputs, diff, interrupted=False) == 1  # an error: nothing was measured
    assert exit_code(inputs.model_copy(update={"fail_on": "never"}), diff, interrupted=False) == 0
