"""`aam-eval import`: other tools' eval files written out as our case YAML, for a maintainer who
moves over.

Each imported case becomes `evals/cases/[<plugin>/]<name>.yaml` with the same fields it had in
memory (so its fingerprint, and so its cassettes, stay the same: running from either gives the
same result), headed by where it came from and what could not be honoured. Its input files are
copied under `evals/` at the path the case names. eval-config is written when there is none.
A file already there is kept unless it is the same (`--force` replaces it).
"""

from __future__ import annotations

import json
from pathlib import Path

from aam_eval_action.errors import EXIT_OK, EXIT_USAGE, UsageError
from aam_eval_action.fsutil import atomic_write, dump_yaml, is_inside
from aam_eval_action.loader import CONFIG_PATH, LoadedCase, LoadedPackage, load_repo


def import_cases(package: Path, plugins: list[str] | None = None, force: bool = False) -> int:
    repo = load_repo(package, plugins)
    written = kept = 0
    for loaded in repo.packages:
        for err in loaded.errors:
            print(f"not imported: {err}")
        for case in (c for c in loaded.cases if c.source):
            done = _write_case(loaded, case, force)
            written += done
            kept += not done
    config = repo.root / CONFIG_PATH
    if not config.is_file() and written:
        cfg = repo.packages[0].config.model_dump(mode="json", by_alias=True, include={"version", "engine"})
        atomic_write(config, json.dumps(cfg, indent=2) + "\n", None)
        print(f"wrote {CONFIG_PATH}")
    print(f"{written} case(s) written, {kept} kept as they were")
    errors = any(p.errors for p in repo.packages)
    return EXIT_USAGE if errors or (kept and not force and not written) else EXIT_OK


def _write_case(loaded: LoadedPackage, found: LoadedCase, force: bool) -> bool:
    """Write one case (and its input files); False when a different file is already there."""
    layout = loaded.layout
    dest = loaded.cases_dir / f"{found.case.name}.yaml"
    text = _yaml(found)
    for rel in found.case.input.files:
        _copy_input(layout.fixtures(found.case.files_root) / rel, layout.evals_dir / rel, layout.root, force)
    _inside(dest, layout.root)
    if dest.is_file() and dest.read_text(encoding="utf-8") != text and not force:
        print(f"kept {_shown(dest, layout.root)}: it differs from {found.file}; --force replaces it")
        return False
    atomic_write(dest, text, None)
    print(f"wrote {_shown(dest, layout.root)} from {found.file}:{found.line} ({found.source})")
    return True


def _yaml(found: LoadedCase) -> str:
    head = [f"# Imported from {found.file}:{found.line} ({found.source}) by aam-eval import."]
    head += [f"# Not honoured: {check}: {why}" for check, why in found.skipped]
    data = found.case.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    return "\n".join(head) + "\n" + dump_yaml(data)


def _copy_input(src: Path, dest: Path, root: Path, force: bool) -> None:
    """An input file, copied under `evals/` at the path its case names."""
    _inside(dest, root)
    if dest.resolve() == src.resolve():
        return
    data = src.read_bytes()
    if dest.is_file() and dest.read_bytes() != data and not force:
        raise UsageError(f"{dest}: already there with other content; --force replaces it")
    atomic_write(dest, data, None)


def _inside(dest: Path, root: Path) -> None:
    """Nothing is written through a link that leaves the repository."""
    if not is_inside(dest, root):
        raise UsageError(f"{dest}: resolves outside the repository ({root}); nothing was written there")


def _shown(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
