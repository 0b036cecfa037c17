"""`aam-eval init`: a starter suite drafted for each skill that has no cases, for a person to review.

Per skill: trigger prompts that should fire it, near misses that belong to its nearest siblings
(by BM25), prompts no skill handles and a canary that names it, with a fixed stratified
train/test split as tags; and one or two tasks with deterministic checks and judge criteria.
The drafting model's calls are recorded like the judge's (`evals/cassettes/init/<skill>.yaml`),
so `init --replay` redrafts the same bytes offline. Nothing is written for a skill whose answer
cannot be used, and nothing at all until every skill has been drafted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from aam_eval_action.drafting.cases import Drafted, Draw, build, file_text
from aam_eval_action.drafting.record import recorded_draft
from aam_eval_action.drafting.request import Counts, DraftRefused, build_text
from aam_eval_action.drafting.skills import Sibling, SkillDoc, read_skills, siblings
from aam_eval_action.errors import EXIT_FAILED, EXIT_OK, UsageError
from aam_eval_action.fsutil import atomic_write, is_inside, runner_checkout
from aam_eval_action.loader import CONFIG_PATH, LoadedPackage, load_repo
from aam_eval_action.providers import JUDGE_PROVIDERS, PROVIDERS, provider_for_model
from aam_eval_action.settings import Overrides, RunSettings, resolve, runner_environment


@dataclass(frozen=True)
class InitArgs:
    """`aam-eval init`'s flags."""

    package: Path
    plugins: list[str] | None = None
    skills: list[str] | None = None
    engine: str | None = None
    model: str | None = None
    positives: int = 10
    negatives: int = 10
    tasks: int = 2
    siblings: int = 2
    replay: bool = False
    dry_run: bool = False
    force: bool = False
    format: str = "aam"
    """`aam` (our case files) or `claude-plugin-eval` (`evals/<case>/case.yaml`, graded as that
    runner grades)."""


@dataclass(frozen=True)
class SkillPlan:
    """What will be drafted for one skill."""

    doc: SkillDoc
    siblings: list[Sibling]
    counts: Counts


def init(args: InitArgs) -> int:
    repo = load_repo(args.package, args.plugins)
    writes: dict[Path, str] = {}
    refused = 0
    for loaded in repo.packages:
        plans, covered = _plan(loaded, args)
        _print_plan(loaded, plans, covered, args.format)
        if args.dry_run or not plans:
            continue
        s = resolve(loaded, Overrides(engine=args.engine, model=args.model))
        model, provider = _drafting_model(s, args.model)
        print(f"drafting with {model} ({provider}){' from the recordings' if args.replay else ''}")
        for plan in plans:
            staged = _draft(s, loaded, plan, model, provider, args)
            refused += staged is None
            writes |= staged or {}
        if writes and not (loaded.layout.root / CONFIG_PATH).is_file():
            writes[loaded.layout.root / CONFIG_PATH] = (
                json.dumps({"version": 1, "engine": s.engine}, indent=2) + "\n"
            )
    checkout = runner_checkout(runner_environment())
    for path, text in writes.items():
        atomic_write(path, text, checkout)
        print(f"wrote {path.relative_to(repo.root).as_posix()}")
    if not args.dry_run:
        print(
            f"{len(writes)} file(s) written; {refused} skill(s) refused. Review the drafts, then "
            "record them: aam-eval run --record --tags drafted"
        )
    return EXIT_FAILED if refused else EXIT_OK


def _plan(loaded: LoadedPackage, args: InitArgs) -> tuple[list[SkillPlan], list[str]]:
    """The skills to draft for, each with its siblings and how many cases of each kind; and the
    skills left as they are because they have cases."""
    docs = read_skills(loaded.layout)
    names = [d.name for d in docs]
    unknown = [s for s in args.skills or [] if s not in names]
    if unknown:
        raise UsageError(
            f"--skill {', '.join(unknown)}: not a skill of {loaded.layout.root.name} "
            f"(skills: {', '.join(names) or 'none'})"
        )
    targets = [c.case.target or "" for c in loaded.cases]
    covered = {t.removeprefix("skill:") for t in targets if t.startswith("skill:")}
    others = neighbor_docs(loaded)
    near = siblings(docs + [d for d in others if d.name not in names], args.siblings)
    plans, kept = [], []
    for doc in docs:
        if args.skills and doc.name not in args.skills:
            continue
        if doc.name in covered and not args.force:
            kept.append(doc.name)
            continue
        plans.append(SkillPlan(doc, near[doc.name], _counts(args, len(near[doc.name]))))
    return plans, kept


def neighbor_docs(loaded: LoadedPackage) -> list[SkillDoc]:
    """Skills beside the package that near misses may belong to: eval-config `neighbors`, else,
    in a marketplace, its other plugins' skills."""
    from aam_eval_action.catalog.installed import MARKETPLACE, resolve
    from aam_eval_action.drafting.skills import read_neighbors
    from aam_eval_action.settings import Overrides, crowding

    named = crowding(loaded, Overrides()).get("neighbors", ())
    if not named and loaded.several:
        named = resolve(loaded.layout, [MARKETPLACE], "init (the marketplace's other plugins)")
    return read_neighbors(loaded.layout, named)


def _counts(args: InitArgs, siblings: int) -> Counts:
    """About half the negatives and more are near misses; one or two are out of scope."""
    out = args.negatives if not siblings else (2 if args.negatives >= 6 else 1)
    near = math.ceil((args.negatives - out) / siblings) if siblings else 0
    return Counts(positives=max(args.positives - 1, 1), near_misses=near, out_of_scope=out, tasks=args.tasks)


