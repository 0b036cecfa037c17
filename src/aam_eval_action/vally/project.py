"""A repository's Vally suites: its configs, every eval spec they find, every stimulus, and
what each named suite selects."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aam_eval_action.errors import ConfigError, UsageError
from aam_eval_action.importers.common import case_name
from aam_eval_action.vally import config as vally_config
from aam_eval_action.vally import experiment
from aam_eval_action.vally.config import Suite, VallyConfig
from aam_eval_action.vally.experiment import Experiment
from aam_eval_action.vally.spec import SpecFile, Stimulus, is_spec, read


@dataclass
class Project:
    root: Path
    configs: list[VallyConfig]
    files: list[SpecFile]
    problems: list[str]
    """Configs and experiment files that could not be read."""
    experiments: list[Experiment] = field(default_factory=list)

    def stimuli(self) -> list[Stimulus]:
        return [s for f in self.files for s in f.stimuli]

    def suites(self) -> dict[str, tuple[VallyConfig, Suite]]:
        found: dict[str, tuple[VallyConfig, Suite]] = {}
        for config in self.configs:
            for name, suite in config.suites.items():
                found.setdefault(name, (config, suite))
        return found

    def selected(self, name: str) -> list[Stimulus]:
        """The stimuli suite `name` selects, as `vally eval --suite` does: its `evals` globs narrow
        the files (relative to its config), its `filter` the stimuli by tag."""
        suites = self.suites()
        if name not in suites:
            have = ", ".join(sorted(suites)) or "none"
            raise UsageError(f"--suite {name}: no such suite in .vally.yaml (suites: {have})")
        config, suite = suites[name]
        out = []
        for spec in self.files:
            if not _in_scope(config, spec.rel):
                continue
            if suite.evals is not None:
                rel = spec.rel[len(config.folder) + 1 :] if config.folder else spec.rel
                if not any(vally_config.glob_matches(g, rel) for g in suite.evals):
                    continue
            out += [s for s in spec.stimuli if _filtered(suite, s)]
        return out


def _in_scope(config: VallyConfig, rel: str) -> bool:
    return not config.folder or rel.startswith(config.folder + "/")


def _filtered(suite: Suite, stimulus: Stimulus) -> bool:
    """Every key of the filter must match one of its values (a tag of several values: any)."""
    return suite.filter is None or all(
        set(stimulus.tags.get(k, ())) & set(values) for k, values in suite.filter.items()
    )


def read_project(root: Path, skills: dict[str, str]) -> Project:
    """Every Vally spec of the repository at `root`, read; names made unique: a stimulus whose
    name another file shares is qualified by its eval's."""
    configs, problems = vally_config.configs(root)
    if not configs:
        configs = [VallyConfig("", None)]
    files: list[SpecFile] = []
    seen: set[str] = set()
    for config in configs:
        for rel in vally_config.eval_files(root, config):
            if rel in seen or vally_config.owner(configs, rel) is not config:
                continue
            seen.add(rel)
            if _is_spec_file(root, rel):
                files.append(read(root, rel, config, skills))
    experiments = _experiments(root, configs, skills, files, seen, problems)
    _unique(files)
    return Project(root, configs, files, problems, experiments)


def _experiments(root: Path, configs: list[VallyConfig], skills: dict[str, str], files: list[SpecFile],
                 seen: set[str], problems: list[str]) -> list[Experiment]:
    """The experiment files: a without/with pair's evals read with its skilled variant (those no
    config found) and run with and without their skills; another kind only listed, with why."""
    found: list[Experiment] = []
    for rel in experiment.find(root):
        try:
            ex = experiment.read(root, rel)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        found.append(ex)
        if ex.why_not is not None:
            continue
        for eval_rel in ex.evals:
            if eval_rel in seen:
                for spec in (f for f in files if f.rel == eval_rel):
                    for s in spec.stimuli:
                        if s.case is not None:
                            s.case.both_arms()
                            s.experiment = ex.rel
                continue
            if _is_spec_file(root, eval_rel):
                seen.add(eval_rel)
                files.append(read(root, eval_rel, vally_config.owner(configs, eval_rel), skills, ex))
    return found


def _is_spec_file(root: Path, rel: str) -> bool:
    from aam_eval_action.layouts.common import load_json

    try:
        return is_spec(load_json(root, rel).data)
    except ConfigError:
        return True  # unreadable: read() reports it with the line


def _unique(files: list[SpecFile]) -> None:
    """Case names and titles: the stimulus's own, qualified by its eval where two share one."""
    count: dict[str, int] = {}
    for s in (s for f in files for s in f.stimuli):
        count[case_name(s.name)] = count.get(case_name(s.name), 0) + 1
    taken: set[str] = set()
    for s in (s for f in files for s in f.stimuli):
        if s.case is None:
            continue
        name, title = case_name(s.name), s.case.title
        if count[name] > 1:
            name, title = case_name(s.eval_name, s.name), f"{s.eval_name}::{s.name}"[:200]
        base, n = name, 2
        while name in taken:
            name = case_name(base, str(n))
            n += 1
        taken.add(name)
        root = s.case.files_root
        s.case = s.case.model_copy(update={"name": name, "title": title})
        if root is not None:
            s.case.imported_from(root)
