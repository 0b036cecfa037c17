"""Prices and the spending cap's parts that need no agent: the price list, eval-config `prices`,
`max-usd` validation, and the cap holding across concurrent cases."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from aam_eval_action.pipeline.spend_cap import Budget, Estimate, OverBudget
from aam_eval_action.pricing import Price, price_of, tokens_cost
from aam_eval_action.session import Usage
from aam_eval_action.testing.packages import simple_case, write_package

from conftest import aam_eval


def test_a_model_takes_the_price_of_the_longest_family_it_belongs_to() -> None:
    assert price_of("claude-sonnet-4-6") == Price(3.0, 15.0)
    assert price_of("gpt-5-mini-2026") == Price(0.25, 2.0)  # not gpt-5's
    assert price_of("my-local-model") is None
    assert price_of("my-local-model", {"my-local-model": Price(1, 2)}) == Price(1, 2)


def test_cached_input_costs_a_tenth_and_openai_counts_it_inside_input_tokens() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_input_tokens=1_000_000)
    price = Price(2.0, 10.0)
    assert tokens_cost(usage, price, "anthropic") == pytest.approx(2.0 + 0.2 + 1.0)
    assert tokens_cost(usage, price, "openai") == pytest.approx(0.0 + 0.2 + 1.0)


def test_the_cap_admits_one_paying_case_at_a_time_and_refuses_what_does_not_fit() -> None:
    budget = Budget(0.10)
    inside: list[int] = []
    peak: list[int] = []

    def case() -> None:
        try:
            with budget.paid(Estimate(0.03, "recording")):
                inside.append(1)
                peak.append(len(inside))
                budget.charge(0.035)  # each overruns its estimate a little
                inside.pop()
        except OverBudget:
            pass

    threads = [threading.Thread(target=case) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(peak) == 1
    assert budget.spent == pytest.approx(0.105)  # the cap plus one case's overrun, at most
    left = r"estimated \$0.0300 \(recording\) but \$0.0000 of max-usd \$0.1 is left"
    with pytest.raises(OverBudget, match=left), budget.paid(Estimate(0.03, "recording")):
        pass
    with pytest.raises(OverBudget, match="no price is known"), \
            Budget(1.0).paid(Estimate(None, "no price is known for the model x")):
        pass
    with Budget(None).paid(Estimate(None, "")):  # no cap: nothing is refused
        pass


def test_max_usd_and_prices_are_validated_where_they_are_set(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")], config={"max-usd": -1})
    result = aam_eval("check", "--package", str(pkg))
    assert result.code == 2 and "max-usd" in result.err and "greater than 0" in result.err
    config = pkg / "evals/eval-config.json"
    config.write_text(json.dumps({"version": 1, "engine": "claude-code", "prices": {"m": {"input": 1}}}))
    result = aam_eval("check", "--package", str(pkg))
    assert result.code == 2 and "prices.m.output" in result.err
    with pytest.raises(SystemExit):
        aam_eval("run", "--package", str(pkg), "--max-usd", "0")
