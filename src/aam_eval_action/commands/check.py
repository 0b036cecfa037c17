"""`aam-eval check`: static validation of the package; no agent, no model.

It says what it found: the layout, each plugin with the skills, agents, commands, hooks files
and MCP servers it will install, what was skipped and why, the lint warnings (errors with
`--strict`), what each engine of the run gets converted, then the cases.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aam_eval_action.engines.install import chosen_hooks, conversion_warnings
from aam_eval_action.engines.registry import DEFAULT_ENGINE, ENGINES, check_engine_name
from aam_eval_action.errors import EXIT_OK, EXIT_USAGE
from aam_eval_action.loader import LoadedPackage, LoadedRepo, load_repo
from aam_eval_action.package import Finding, HookSource, PackageLayout
from aam_eval_action.pipeline.plan import eval_file_lines
from aam_eval_action.render.console import neutralize_commands
from aam_eval_action.settings import Overrides, check_judge, resolve_matrix


def check(package: Path, plugins: list[str] | None = None, strict: bool = False) -> int:
    repo = load_repo(package, plugins)
    engines: list[str] = []
    for loaded in repo.packages:
        check_engine_name(loaded.config.engine, loaded.config_location("engine"))
        judge_at = loaded.config_location("judge") if loaded.config.judge else None
        for settings in resolve_matrix(loaded, Overrides(), {}):  # every engine + model of the run
            check_judge(settings, judge_at)
            engines.append(settings.engine)
    # What is printed quotes the repository's files: no line may form a workflow command.
    for line in describe(repo, list(dict.fromkeys(engines))):
        print(neutralize_commands(line))
    listed = listing_findings(repo)
    for finding in listed:
        print(neutralize_commands(f"warning {finding}"))
    warnings = [f for f in repo.findings if f.level == "warning"] + listed
    errors = [e for p in repo.packages for e in p.errors]
    for err in errors:
        print(neutralize_commands(str(err)), file=sys.stderr)
    for loaded in repo.packages:
        for line in eval_file_lines(loaded):
            print(neutralize_commands(line))
        for lc in loaded.cases:
            source = f", {lc.source}" if lc.source else ""
            shown = loaded.qualified(lc.case.title or lc.case.name)
            print(neutralize_commands(f"ok  {shown}  ({lc.file}:{lc.line}{source})"))
            for check, why in lc.skipped:
                print(neutralize_commands(f"    not honoured: {check}: {why}"))
    for line in volatile_lines(repo) + no_cases_lines(repo):
        print(neutralize_commands(line))
    cases = sum(len(p.cases) for p in repo.packages)
    said = f", {len(warnings)} warning(s)" + (" (errors with --strict)" if warnings and strict else "")
    print(f"{cases} valid case(s), {len(errors)} error(s){said if repo.kind != 'aam' or listed else ''}")
    return EXIT_OK if not errors and not (strict and warnings) else EXIT_USAGE


def listing_findings(repo: LoadedRepo) -> list[Finding]:
    """Warnings about the skill listings: a description a CLI cuts or refuses, and a package that
    alone fills more than half a listing budget."""
    from aam_eval_action.catalog import lint
    from aam_eval_action.catalog.installed import package_skills
    found: list[Finding] = []
    for loaded in repo.packages:
        for file, line, message in lint(package_skills(loaded.layout, DEFAULT_ENGINE)):
            finding = Finding(file, line, message)
            if finding not in found:
                found.append(finding)
    return found


def no_cases_lines(repo: LoadedRepo) -> list[str]:
    """What has no eval cases (the repository, or some of its plugins), and what to do."""
    from aam_eval_action.pipeline.suite import INIT_TODO

    bare = [p.plugin or p.layout.name for p in repo.packages if not p.cases and not p.errors]
    if not bare:
        return []
    if len(bare) == len(repo.packages):
        return [f"no eval cases: {INIT_TODO}"]
    return [f"plugins without eval cases: {', '.join(bare)} ({INIT_TODO})"]


def describe(repo: LoadedRepo, engines: list[str]) -> list[str]:
    """What the layout holds, as `check` prints it (an AAM package: one line)."""
    if repo.kind == "aam":
        return [f"layout: aam ({repo.source})"]
    lines = [f"layout: {repo.kind}" + (f" ({repo.source})" if repo.source else "")]
    for finding in repo.findings:
        if finding.level == "skipped" and not any(finding in p.layout.findings for p in repo.packages):
            lines.append(f"skipped {finding}")
    for loaded in repo.packages:
        lines += _plugin(loaded, engines)
    lines += [f"warning {f}" for f in repo.findings if f.level == "warning"]
    return lines


def _plugin(loaded: LoadedPackage, engines: list[str]) -> list[str]:
    layout = loaded.layout
    where = layout.base or "."
    cases = f"cases in {loaded.cases_dir.relative_to(layout.root).as_posix()}/"
    lines = [f"plugin {layout.plugin} ({where}, {layout.kind}; {cases})"]
    skills = sorted(layout.skill_dirs.items())
    lines += [f"  skill   {name:<24} {rel or '.'}/SKILL.md" for name, rel in skills]
    lines += [f"  agent   {a.name:<24} {a.path} ({a.format})" for a in layout.agents]
    lines += [f"  command {c.name:<24} {c.path}" for c in layout.commands]
    lines += [f"  hooks   {h.dialect:<24} {h.path} ({', '.join(h.events)}) for {_takers(layout, h)}"
              for h in layout.hooks]
    lines += [f"  mcp     {name:<24} {_mcp_source(layout)}" for name in sorted(layout.mcp)]
    lines += [f"  context {rel}" for rel in layout.context]
    if layout.exclude_tools:
        lines.append(f"  exclude {', '.join(layout.exclude_tools)} (Gemini CLI's tools)")
    if not (layout.skill_dirs or layout.agents or layout.commands or layout.hooks or layout.mcp):
        lines.append("  (nothing to install)")
    lines += [f"  skipped {f}" for f in layout.findings if f.level == "skipped"]
    for engine in engines:
        reads = tuple(ENGINES[engine].hook_dialects)
        lines += [f"  {engine}: {w}" for w in conversion_warnings(layout, reads)]  # type: ignore[arg-type]
    return lines


def _takers(layout: PackageLayout, source: HookSource) -> str:
    """The engines that install a hooks file (as written, or converted when it is the closest
    dialect they have)."""
    takers = [name for name, info in ENGINES.items()
              if source in chosen_hooks(layout, info.hook_dialects)]  # type: ignore[arg-type]
    return ", ".join(takers) or "no engine (another host's file is closer for each)"


def _mcp_source(layout: PackageLayout) -> str:
    return ", ".join(layout.mcp_files) or "-"


def volatile_lines(repo: LoadedRepo) -> list[str]:
    """What re-execution ignores beside `rerun-ignore`: the volatile values the recordings of
    each cassettes directory learnt, per CLI version, and the recordings left unstable."""
    from aam_eval_action.replay.agent_cassette import CassetteError, load
    from aam_eval_action.report import learnt_masks
    from aam_eval_action.settings import cassettes_dir

    lines = []
    for loaded in repo.packages:
        cassettes = cassettes_dir(loaded, None)
        prefix = f"{loaded.key}: " if loaded.several else ""
        for mask in learnt_masks(cassettes):
            learnt = f" (learnt from {mask.case})" if mask.case else ""
            lines.append(f"{prefix}ignored on re-execution with {mask.cli}: {mask.mask}{learnt}")
        for path in sorted(cassettes.glob("*/*.session.yaml")):
            try:
                cassette = load(path, cassettes)
            except CassetteError:
                continue  # `run` names a damaged cassette where it is read
            checks = cassette.self_check or [] if cassette else []
            unstable = next((c.unstable for c in checks if c.unstable), None)
            if unstable:
                rel = path.relative_to(cassettes).as_posix()
                lines.append(f"{prefix}unstable recording {rel}: not re-executed ({unstable})")
    return lines
