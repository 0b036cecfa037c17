"""A Vally eval spec (a YAML file whose top level has `stimuli`), validated as Vally validates,
each stimulus read into one case of ours with its graders.

The reference is https://microsoft.github.io/vally/reference/eval-spec/ and the lint rules of
https://microsoft.github.io/vally/reference/cli/lint/ (0.17):

* since 0.17 an unknown stimulus field is refused (release notes 0.17, #1176);
* `unknown-grader-type`, with "did you mean" (guides/debugging-evals);
* every duration needs a unit: `5m`, `300s`, `30000ms` (release notes 0.4);
* `invalid-scoring-weight-key`: a weight naming a grader type no stimulus uses;
* `skill-invocation`: "A skill cannot appear in both lists" (reference/graders/skill-invocation);
* `duplicate-stimulus-name`.

`config:` and `defaults:` are both read (the docs' pages say `config`, the release notes from
0.9 and public suites `defaults`). Tags of the eval pass to its stimuli, a stimulus's own key
winning (guides/authoring-eval-suites). A stimulus's score is the weighted mean of its
graders' scores, weights keyed by grader type (`scoring.weights`, 1 for a type not named);
with `scoring.threshold` it passes at that score, without one every grader must pass
(concepts/scoring).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.importers.common import build, case_name
from aam_eval_action.layouts.common import Json, load_json
from aam_eval_action.spec import Case
from aam_eval_action.vally.config import VallyConfig
from aam_eval_action.vally.experiment import Experiment, skills_for
from aam_eval_action.vally.grader_model import TYPES, VallyGrader
from aam_eval_action.vally.limits import constraints, duration, executor_notes

FORMAT = "vally"
TOP_KEYS = (
    "name",
    "description",
    "version",
    "type",
    "tags",
    "environment",
    "config",
    "defaults",
    "scoring",
    "stimuli",
    "artifacts",
    "metadata",
)
STIMULUS_KEYS = (
    "name",
    "description",
    "prompt",
    "turns",
    "tags",
    "environment",
    "graders",
    "rubric",
    "constraints",
    "runs",
    "timeout",
    "config",
    "defaults",
    "attachments",
    "artifacts",
    "simulation",
    "metadata",
)
"""The stimulus fields Vally 0.17 reads; any other is refused (release notes 0.17, #1176)."""
CONFIG_KEYS = (
    "runs",
    "timeout",
    "model",
    "judge_model",
    "executor",
    "judge_reasoning_effort",
    "reasoning_effort",
    "judge_provider",
)
GRADER_KEYS = ("type", "name", "weight", "turn", "config")
ENVIRONMENT_KEYS = ("skills", "files", "commands", "commandTimeout", "env", "mcpServers", "git")


def is_spec(data: Any) -> bool:
    """Only a file with `stimuli` is a Vally spec (waza's `tasks` and skill-validator's
    `scenarios` share the file name)."""
    return isinstance(data, dict) and "stimuli" in data


@dataclass
class Stimulus:
    """One stimulus read: our case, its graders, where it was written and what is not honoured."""

    eval_name: str
    name: str
    rel: str
    line: int | None
    tags: dict[str, tuple[str, ...]]
    case: Case | None = None
    graders: tuple[VallyGrader, ...] = ()
    skipped: dict[str, str] = field(default_factory=dict)
    skills: dict[str, str] = field(default_factory=dict)
    """The skills its environment names: name → folder (relative to the repository)."""
    experiment: str | None = None
    """The experiment file that runs it with and without its skills."""

    @property
    def item_id(self) -> str:
        """Vally's id of the stimulus in `results.jsonl`: `<eval>::<stimulus>`."""
        return f"{self.eval_name}::{self.name}"


@dataclass
class SpecFile:
    """One eval spec: its stimuli, or why it was refused as a whole."""

    rel: str
    eval_name: str
    stimuli: list[Stimulus] = field(default_factory=list)
    error: str | None = None
    notes: list[tuple[int | None, str]] = field(default_factory=list)
    """What of the file is not run, each at its line: a stimulus no grader here can grade."""


def read(root: Path, rel: str, config: VallyConfig, skills: dict[str, str],
         variant: Experiment | None = None) -> SpecFile:
    """The spec at `rel`: every stimulus, or the file's error. `skills`: the repository's skills
    (name → folder), which the stimuli's `environment.skills` name by path. `variant`: an
    experiment whose skilled variant's skills and overrides apply, its stimuli run with and
    without them."""
    try:
        doc = load_json(root, rel)
    except ConfigError as exc:
        return SpecFile(rel, Path(rel).stem, error=str(exc))
    try:
        return _read(root, doc, config, skills, variant)
    except ConfigError as exc:
        name = doc.data.get("name") if isinstance(doc.data, dict) else None
        return SpecFile(rel, str(name or _default_name(rel)), error=str(exc))


def _default_name(rel: str) -> str:
    parts = rel.split("/")
    return parts[-2] if len(parts) > 1 and parts[-1] in ("eval.yaml", "eval.yml") else Path(rel).stem


def _read(root: Path, doc: Json, config: VallyConfig, skills: dict[str, str],
          variant: Experiment | None = None) -> SpecFile:
    data = doc.data
    if not is_spec(data):
        raise ConfigError(f"{doc.at()}: not a Vally spec: no stimuli")
    eval_name = str(data.get("name") or _default_name(doc.rel))
    stimuli = data.get("stimuli")
    if not isinstance(stimuli, list) or not stimuli:
        raise ConfigError(f"{doc.at('stimuli')}: stimuli: a list of at least one stimulus")
    noted = {f"{k}": "not a field of Vally's eval spec (0.17): not read" for k in data if k not in TOP_KEYS}
    settings = _settings(doc, data)
    if variant is not None:  # "overrides merge on top of the eval spec's defaults" (experiment-file)
        kept = ("runs", "timeout")
        noted |= {f"experiment {variant.name}: overrides.{k}": "the run's own is used"
                  for k in variant.overrides if k not in kept}
        given = {k: v for k, v in variant.overrides.items() if k in kept}
        settings |= _checked_settings(doc, given, ("defaults",))
    scoring = _scoring(doc, data.get("scoring"))
    tags = _tags(doc, data.get("tags"), ("tags",))
    root_env = _environment(doc, data.get("environment"), ("environment",), config)
    if variant is not None:
        root_env = {**root_env, "skills": skills_for(variant, doc.rel)}
    used: set[str] = set()
    names: dict[str, int] = {}
    out = SpecFile(doc.rel, eval_name)
    for i, raw in enumerate(stimuli):
        where = ("stimuli", i)
        if not isinstance(raw, dict):
            raise ConfigError(f"{doc.at(*where)}: a stimulus is a mapping (name, prompt, graders)")
        unknown = [k for k in raw if k not in STIMULUS_KEYS]
        if unknown:
            hint = difflib.get_close_matches(str(unknown[0]), STIMULUS_KEYS, n=1)
            said = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ConfigError(
                f"{doc.at(*where, unknown[0])}: unknown stimulus field {unknown[0]!r}{said} "
                "(Vally refuses unknown stimulus fields since 0.17); remove it"
            )
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{doc.at(*where)}: stimulus name: required (a non-empty text)")
        if name in names:
            raise ConfigError(
                f"{doc.at(*where, 'name')}: duplicate-stimulus-name: {name!r} is also stimulus "
                f"{names[name] + 1}; give each its own name"
            )
        names[name] = i
        unrun: list[str] = []
        graders = _graders(doc, raw.get("graders"), where, scoring, used, raw.get("rubric"), unrun)
        used.update(unrun)
        given = dict(noted)
        if unrun:
            given["graders"] = (f"{', '.join(dict.fromkeys(unrun))}: from a grader plugin, not run here; "
                                "the score is over the other graders (partial)")
        stimulus = _stimulus(
            root, doc, raw, where, eval_name, tags, settings, scoring[1], graders, root_env, config, skills,
            given, weights=scoring[0],
        )
        if unrun and not stimulus.graders:  # nothing here could grade it: never a PASS
            out.notes.append((stimulus.line, f"stimulus {name!r}: every grader comes from a grader plugin "
                                             f"({', '.join(dict.fromkeys(unrun))}): not run here"))
            continue
        if variant is not None and stimulus.case is not None:
            stimulus.case.both_arms()
            stimulus.experiment = variant.rel
        out.stimuli.append(stimulus)
    unused = [t for t in scoring[0] if t not in used]
    if unused:
        raise ConfigError(
            f"{doc.at('scoring', 'weights', unused[0])}: invalid-scoring-weight-key: a weight "
            f"for {unused[0]!r}, which no grader of this eval is; remove it or fix the type"
        )
    return out


def _settings(doc: Json, data: dict[str, Any]) -> dict[str, Any]:
    both = [k for k in ("config", "defaults") if k in data]
    if len(both) == 2:
        raise ConfigError(
            f"{doc.at('defaults')}: config and defaults are two spellings of one thing; keep defaults"
        )
    key = both[0] if both else None
    raw = data.get(key) if key else None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{doc.at(key or 'defaults')}: {key}: a mapping (runs, timeout, model, executor)")
    settings = _checked_settings(doc, raw, (key or "defaults",))
    return settings


def _checked_settings(doc: Json, raw: dict[str, Any], where: tuple[str | int, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if k not in CONFIG_KEYS:
            raise ConfigError(
                f"{doc.at(*where, k)}: unknown key {k!r}; {where[-1]} takes {', '.join(CONFIG_KEYS)}"
            )
        out[k] = v
    if "runs" in out and (
        not isinstance(out["runs"], int) or isinstance(out["runs"], bool) or out["runs"] < 0
    ):
        raise ConfigError(f"{doc.at(*where, 'runs')}: runs: a whole number (0 lints only)")
    if "timeout" in out:
        out["timeout"] = duration(out["timeout"], doc.at(*where, "timeout"))
    executor = out.get("executor")
    if isinstance(executor, dict):
        executor = executor.get("name")
    if "executor" in out and (not isinstance(executor, str) or not executor.strip()):
        # Vally refuses a blank executor since 0.14 (#969); any other name is resolved when the
        # eval runs (0.12, #812): an `--executor-plugin`'s, or an error there.
        raise ConfigError(f"{doc.at(*where, 'executor')}: executor: a name (copilot-sdk, or a plugin's)")
    return out


def _scoring(doc: Json, raw: Any) -> tuple[dict[str, float], float | None]:
    if raw is None:
        return {}, None
    if not isinstance(raw, dict):
        raise ConfigError(f"{doc.at('scoring')}: scoring: a mapping (weights, threshold)")
    weights = raw.get("weights") or {}
    if not isinstance(weights, dict):
        raise ConfigError(f"{doc.at('scoring', 'weights')}: weights: a mapping of grader type → weight")
    out: dict[str, float] = {}
    for kind, weight in weights.items():
        if kind not in TYPES and (not isinstance(kind, str) or _near(kind)):  # else a plugin's type
            raise ConfigError(
                f"{doc.at('scoring', 'weights', kind)}: invalid-scoring-weight-key: {kind!r} is no "
                f"grader type{_did_you_mean(str(kind))}"
            )
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise ConfigError(f"{doc.at('scoring', 'weights', kind)}: a weight is a number of at least 0")
        out[str(kind)] = float(weight)
    threshold = raw.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1
    ):
        raise ConfigError(f"{doc.at('scoring', 'threshold')}: threshold: a number from 0 to 1")
    return out, None if threshold is None else float(threshold)


def _near(kind: str) -> bool:
    """A type one edit or so from a built-in one: a typo, not a plugin's type."""
    return bool(difflib.get_close_matches(kind, TYPES, n=1, cutoff=0.85))


def _did_you_mean(kind: str) -> str:
    close = difflib.get_close_matches(kind, TYPES, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _tags(doc: Json, raw: Any, where: tuple[str | int, ...]) -> dict[str, tuple[str, ...]]:
    """Tag → its values (one, or a list of them)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{doc.at(*where)}: tags: a mapping of key → value")
    out: dict[str, tuple[str, ...]] = {}
    for k, v in raw.items():
        values = v if isinstance(v, list) else [v]
        if any(isinstance(x, dict | list) for x in values):
            raise ConfigError(f"{doc.at(*where, k)}: tags.{k}: a value or a list of values")
        out[str(k)] = tuple(
            "true" if x is True else "false" if x is False else "" if x is None else str(x) for x in values
        )
    return out


def _environment(doc: Json, raw: Any, where: tuple[str | int, ...], config: VallyConfig) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        named = config.environments.get(raw)
        if named is None:
            have = ", ".join(sorted(config.environments)) or "none"
            raise ConfigError(
                f"{doc.at(*where)}: environment {raw!r} is not one of "
                f"{config.rel or '.vally.yaml'}'s environments ({have}); define it or fix the name"
            )
        if not isinstance(named, dict):
            raise ConfigError(f"{config.at('environments', raw)}: environment {raw!r}: a mapping")
        return {**named, "_from_config": raw}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{doc.at(*where)}: environment: a mapping (skills, files, commands, env, mcpServers, "
            "git), or the name of a .vally.yaml environment"
        )
    for k in raw:
        if k not in ENVIRONMENT_KEYS:
            raise ConfigError(
                f"{doc.at(*where, k)}: unknown environment key {k!r}; an environment takes "
                f"{', '.join(ENVIRONMENT_KEYS)}"
            )
    for name, server in (
        (raw.get("mcpServers") or {}).items() if isinstance(raw.get("mcpServers"), dict) else ()
    ):
        if isinstance(server, dict) and "timeout" in server:
            duration(server["timeout"], doc.at(*where, "mcpServers", name, "timeout"))
    return dict(raw)


def _graders(
    doc: Json,
    raw: Any,
    where: tuple[str | int, ...],
    scoring: tuple[dict[str, float], float | None],
    used: set[str],
    rubric: Any,
    unrun: list[str],
) -> tuple[VallyGrader, ...]:
    """The stimulus's graders; `unrun` gets the types that come from a `--grader-plugin`."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"{doc.at(*where, 'graders')}: graders: a list of {{type, config}}")
    weights, threshold = scoring
    criteria = (
        tuple(str(r) for r in rubric) if isinstance(rubric, list) else ((str(rubric),) if rubric else ())
    )
    out: list[VallyGrader] = []
    seen: set[str] = set()
    plugin = unrun
    for j, g in enumerate(raw):
        at = (*where, "graders", j)
        if not isinstance(g, dict):
            raise ConfigError(f"{doc.at(*at)}: a grader is a mapping (type, config)")
        kind = g.get("type")
        if not isinstance(kind, str) or not kind.strip():
            raise ConfigError(f"{doc.at(*at)}: a grader needs a type")
        if kind not in TYPES:
            if _near(kind):  # a typo of a built-in type, as Vally's lint says
                raise ConfigError(
                    f"{doc.at(*at, 'type')}: unknown-grader-type: {kind!r}{_did_you_mean(kind)}"
                )
            plugin.append(kind)  # a --grader-plugin's type: shown not run, the score without it
            continue
        for k in g:
            if k not in GRADER_KEYS:
                raise ConfigError(
                    f"{doc.at(*at, k)}: invalid-grader-config: unknown key {k!r}; a grader takes "
                    f"{', '.join(GRADER_KEYS)}"
                )
        options = g.get("config") or {}
        if not isinstance(options, dict):
            raise ConfigError(f"{doc.at(*at, 'config')}: config: a mapping")
        _check_options(doc, str(kind), options, at)
        used.add(str(kind))
        name = g.get("name") or _derived_name(str(kind), options)
        base, n = str(name), 2
        while name in seen:
            name = f"{base}-{n}"
            n += 1
        seen.add(str(name))
        turn = g.get("turn")
        if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool) or turn < 0):
            raise ConfigError(f"{doc.at(*at, 'turn')}: turn: a 0-based turn number")
        weight = g.get("weight", weights.get(str(kind), 1.0))
        out.append(
            VallyGrader(
                type=kind,
                name=str(name),
                weight=float(weight),
                turn=turn,
                options=options,
                rubric=criteria,
                threshold=threshold,
            )
        )
    return tuple(out)


def _check_options(doc: Json, kind: str, options: dict[str, Any], at: tuple[str | int, ...]) -> None:
    if kind == "skill-invocation":
        required = options.get("required") or []
        disallowed = options.get("disallowed") or []
        both = (
            sorted(set(map(str, required)) & set(map(str, disallowed)))
            if isinstance(required, list) and isinstance(disallowed, list)
            else []
        )
        if both:
            raise ConfigError(
                f"{doc.at(*at, 'config')}: skill-invocation: {both[0]!r} is both required and "
                "disallowed; a skill cannot appear in both lists"
            )
    if kind == "wall-time" and "max" in options:
        duration(options["max"], doc.at(*at, "config", "max"))
    if kind in ("run-command", "program") and "timeout" in options:
        duration(options["timeout"], doc.at(*at, "config", "timeout"))


def _derived_name(kind: str, options: dict[str, Any]) -> str:
    """A grader's name from its config, as Vally derives one since 0.13 (kebab-case, ≤ 60)."""
    detail = next(
        (
            options[k]
            for k in ("substring", "value", "pattern", "path", "command", "program")
            if isinstance(options.get(k), str)
        ),
        "",
    )
    text = re.sub(r"[^a-z0-9]+", "-", f"{kind} {detail}".lower()).strip("-")
    return text[:60].rstrip("-") or kind


def _stimulus(
    root: Path,
    doc: Json,
    raw: dict[str, Any],
    where: tuple[str | int, ...],
    eval_name: str,
    eval_tags: dict[str, tuple[str, ...]],
    settings: dict[str, Any],
    threshold: float | None,
    graders: tuple[VallyGrader, ...],
    root_env: dict[str, Any],
    config: VallyConfig,
    skills: dict[str, str],
    skipped: dict[str, str],
    weights: dict[str, float] | None = None,
) -> Stimulus:
    name = str(raw["name"])
    tags = {**eval_tags, **_tags(doc, raw.get("tags"), (*where, "tags"))}
    prompt, later = _prompt(doc, raw, where)
    own = {}
    for key in ("config", "defaults"):
        if isinstance(raw.get(key), dict):
            own = _checked_settings(doc, raw[key], (*where, key))
    merged = {**settings, **own}
    for key in ("runs", "timeout"):
        if key in raw:
            merged |= _checked_settings(doc, {key: raw[key]}, where)
    env = {
        **{k: v for k, v in root_env.items()},
        **_environment(doc, raw.get("environment"), (*where, "environment"), config),
    }
    folder = doc.rel.rsplit("/", 1)[0] if "/" in doc.rel else ""
    named_skills = _skills(root, doc, env.get("skills"), (*where, "environment", "skills"), folder, skills)
    named = list(named_skills)
    limited = constraints(doc, raw.get("constraints"), (*where, "constraints"), (weights or {}, threshold))
    max_turns, max_duration, limits = limited
    graders = (*graders, *limits)
    git = _git(root, doc, env.get("git"), (*where, "environment", "git"), folder)
    session_env = _session_env(doc, env.get("env"), (*where, "environment", "env"))
    servers = _servers(doc, env.get("mcpServers"), (*where, "environment", "mcpServers"))
    staged = _files(root, doc, env.get("files"), (*where, "environment", "files"), folder)
    commands = env.get("commands") or []
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise ConfigError(f"{doc.at(*where, 'environment', 'commands')}: commands: a list of shell commands")
    for key in ("attachments", "artifacts", "simulation"):
        if raw.get(key):
            skipped[key] = "not honoured here"
    if "model" in merged:
        skipped["defaults.model"] = "the run's model (eval-config or --model) is used"
    skipped |= executor_notes(merged.get("executor"))
    runs = merged.get("runs", 1)
    fields: dict[str, Any] = {
        "name": case_name(name),
        "title": name[:200],
        "description": None,
        "input": {"prompt": prompt, **({"turns": later} if later else {})},
        "tags": list(dict.fromkeys(t for k, vs in tags.items() for v in vs if (t := _case_tag(k, v)))),
        "repeat": runs if runs >= 1 else None,
        "timeout": min(merged.get("timeout", 120.0), max_duration or float("inf")),
    }
    if max_turns is not None:  # the CLI's own turn limit (Claude Code, Gemini CLI; the others say so)
        fields["execution"] = {"max-turns": max_turns}
    if len(named) == 1 or named:
        fields["target"] = f"skill:{named[0]}"
    case = build(doc, where, fields).staging(staged, commands).with_session(session_env, servers)
    if git is not None:
        case.from_git(*git)
    if len(named) != 1:  # several, or none (Vally then loads none): those, and no other
        case.with_skills(named)
    line = doc.line(*where)
    return Stimulus(
        eval_name,
        name,
        doc.rel,
        line,
        tags,
        case,
        graders,
        skipped,
        skills=named_skills,
    )


def _case_tag(key: str, value: str) -> str | None:
    text = re.sub(r"[^A-Za-z0-9._:/+-]+", "-", f"{key}:{value}" if value else key).strip("-")
    return text[:64] if text and text[0].isalnum() else None


def _prompt(doc: Json, raw: dict[str, Any], where: tuple[str | int, ...]) -> tuple[str, list[str]]:
    prompt, turns = raw.get("prompt"), raw.get("turns")
    if turns is not None:
        if prompt is not None:
            raise ConfigError(f"{doc.at(*where, 'turns')}: prompt and turns exclude each other; keep one")
        if not isinstance(turns, list) or not turns:
            raise ConfigError(f"{doc.at(*where, 'turns')}: turns: a list of messages")
        texts = [t.get("prompt") if isinstance(t, dict) else t for t in turns]
        if not all(isinstance(t, str) and t.strip() for t in texts):
            raise ConfigError(f"{doc.at(*where, 'turns')}: turns: each a non-empty message")
        return str(texts[0]), [str(t) for t in texts[1:]]
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{doc.at(*where)}: stimulus {raw.get('name')!r}: prompt or turns is required")
    return prompt, []


def _skills(
    root: Path, doc: Json, raw: Any, where: tuple[str | int, ...], folder: str, skills: dict[str, str]
) -> dict[str, str]:
    """The skills a stimulus's `environment.skills` names (name → folder), by path relative to
    the eval file (a skill's folder or its SKILL.md; Vally resolves them against the eval
    spec's folder). A path with no SKILL.md, or that leaves the repository, is an error."""
    if raw is None:
        return {}
    paths = [raw] if isinstance(raw, str) else raw
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ConfigError(f"{doc.at(*where)}: skills: a list of skill folders (relative to the eval file)")
    by_folder = {f: n for n, f in skills.items()}
    out: dict[str, str] = {}
    for i, path in enumerate(paths):
        normal = _normal(Path(folder, path).as_posix() if folder else path)
        if normal is None or path.startswith("/"):
            raise ConfigError(f"{doc.at(*where, i)}: {path!r} leaves the repository")
        normal = normal.removesuffix("/SKILL.md").removesuffix("SKILL.md").rstrip("/")
        skill_md = root / normal / "SKILL.md"
        if not skill_md.is_file() or skill_md.is_symlink():
            raise ConfigError(
                f"{doc.at(*where, i)}: skill {path!r}: no SKILL.md at {normal or '.'}/ (a path "
                "relative to this eval file); fix the path"
            )
        out[by_folder.get(normal, Path(normal).name or root.name)] = normal
    return out


def _files(
    root: Path, doc: Json, raw: Any, where: tuple[str | int, ...], folder: str
) -> list[tuple[str, str]]:
    """`environment.files`: `{src, dest}`, `src` relative to the eval file (a file or a folder,
    which must exist), `dest` relative to the workspace; both must stay inside."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{doc.at(*where)}: files: a list of {{src, dest}}")
    out: list[tuple[str, str]] = []
    for i, entry in enumerate(raw):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("src"), str)
            or not isinstance(entry.get("dest"), str)
        ):
            raise ConfigError(
                f"{doc.at(*where, i)}: environment-file-missing-field: each file is {{src, dest}} "
                "(both required since Vally 0.10)"
            )
        src = _normal(Path(folder, entry["src"]).as_posix() if folder else entry["src"])
        dest = _normal(entry["dest"])
        if src is None or entry["src"].startswith("/"):
            raise ConfigError(f"{doc.at(*where, i, 'src')}: {entry['src']!r} leaves the repository")
        if dest is None or entry["dest"].startswith("/"):
            raise ConfigError(f"{doc.at(*where, i, 'dest')}: {entry['dest']!r} leaves the workspace")
        if not (root / src).exists():
            raise ConfigError(
                f"{doc.at(*where, i, 'src')}: environment-file-not-found: {src} (relative to the "
                "eval file) does not exist"
            )
        out.append((src, dest or "."))
    return out


def _normal(rel: str) -> str | None:
    parts: list[str] = []
    for part in rel.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


FORBIDDEN_ENV = re.compile(
    r"(?i)^(PATH|HOME|SHELL|USER|TMPDIR|PWD|LD_\w*|DYLD_\w*|NODE_\w*|NPM_CONFIG_\w*|PYTHON\w*|BASH_ENV|ENV|"
    r"\w*PROXY|SSL_CERT_\w*|REQUESTS_CA_BUNDLE|XDG_\w*|\w*_API_KEY|\w*_BASE_URL|ANTHROPIC_\w*|OPENAI_\w*|"
    r"GEMINI_\w*|GOOGLE_\w*|CLAUDE_\w*|CODEX_\w*|COPILOT_\w*|GITHUB_\w*|GH_\w*|AAM_\w*)$"
)
"""Variables a repository may not set for the CLI: where its model calls go and with what key,
its proxy and certificates, and how the process itself starts."""


def _session_env(doc: Json, raw: Any, where: tuple[str | int, ...]) -> dict[str, str]:
    """`environment.env`: names and text values; a name that would steer the CLI's model calls,
    keys or process is refused (everything in the repository is untrusted on a pull request)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{doc.at(*where)}: env: a mapping of NAME → value")
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", name):
            raise ConfigError(f"{doc.at(*where, str(name))}: env: {name!r} is not a variable name")
        if FORBIDDEN_ENV.match(name):
            raise ConfigError(
                f"{doc.at(*where, name)}: env.{name}: not settable from an eval file (it would steer the "
                "CLI's model calls, keys or process); set it in eval-config or the runner"
            )
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"{doc.at(*where, name)}: env.{name}: a text value")
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _servers(doc: Json, raw: Any, where: tuple[str | int, ...]) -> dict[str, Any]:
    """`environment.mcpServers`: stdio servers `{command, args, env, timeout}`, which the CLI
    starts inside the session's sandbox (as a package's own MCP servers)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{doc.at(*where)}: mcpServers: a mapping of name → {{type: stdio, command, args}}")
    out: dict[str, Any] = {}
    for name, server in raw.items():
        at = (*where, str(name))
        command = server.get("command") if isinstance(server, dict) else None
        if not isinstance(server, dict) or not isinstance(command, str) or not command:
            raise ConfigError(f"{doc.at(*at)}: mcpServers.{name}: a stdio server needs a command")
        if server.get("type", "stdio") != "stdio":
            raise ConfigError(f"{doc.at(*at, 'type')}: mcpServers.{name}: only stdio servers start here")
        args = server.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            raise ConfigError(f"{doc.at(*at, 'args')}: mcpServers.{name}.args: a list of arguments")
        entry: dict[str, Any] = {"command": server["command"], "args": [str(a) for a in args]}
        if server.get("env") is not None:
            entry["env"] = _session_env(doc, server["env"], (*at, "env"))
        if "timeout" in server:
            duration(server["timeout"], doc.at(*at, "timeout"))
        out[str(name)] = entry
    return out


GIT_KEYS = ("type", "source", "url", "ref", "shallow", "sparse")
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}")


def _git(
    root: Path, doc: Json, raw: Any, where: tuple[str | int, ...], folder: str
) -> tuple[str, str] | None:
    """`environment.git` (release notes 0.9, 0.12: its fields are checked where the file is
    read): a `worktree` of a git repository (`source`, relative to the eval file) at `ref`, or a
    `clone` whose `url` is such a path. The workspace starts from that tree. A clone from a
    remote URL is refused: the session has no network, and a key never goes to a host the
    repository chose."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"{doc.at(*where)}: git: a mapping (type, source or url, ref)")
    for key in raw:
        if key not in GIT_KEYS:
            raise ConfigError(f"{doc.at(*where, key)}: git: unknown key {key!r}; git takes "
                              f"{', '.join(GIT_KEYS)}")
    kind = raw.get("type")
    if kind not in ("worktree", "clone"):
        raise ConfigError(f"{doc.at(*where, 'type')}: git.type: worktree or clone")
    key = "source" if kind == "worktree" else "url"
    given = raw.get(key)
    if not isinstance(given, str) or not given.strip():
        raise ConfigError(f"{doc.at(*where)}: git: a {kind} needs `{key}`")
    if re.match(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+:", given):
        raise ConfigError(f"{doc.at(*where, key)}: git.{key}: {given!r}: a clone from a URL is not made "
                          "here (the session has no network); point it at a repository inside this one")
    source = _normal(Path(folder, given).as_posix() if folder else given)
    if source is None or given.startswith("/"):
        raise ConfigError(f"{doc.at(*where, key)}: git.{key}: {given!r} leaves the repository")
    ref = raw.get("ref", "HEAD")
    if not isinstance(ref, str) or not _REF.fullmatch(ref) or ".." in ref:
        raise ConfigError(f"{doc.at(*where, 'ref')}: git.ref: a branch, tag or commit")
    return source or ".", ref
