"""Model traffic on disk: each case's exchanges in its agent cassette, the shared part stored once.

Claude Code sends the same ~30 KB system prompt and ~50 KB of tool schemas in every session,
so a traffic recording holding its own copy would be ~100 KB per case. Those entries are the
same for every case run by one CLI version, so they live in one store per cassettes directory
and CLI version, `<cassettes>/_shared/<cli>-<version>.yaml` (`_` cannot start a case name, so
it never collides with a case directory). Entries are keyed by name and content hash, so a
recording grows a store by union; it is written atomically, sorted, and left untouched when a
recording adds nothing new. After a run that recorded, entries no cassette refers to any more
(a re-recording replaced them) are pruned.

The store also keeps what the recordings of that version learnt about its volatile values
(`volatile`: see `replay/volatile.py`), so re-execution and every later recording of that
version mask them.

Cassettes come from the repository under test: the store is read with the safe YAML loader
and its shape checked, and a damaged one is a `TrafficError` naming the file.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.fsutil import atomic_write, dump_yaml
from aam_eval_action.replay.traffic import (
    ModelTraffic,
    TrafficError,
    attach_shared,
    detach_shared,
    parse_traffic,
    stored,
)
from aam_eval_action.replay.volatile import Mask, merge

STORE_DIR = "_shared"
STORE_VERSION = 1
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_REFERENCE = re.compile(r"\$shared: ([A-Za-z0-9_.-]+)")
# The cases of one run share a store: merges into it are serialised.
_LOCK = threading.Lock()
_CACHE: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def store_path(cassettes: Path, cli: str, version: str | None) -> Path:
    """`<cassettes>/_shared/<cli>-<version>.yaml` (characters outside `[A-Za-z0-9._-]` become `_`)."""
    name = f"{cli}-{version or 'unknown'}"
    return cassettes / STORE_DIR / (_UNSAFE.sub("_", name) + ".yaml")


def load_store(path: Path) -> dict[str, Any]:
    """The store's entries ({} when there is none); TrafficError when it is damaged."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TrafficError(f"{path}: cannot be read ({exc})") from None
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        cached = _CACHE.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    entries = _read(path)
    with _LOCK:
        _CACHE[path] = (stamp, entries)
    return entries


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (OSError, UnicodeDecodeError) as exc:
        raise TrafficError(f"{path}: cannot be read ({exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise TrafficError(f"{path}: damaged YAML{where}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise TrafficError(f"{path}: not a shared traffic store (expected a mapping with `entries`)")
    version = data.get("version")
    if not isinstance(version, int) or version > STORE_VERSION:
        raise TrafficError(f"{path}: shared store version {version!r} is not supported "
                           f"(this aam-eval reads {STORE_VERSION}); upgrade aam-eval-action")
    entries: dict[str, Any] = data["entries"]
    if not all(isinstance(key, str) for key in entries):
        raise TrafficError(f"{path}: damaged shared store: every entry key must be a string")
    return entries


def save_traffic(cassettes: Path, traffic: list[ModelTraffic], checkout: Path | None) -> list[dict[str, Any]]:
    """Each attempt's traffic as stored in its cassette; shared entries merged into the store
    (`checkout`: see `fsutil.atomic_write`)."""
    out = []
    for one in traffic:
        detached, entries = detach_shared(one)
        _merge(store_path(cassettes, one.cli, one.cli_version), one, entries, checkout)
        out.append(stored(detached))
    return out


def _merge(path: Path, traffic: ModelTraffic, entries: dict[str, Any], checkout: Path | None) -> None:
    """Add entries to the store; the file is rewritten only when something is new."""
    with _LOCK:
        try:
            existing = _read(path) if path.exists() else {}
        except TrafficError:
            existing = {}  # recording is how a damaged store gets repaired
        if all(key in existing for key in entries):
            return
        merged = {**existing, **entries}
        _write(path, traffic.cli, traffic.cli_version, merged, _raw_masks(path), checkout)


def _write(path: Path, cli: str, version: str | None, entries: dict[str, Any],
           masks: list[dict[str, Any]], checkout: Path | None) -> None:
    data: dict[str, Any] = {"version": STORE_VERSION, "cli": cli, "cli_version": version}
    if masks:
        data["volatile"] = masks
    data["entries"] = dict(sorted(entries.items()))
    atomic_write(path, dump_yaml(data), checkout)
    _CACHE.pop(path, None)


def merge_store(source: Path, into: Path) -> None:
    """A store's entries added to another's (a copy when there is none): its masks are kept,
    the source's learnt ones when it has none. A damaged source adds nothing."""
    import shutil

    try:
        entries = _read(source)
    except TrafficError:
        return
    with _LOCK:
        if not into.exists():
            into.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, into)
            _CACHE.pop(into, None)
            return
        try:
            existing = _read(into)
        except TrafficError:
            existing = {}
        if all(key in existing for key in entries):
            return
        data = yaml.load(source.read_text(encoding="utf-8"), Loader=_LOADER)
        _write(into, str(data.get("cli")), data.get("cli_version"), {**entries, **existing},
               _raw_masks(into) or _raw_masks(source), None)


