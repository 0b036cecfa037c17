"""A fifth engine, added as docs/architecture.md ("Adding an engine") says: its adapter module
(`adapter.py`), its skill-listing module (`listing.py`), its registry entry (`INFO`), and its
tests (tests/test_adding_an_engine.py). Its "CLI" (`cli.py`) is a small agent loop of its own:
it lists the workspace's skills to the model, offers a `Skill` tool, loads the skill the model
picks, and prints its events as JSON lines."""

from __future__ import annotations

from aam_eval_action.engines.registry import EngineInfo

INFO = EngineInfo(
    "stub-cli", "anthropic", "claude-sonnet-4-6", "support.stub_engine.adapter:StubCli", cli="stub-cli",
    listing="support.stub_engine.listing", skills_dir=".stub/skills", host="claude",
    listing_unit="characters (every skill in full; no budget)",
)