def _print_plan(loaded: LoadedPackage, plans: list[SkillPlan], kept: list[str], fmt: str = "aam") -> None:
    where = loaded.plugin or loaded.layout.root.name
    print(f"{where}: {len(plans)} skill(s) to draft")
    for name in kept:
        print(f"  {name}: has cases; not drafted (--force redrafts)")
    for plan in plans:
        c = plan.counts
        print(f"  {plan.doc.name} ({plan.doc.path})")
        own = set(loaded.layout.skills())
        for sib in plan.siblings:
            kind = "sibling" if sib.name in own else "neighbour"
            print(f"    {kind} {sib.name}: BM25 {sib.score:g}, shares {', '.join(sib.shared)}")
        if not plan.siblings:
            print("    no sibling shares its words: its negatives are all out of scope")
        print(
            f"    {c.positives} should fire + 1 canary, {c.near_misses * len(plan.siblings)} near misses, "
            f"{c.out_of_scope} out of scope, {c.tasks} task(s)"
        )
        rel = _cases_rel(loaded)
        if fmt == "claude-plugin-eval":
            evals = loaded.layout.evals_dir.relative_to(loaded.layout.root).as_posix()
            print(f"    → {evals}/{plan.doc.name}-<kind>-<n>/case.yaml, a case each")
        else:
            print(f"    → {rel}/{plan.doc.name}-triggers.yaml, {rel}/{plan.doc.name}-tasks.yaml")


def _cases_rel(loaded: LoadedPackage) -> str:
    return loaded.cases_dir.relative_to(loaded.layout.root).as_posix()


def _drafting_model(s: RunSettings, flag: str | None) -> tuple[str, str]:
    """`--model`, else the judge's model: drafting goes through the judge's SDKs."""
    model = flag or s.judge_model
    provider = provider_for_model(model, s.judge_provider)
    if provider not in JUDGE_PROVIDERS:
        raise UsageError(
            f"drafting runs on {' or '.join(JUDGE_PROVIDERS)} models; {model} is a "
            f"{provider} model: pass --model (e.g. {PROVIDERS[JUDGE_PROVIDERS[0]].default_model})"
        )
    return model, provider


def _draft(
    s: RunSettings, loaded: LoadedPackage, plan: SkillPlan, model: str, provider: str, args: InitArgs
) -> dict[Path, str] | None:
    """The files of one skill's drafted suite, or None (said why) when nothing can be written."""
    name = plan.doc.name
    docs = {d.name: d for d in neighbor_docs(loaded)} | {d.name: d for d in read_skills(loaded.layout)}
    sibs = [docs[x.name] for x in plan.siblings]
    text = build_text(plan.doc, sibs, plan.counts)
    try:
        answer = recorded_draft(s, s.cassettes / "init" / f"{name}.yaml", provider, model, text, args.replay,
                                {"skill": name, "model": model},
                                f"run `aam-eval init --skill {name} --force` with a key")
        drafted = build(
            answer,
            Draw(
                model,
                plan.doc,
                sibs,
                plan.counts.positives,
                plan.counts.near_misses,
                plan.counts.out_of_scope,
                plan.counts.tasks,
            ),
        )
    except DraftRefused as exc:
        print(f"{name}: refused, nothing written: {exc}")
        return None
    for reason in drafted.dropped:
        print(f"{name}: dropped {reason}")
    if not any(c["draft"]["kind"] == "positive" for c in drafted.triggers):
        print(f"{name}: refused, nothing written: no drafted prompt that should fire passed the checks")
        return None
    if args.format == "claude-plugin-eval":
        from aam_eval_action.drafting.plugin_eval import suite_files

        files = suite_files(loaded.layout.evals_dir, plan.doc, drafted, model)
        return _checked(loaded, name, files, args.force)
    return _files(loaded, plan, drafted, model, args.force)


def _files(
    loaded: LoadedPackage, plan: SkillPlan, drafted: Drafted, model: str, force: bool
) -> dict[Path, str] | None:
    """Case files and input files to write; None when one would overwrite a file (without --force)."""
    name = plan.doc.name
    head = [
        f"Drafted by `aam-eval init` with {model} from {plan.doc.path} (sha256 {plan.doc.sha256[:12]}).",
        "Not reviewed yet: read each case, fix or delete it, then set `reviewed: true` in its `draft`.",
        "Redraft offline from the recording: aam-eval init --replay --force --skill " + name,
    ]
    kinds = [c["draft"]["kind"] for c in drafted.triggers]
    summary = ", ".join(f"{kinds.count(k)} {k}" for k in ("positive", "canary", "near-miss", "out-of-scope"))
    dropped = [f"Dropped by the checks: {d}" for d in drafted.dropped]
    files = {
        loaded.cases_dir / f"{name}-triggers.yaml": file_text(
            [*head, f"Trigger cases: {summary}.", *dropped], drafted.triggers
        )
    }
    if drafted.tasks:
        files[loaded.cases_dir / f"{name}-tasks.yaml"] = file_text(head, drafted.tasks)
    files |= {loaded.layout.evals_dir / "fixtures" / rel: text for rel, text in drafted.fixtures.items()}
    return _checked(loaded, name, files, force)


def _checked(loaded: LoadedPackage, name: str, files: dict[Path, str], force: bool) -> dict[Path, str] | None:
    """The files, unless one resolves outside the repository or would overwrite another text
    (without --force): then None, and why."""
    root = loaded.layout.root
    for path, text in files.items():
        if not is_inside(path, root):
            print(f"{name}: refused, nothing written: {path} resolves outside the repository")
            return None
        if path.is_file() and path.read_text(encoding="utf-8", errors="replace") != text and not force:
            print(
                f"{name}: kept, nothing written: {path.relative_to(root).as_posix()} is already there "
                "(--force redrafts)"
            )
            return None
    return files