def _raw_masks(path: Path) -> list[dict[str, Any]]:
    """The store's `volatile` list as written (kept as it is when entries are merged)."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    masks = data.get("volatile") if isinstance(data, dict) else None
    return masks if isinstance(masks, list) else []


def load_masks(cassettes: Path, cli: str, version: str | None) -> list[Mask]:
    """The volatile values learnt for this CLI version (none when there is no store yet);
    TrafficError naming the store and the entry when one is damaged."""
    from pydantic import ValidationError

    path = store_path(cassettes, cli, version)
    if not path.exists():
        return []
    load_store(path)  # the store's own shape, checked and cached
    masks = []
    for index, raw in enumerate(_raw_masks(path)):
        try:
            masks.append(Mask.model_validate(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in ("volatile", index, *err["loc"]))
            raise TrafficError(f"{path}: damaged learnt mask at {where}: {err['msg']}; delete that "
                               "entry (the next recording learns it again)") from None
    return masks


def add_masks(
    cassettes: Path, cli: str, version: str | None, masks: list[Mask], checkout: Path | None
) -> bool:
    """Add learnt masks to this CLI version's store; True when the store changed."""
    if not masks:
        return False
    path = store_path(cassettes, cli, version)
    with _LOCK:
        try:
            entries = _read(path) if path.exists() else {}
            known = [Mask.model_validate(m) for m in _raw_masks(path)]
        except (TrafficError, ValueError):
            entries, known = {}, []  # recording is how a damaged store gets repaired
        merged = merge(known, masks)
        if merged == known:
            return False
        dumped = [m.model_dump(mode="json", exclude_defaults=True) for m in merged]
        _write(path, cli, version, entries, dumped, checkout)
    return True


def every_mask(cassettes: Path) -> list[tuple[str, Mask]]:
    """(`<cli> <version>`, mask) for every store of a cassettes directory, for `check` and the
    report; a damaged store is skipped here (the run that reads it reports it)."""
    found = []
    for path in sorted((cassettes / STORE_DIR).glob("*.yaml")):
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("volatile"), list):
            continue
        label = f"{data.get('cli')} {data.get('cli_version')}"
        for raw in data["volatile"]:
            try:
                found.append((label, Mask.model_validate(raw)))
            except ValueError:
                continue
    return found


def load_traffic(cassettes: Path, recorded: list[dict[str, Any]]) -> list[ModelTraffic]:
    """Each attempt's traffic from its cassette, with its shared entries from the store.

    TrafficError when the traffic or the store is damaged (the message names the store).
    """
    out = []
    for data in recorded:
        try:
            bare = ModelTraffic.model_validate(data)
        except ValueError:
            out.append(parse_traffic(data))  # raises the format's own clear error
            continue
        path = store_path(cassettes, bare.cli, bare.cli_version)
        try:
            full = attach_shared(bare, load_store(path))
        except KeyError as exc:
            raise TrafficError(f"{path}: {exc.args[0]}; re-record the case") from None
        out.append(parse_traffic(stored(full)))
    return out


def prune_stores(cassettes: Path, checkout: Path | None) -> int:
    """Drop the store entries no session cassette refers to (a re-recording replaced them);
    the number dropped. A store whose references cannot all be read is left as it is."""
    stores = sorted((cassettes / STORE_DIR).glob("*.yaml"))
    if not stores:
        return 0
    used: set[str] = set()
    for path in cassettes.glob("*/*.session.yaml"):
        try:
            used.update(_REFERENCE.findall(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            return 0  # an unreadable cassette may refer to anything: keep everything
    dropped = 0
    with _LOCK:
        for path in stores:
            try:
                data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
                entries = _read(path)
            except (OSError, UnicodeDecodeError, yaml.YAMLError, TrafficError):
                continue
            kept = {key: value for key, value in entries.items() if key in used}
            if len(kept) == len(entries):
                continue
            dropped += len(entries) - len(kept)
            atomic_write(path, dump_yaml({**data, "entries": kept}), checkout)
            _CACHE.pop(path, None)
    return dropped
