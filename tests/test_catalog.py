"""Skill listings without an agent: each CLI's rule, `aam-eval budget`, neighbours as hostile
input, `check`'s warnings, and a pull request that pushes a skill out of Claude Code's listing.

The rules themselves are confirmed against the real CLIs in tests/test_catalog_e2e.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aam_eval_action.catalog import Skill, predict

from conftest import ROOT, aam_eval, installed
from support import crowded


def _skills(n: int, size: int = 300, prefix: str = "skill") -> list[Skill]:
    return [Skill(f"{prefix}-{i:03d}", ("word " * size)[:size].strip()) for i in range(n)]


def test_claude_code_sizes_its_budget_from_the_model_and_keeps_descriptions_in_listing_order() -> None:
    assert predict("claude-code", [], "claude-sonnet-4-6").budget == 8_000  # 200k × 4 × 1%
    assert predict("claude-code", [], "claude-opus-4-7").budget == 30_000  # 1M × 3 × 1%
    assert predict("claude-code", [], "claude-sonnet-4-6[1m]").budget == 40_000
    assert predict("claude-code", [], "claude-sonnet-4-6", env={"SLASH_COMMAND_TOOL_CHAR_BUDGET": "3000"}).budget == 3000
    sixty = predict("claude-code", _skills(60), "claude-sonnet-4-6")
    full = [e.skill.name for e in sixty.of("package") if e.shown == "full"]
    assert 0 < len(full) < 10 and full == [f"skill-{i:03d}" for i in range(len(full))] and sixty.over
    assert all(e.shown == "full" for e in sixty.of("cli")[:11])
    assert all(e.shown == "full" for e in predict("claude-code", _skills(60), "claude-opus-4-7").of("package"))
    [long] = predict("claude-code", [Skill("long", "x" * 2000)], "claude-opus-4-7").of("package")
    assert (long.shown, long.description_shown) == ("truncated", 1536)


def test_codex_shortens_every_description_then_lists_names_then_leaves_skills_out() -> None:
    fits = predict("codex", _skills(5), "gpt-5.5")
    assert (fits.budget, fits.unit) == (5_440, "tokens") and not fits.over
    shortened = predict("codex", _skills(200), "gpt-5.5")
    cuts = {e.description_shown for e in shortened.of("package")}
    assert all(e.shown == "truncated" for e in shortened.of("package")) and max(cuts) - min(cuts) <= 8
    assert shortened.used <= 5_440
    crowded_out = predict("codex", _skills(500), "gpt-5.5")
    shown = [e.shown for e in crowded_out.of("package")]
    assert set(shown) == {"name-only", "left-out"} and shown.index("left-out") > 300
    [capped] = predict("codex", [Skill("long", "y" * 1100)], "gpt-5.5").of("package")
    assert (capped.shown, capped.description_shown) == ("truncated", 1024)


def test_copilot_lists_whole_entries_up_to_its_fixed_budget_then_names_and_refuses_long_descriptions() -> None:
    listing = predict("copilot", [*_skills(60), Skill("too-long", "z" * 1025), Skill("bad-yaml", "a: b",
                                                                                   strict_yaml=False)], "gpt-5.5")
    shown = {e.skill.name: e.shown for e in listing.of("package")}
    assert listing.budget == 15_000 and sum(s == "full" for s in shown.values()) == 37  # 405 a skill
    assert shown["too-long"] == shown["bad-yaml"] == "left-out" and shown["skill-059"] == "name-only"
    assert predict("copilot", _skills(60), "claude-opus-4-7").budget == 15_000  # whatever the model
    assert predict("copilot", _skills(60), "gpt-5.5", env={"SKILL_CHAR_BUDGET": "1e3"}).budget == 1  # parseInt
    assert predict("copilot", _skills(60), "gpt-5.5", env={"SKILL_CHAR_BUDGET": "-5"}).budget == 15_000


def test_gemini_cli_lists_everything() -> None:
    listing = predict("gemini-cli", _skills(300, 2000), "gemini-2.5-pro")
    assert listing.budget is None and all(e.shown == "full" for e in listing.entries)


def test_budget_names_the_skills_a_crowded_marketplace_shows_by_name_only(tmp_path: Path) -> None:
    root = crowded.write(tmp_path / "acme-skills")
    out = aam_eval("budget", "--package", str(root), "--plugin", "ledger-tools", "--engine", "claude-code,copilot")
    assert out.code == 0, out.err
    blocks = [line for line in out.out.splitlines() if not line.startswith(" ")]
    assert blocks == [  # per engine and model, the headline first
        "claude-code · claude-sonnet-4-6 · plugin ledger-tools: of your 2 skills, 2 by name only; "
        "of all 105 installed (the CLI's own 13 included), 94 by name only, 11 in full",
        "copilot · claude-sonnet-4-6 · plugin ledger-tools: of your 2 skills, 1 by name only, 1 in full; "
        "of all 94 installed (the CLI's own 2 included), 61 by name only, 33 in full"]
    assert "claude-code 2.1.330 · claude-sonnet-4-6 · context 200,000 tokens" in out.out
    assert "neighbours: 90 (90 name only)" in out.out
    assert "vendor-invoice-reconciler" in out.out and "NAME ONLY" in out.out
    wide = aam_eval("budget", "--package", str(root), "--plugin", "ledger-tools", "--engine", "claude-code",
                    "--context", "1m", "--json")
    [listing] = json.loads(wide.out)
    assert listing["budget"] == 40_000 and listing["context_window"] == 1_000_000
    assert listing["shown"]["package"] == {"full": 2, "truncated": 0, "name-only": 0, "left-out": 0}
    assert listing["headline"].startswith("claude-code · claude-sonnet-4-6 · plugin ledger-tools: of your 2 skills, 2 in full;")
    assert aam_eval("budget", "--package", str(root), "--context", "lots").code == 2


@pytest.mark.parametrize("entry, said", [
    ("../elsewhere", "escapes the repository"),
    ("/etc", "is absolute"),
    ("evals/no-such-folder", "no such folder"),
    ("plugins/ledger-tools/skills", "has the name of one of the package's own skills"),
])
def test_a_neighbors_entry_outside_the_repository_or_clashing_is_refused_with_where(
        tmp_path: Path, entry: str, said: str) -> None:
    root = crowded.write(tmp_path / "acme-skills")
    config = json.loads((root / "evals/eval-config.json").read_text())
    (root / "evals/eval-config.json").write_text(json.dumps(config | {"neighbors": [entry]}, indent=2))
    out = aam_eval("run", "--package", str(root), "--plugin", "ledger-tools", "--replay")
    assert out.code == 2 and "evals/eval-config.json:" in out.err and said in out.err, out.err


def test_a_neighbor_folder_that_links_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    root = crowded.write(tmp_path / "acme-skills")
    (tmp_path / "secret").mkdir()
    (root / "evals/vendored").symlink_to(tmp_path / "secret")
    config = json.loads((root / "evals/eval-config.json").read_text())
    (root / "evals/eval-config.json").write_text(json.dumps(config | {"neighbors": ["evals/vendored"]}))
    out = aam_eval("run", "--package", str(root), "--plugin", "ledger-tools", "--replay")
    assert out.code == 2 and "leaves the repository" in out.err, out.err


def test_check_warns_about_a_description_a_cli_cuts_and_a_package_that_fills_half_a_budget(tmp_path: Path) -> None:
    pkg = Path(shutil.copytree(ROOT / "tests/fixtures/routing-skills", tmp_path / "pkg"))
    notes = pkg / "skills/release-notes/SKILL.md"
    text = notes.read_text()
    head, rest = text.split("description:", 1)
    notes.write_text(head + "description: " + json.dumps("Release notes for a tagged version. " * 30)
                     + "\n" + rest.split("\n", 1)[1])
    for i in range(14):  # a package of many skills with long descriptions
        folder = pkg / f"skills/extra-{i:02d}"
        folder.mkdir()
        (folder / "SKILL.md").write_text(f"---\nname: extra-{i:02d}\ndescription: {json.dumps('An extra skill. ' * 25)}\n---\n")
    out = aam_eval("check", "--package", str(pkg))
    assert ("warning skills/release-notes/SKILL.md:3: description: 1,079 characters in the skill listing; "
            "Codex cuts it to 1,021 characters and '...'; Copilot CLI does not load the skill at all") in out.out
    assert "alone take" in out.out and "of claude-code's 8,000-characters skill listing at" in out.out
    assert aam_eval("check", "--package", str(pkg), "--strict").code == 2


@pytest.mark.cli
def test_a_pull_request_that_lengthens_a_description_shows_the_skill_that_lost_its_listing(tmp_path: Path) -> None:
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    root = crowded.write(tmp_path / "acme-skills")
    config = json.loads((root / "evals/eval-config.json").read_text())
    config |= {"neighbors": ["plugins/git-flow", "evals/vendored"], "sweep": []}
    vendored = root / "evals/vendored/invoice-matcher"  # another repository's skill, vendored
    vendored.mkdir(parents=True)
    (vendored / "SKILL.md").write_text(crowded.skill_md("invoice-matcher", "Match invoices to payments.",
                                                        "1. Pair each invoice with a payment."))
    (root / "evals/eval-config.json").write_text(json.dumps(config, indent=2))
    keys = {"ANTHROPIC_API_KEY": "sk-ant-test-pr-crowd"}
    skill = root / "plugins/ledger-tools/skills/vendor-invoice-reconciler/SKILL.md"

    def record(name: str) -> Path:
        with ModelServer([{"match": "*", "agent": [{"route": {}}, {"text": "Done."}]}],
                         api_key=tuple(keys.values())) as server:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, **keys}
            subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "invoices-match-payments",
                            "--package", str(root), "--plugin", "ledger-tools", "--record", "--no-self-check",
                            "-o", str(tmp_path / name)], env=env, capture_output=True, text=True, timeout=300,
                           check=False)
        return tmp_path / name

    base = record("base.json")
    longer = crowded.PACKAGE["vendor-invoice-reconciler"] + (
        " It also reads remittance advice, credit notes and debit memos, handles foreign-currency invoices "
        "at the booking date's rate, groups payments by supplier and due date, explains every unmatched "
        "line with the nearest candidate, and keeps an audit trail of each match it proposes.") * 3
    skill.write_text(crowded.skill_md("vendor-invoice-reconciler", longer, "1. Load the files."))
    head = record("head.json")
    assert json.loads(base.read_text())["cases"][0]["routed_to"] == "vendor-invoice-reconciler"

    comment = aam_eval("comment", str(head), "--base", str(base))
    assert comment.code == 0, comment.err
    assert "lost its place in the skill listing" in comment.out
    assert "| vendor-invoice-reconciler | claude-code · claude-sonnet-4-6 | in full → **name only** |" in comment.out
    assert "moved to another skill" in comment.out
    assert "vendor-invoice-reconciler → **invoice-matcher** (a neighbour)" in comment.out

    # The HTML report draws the listing against its budget, and names the skill shown by name only.
    from support.browser import running_browser, show

    assert aam_eval("view", str(head), "-o", str(tmp_path / "page.html")).code == 0
    for browser in running_browser():
        page = show(browser, tmp_path / "page.html")
        assert page.js("document.querySelector('#listings h2').innerText") == "Skill listings"
        shown = page.js("[...document.querySelectorAll('.listing-skills li')].map(li => li.innerText)")
        assert "vendor-invoice-reconciler by name only" in shown and "expense-report-auditor in full" in shown
        widths = page.js("[...document.querySelectorAll('.listing-bar rect')].map(r => +r.getAttribute('width'))")
        assert len(widths) == 4 and all(w > 0 for w in widths[:3])  # the CLI's, the package's, the neighbours'
        assert page.js("document.querySelector('.listing p.muted').innerText").endswith(
            "of 8,000 characters · 3 neighbours, 0 by name only")
        assert page.problems() == []


def test_init_draws_near_misses_from_the_marketplaces_other_plugins(tmp_path: Path) -> None:
    root = crowded.write(tmp_path / "acme-skills")
    shutil.rmtree(root / "evals/cases")
    config = json.loads((root / "evals/eval-config.json").read_text())
    del config["neighbors"], config["sweep"]  # a marketplace: its other plugins are the neighbours
    (root / "evals/eval-config.json").write_text(json.dumps(config))
    plan = aam_eval("init", "--package", str(root), "--plugin", "ledger-tools", "--dry-run")
    assert plan.code == 0, plan.err
    assert "sibling vendor-invoice-reconciler: BM25" in plan.out
    assert "neighbour cost-cost-spike-finder: BM25" in plan.out and "neighbour k8s-manifest-lint: BM25" in plan.out


def test_with_names_neighbours_from_anywhere_and_a_sweep_needs_a_pool(tmp_path: Path) -> None:
    root = crowded.write(tmp_path / "acme-skills")
    vendored = shutil.copytree(root / "plugins/git-flow/skills", tmp_path / "elsewhere/skills")
    pkg = Path(shutil.copytree(ROOT / "tests/fixtures/routing-skills", tmp_path / "pkg"))
    out = aam_eval("budget", "--package", str(pkg), "--engine", "copilot", "--with", str(vendored))
    assert out.code == 0 and "neighbours: 2 (2 in full)" in out.out, out.err
    alone = aam_eval("run", "--package", str(pkg), "--replay", "--sweep", "0,5")
    assert alone.code == 2 and "--sweep (no `neighbors`: the marketplace's other plugins): 'marketplace'" in alone.err
    with pytest.raises(SystemExit):  # argparse: "a size is listed twice"
        aam_eval("run", "--package", str(pkg), "--sweep", "0,0")
