"""`aam-eval label`: a person's verdict on the output in a case's current cassette.

The label is tied to that exact output and to the case's criteria (their hashes), so it
decides the case's verdict for as long as the recording and the criteria stay as they are.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from aam_eval_action.errors import EXIT_OK, UsageError
from aam_eval_action.fsutil import runner_checkout
from aam_eval_action.labels import Label, digest, labels_path, load_labels, save_labels, upsert
from aam_eval_action.loader import LoadedCase, LoadedPackage, load_repo
from aam_eval_action.settings import Overrides, resolve, runner_environment


def label(
    package: Path, case: str, verdict: str, reason: str, *, engine: str | None = None,
    model: str | None = None, by: str | None = None, output: str | None = None, attempt: int = 1,
    plugins: list[str] | None = None,
) -> int:
    from aam_eval_action.pipeline.judge import evidence
    from aam_eval_action.replay import agent_cassette
    from aam_eval_action.replay.agent_cassette import CassetteError

    environ = runner_environment()
    repo = load_repo(package, plugins)
    loaded, found = _find(repo.packages, case)
    if found.case.judge is None:
        raise UsageError(f"case {case!r} has no judge criteria: its checks decide, there is no judge "
                         "verdict to label")
    settings = resolve(loaded, Overrides(engine=engine, model=model), environ)
    path = agent_cassette.session_path(settings.cassettes, found.case.name, settings.cassette_stem)
    try:
        cassette = agent_cassette.load(path, settings.cassettes)
    except CassetteError as exc:
        raise UsageError(str(exc)) from None
    pair = f"{settings.engine} · {settings.model}"
    if cassette is None:
        raise UsageError(f"no recorded session of {case!r} on {pair} ({path}): record it, then label "
                         "what it produced")
    if not 1 <= attempt <= len(cassette.attempts):
        raise UsageError(f"--attempt {attempt}: the cassette holds {len(cassette.attempts)} attempt(s)")
    session = cassette.attempts[attempt - 1]
    judged = digest(evidence(found.case.input.prompt, session))
    if output is not None and output != judged:
        raise UsageError(f"the output of {case!r} on {pair} is not the one this label was copied for "
                         f"(it was re-recorded since): open the newest report and copy its line again")
    name = loaded.qualified(found.case.name)
    new = Label(case=name, engine=settings.engine, model=settings.model, output=judged,
                criteria=digest(found.case.judge.criteria.strip()), verdict=verdict,
                reason=reason.strip(), by=by or _who(loaded.layout.root, environ),
                at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    file = labels_path(loaded.layout.evals_dir)
    labels, replaced = upsert(load_labels(file), new)
    save_labels(file, labels, runner_checkout(environ))
    again = f" (replacing {replaced.by}'s {replaced.verdict})" if replaced else ""
    print(f"labelled {name} [{pair}] {verdict} by {new.by}{again}: {new.reason}")
    print(f"written to {file}; it decides the case while its output ({judged[:19]}…) and criteria "
          "stay the same")
    return EXIT_OK


def _find(packages: list[LoadedPackage], case: str) -> tuple[LoadedPackage, LoadedCase]:
    for loaded in packages:
        for lc in loaded.cases:
            if case in (lc.case.name, loaded.qualified(lc.case.name)):
                return loaded, lc
    known = sorted(p.qualified(c.case.name) for p in packages for c in p.cases)
    raise UsageError(f"no such case: {case}; known cases: {', '.join(known) or 'none'}")


def _who(root: Path, environ: Mapping[str, str]) -> str:
    """The person labelling: git's user.name in the repository, else $USER."""
    try:
        name = subprocess.run(["git", "config", "user.name"], cwd=root, capture_output=True, text=True,
                              timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        name = ""
    return name or environ.get("USER") or "unknown"
