"""Learnt masks: a difference between two runs of the same session turned into the narrowest mask
that explains it, stored per CLI version, and refused when a store is hostile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from aam_eval_action.replay import traffic_store
from aam_eval_action.replay.traffic import TrafficError, apply_ignore
from aam_eval_action.replay.volatile import Mask, compile_masks, learn, learn_text, merge


@pytest.mark.parametrize(("old", "new", "described"), [
    # A duration moved inline into a usage block: no pattern of ours expects it there.
    ("tool_uses: 1 duration_ms: 714</usage>", "tool_uses: 1 duration_ms: 702</usage>",
     "a number after `duration_ms: `"),
    ("job: bx8776d425b918b8\n", "job: bx1b5aab7c46a9bf\n", "a 16-character alphanumeric id after `job: `"),
    ("agent a66f3e8a7c0288ffb done", "agent 0b12c9e8d7f6a5443 done", "a 17-character hex id after `agent `"),
    ("finished at 2026-11-24T02:58:00.786+00:00.", "finished at 2026-11-24T02:58:01.573+00:00.",
     "a date and time after `at `"),
    ('{"elapsed":12,"ok":true}', '{"elapsed":1500,"ok":true}', 'a number after `elapsed":`'),
    ("took 714ms", "took 1.2s", "a duration after `took `"),
    ("12 files scanned", "13 files scanned", "a number before ` files`"),
    ("at 09:14:03 local", "at 09:15:59 local", "a clock time after `at `"),
    ("id 3f2a9c1e-0b7d-4e8f-9a6b-1c2d3e4f5a6b ok", "id 0a1b2c3d-4e5f-4a6b-8c9d-0e1f2a3b4c5d ok",
     "a UUID after `id `"),
])
def test_a_difference_of_a_known_shape_beside_a_key_is_learnt(old: str, new: str, described: str) -> None:
    masks = learn_text(old, new, "case-a")
    assert masks is not None and len(masks) == 1
    assert masks[0].describe().startswith(described), masks[0].describe()
    assert masks[0].case == "case-a"
    patterns = compile_masks(masks)
    assert apply_ignore(old, patterns) == apply_ignore(new, patterns)


@pytest.mark.parametrize(("old", "new"), [
    ("the answer is blue", "the answer is red"),  # free text: a real change
    ("x: 1", "x: 2"),  # a one-letter key is not narrow enough
    ("3", "4"),  # nothing beside it
    ("result: PASS", "result: FAIL"),
    ("a.txt b.txt c.txt", "c.txt a.txt b.txt"),  # a listing in another order
    # Placeholders stand for one agent or call each: another one there is another agent
    # reporting (sub-agents finishing in another order), never a volatile value.
    ("<task-id>$AGENT1</task-id>", "<task-id>$AGENT2</task-id>"),
    ("<tool-use-id>toolu_aam002</tool-use-id>", "<tool-use-id>toolu_aam003</tool-use-id>"),
    ('Agent "Count a.txt" finished', 'Agent "Count b.txt" finished'),  # a name, not a 1-character id
])
def test_a_difference_no_narrow_mask_explains_is_not_learnt(old: str, new: str) -> None:
    assert learn_text(old, new) is None


def test_a_request_is_learnt_from_only_when_every_difference_is_a_masked_string() -> None:
    recorded = {"messages": [{"content": "duration_ms: 5 and job: ab12cd34"}], "max_tokens": 100}
    live = {"messages": [{"content": "duration_ms: 61 and job: ef56ab78"}], "max_tokens": 100}
    masks = learn(recorded, live)
    assert masks is not None and {m.shape for m in masks} == {"number", "hex"}
    assert learn(recorded, {**live, "max_tokens": 200}) is None  # a number field is not text
    assert learn(recorded, {**live, "messages": [*live["messages"], {"content": "more"}]}) is None
    assert learn(recorded, recorded) is None  # nothing to learn


def test_the_same_context_seen_with_other_lengths_widens_one_mask() -> None:
    a = Mask(shape="hex", before="job: ", length=(8, 8))
    b = Mask(shape="hex", before="job: ", length=(12, 16))
    merged = merge([a], [b])
    assert len(merged) == 1 and merged[0].length == (8, 16)
    assert merge(merged, [Mask(shape="number", before="job: ")]) != merged


def test_masks_are_kept_per_cli_version_beside_the_shared_entries(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    mask = Mask(shape="number", before="duration_ms: ", example="714 → 702", case="sub")
    assert traffic_store.add_masks(cassettes, "claude", "2.1.300", [mask], None)
    assert not traffic_store.add_masks(cassettes, "claude", "2.1.300", [mask], None)  # nothing new
    assert traffic_store.load_masks(cassettes, "claude", "2.1.300") == [mask]
    assert traffic_store.load_masks(cassettes, "claude", "2.1.330") == []  # another version learns its own
    listed = traffic_store.every_mask(cassettes)
    assert [(label, m.describe()) for label, m in listed] == [
        ("claude 2.1.300", "a number after `duration_ms: ` (seen: 714 → 702)")]


def test_a_hostile_mask_in_a_pull_requests_store_is_a_clear_error_never_a_regex(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    path = traffic_store.store_path(cassettes, "claude", "2.1.330")
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump({"version": 1, "cli": "claude", "cli_version": "2.1.330", "entries": {},
                                    "volatile": [{"shape": ".*", "before": ""}]}))
    with pytest.raises(TrafficError, match=r"volatile\.0\.shape"):
        traffic_store.load_masks(cassettes, "claude", "2.1.330")
    # Context is literal text: a regex in it matches only itself.
    mask = Mask(shape="number", before="(.*)")
    assert mask.pattern().sub("#", "(.*)12 and 34") == "(.*)# and 34"
    with pytest.raises(ValueError, match="one line"):
        Mask(shape="number", before="x" * 80)
    with pytest.raises(ValueError, match="range"):
        Mask(shape="id", before="id: ", length=(1, 10_000))


def test_a_learnt_mask_applies_everywhere_the_value_shows() -> None:
    [mask] = learn_text("duration_ms: 1</usage>", "duration_ms: 2</usage>") or []
    [pattern] = compile_masks([mask])
    assert isinstance(pattern, re.Pattern)
    assert apply_ignore({"a": ["x duration_ms: 99</usage>", "duration_ms: 7"]}, [pattern]) == {
        "a": ["x duration_ms: $IGNORED</usage>", "duration_ms: $IGNORED"]}
