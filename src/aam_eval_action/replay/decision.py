"""Replay or live: the decision for a case's agent session and its judge calls, and misses as data.

A miss is never a string to be parsed later: it carries its kind, the reason, the inputs
that changed and the command that re-records the case; `message` composes the one line
users see in the report and the log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from aam_eval_action.engines.registry import engine_of_cli
from aam_eval_action.fsutil import display_path, runner_checkout
from aam_eval_action.replay import agent_cassette
from aam_eval_action.replay.agent_cassette import AgentCassette, CassetteError
from aam_eval_action.replay.divergence import Divergence
from aam_eval_action.replay.fingerprint import Fingerprint, explain, not_rerunnable
from aam_eval_action.replay.traffic import ModelTraffic, TrafficError
from aam_eval_action.replay.untrusted import UntrustedFileError

if TYPE_CHECKING:
    from aam_eval_action.replay.judge_cassette import JudgeCassette
    from aam_eval_action.settings import RunSettings

MissKind = Literal["no-cassette", "stale", "damaged", "diverged"]
ReplayKind = Literal["snapshot", "rerun", "live"]
Subject = Literal["agent", "judge", "user", "mock"]


@dataclass(frozen=True)
class Miss(Exception):
    """Replay could not serve a case: why, what changed, and how to re-record it."""

    kind: MissKind
    """no-cassette, stale or damaged."""
    subject: Subject
    """Whose cassette missed: the agent session's or the judge's."""
    reason: str
    """Why, in words: the changed inputs and when the cassette was recorded, or the damage."""
    rerecord: str
    """The command that records this case again."""
    changes: tuple[str, ...] = field(default=())
    """Each input that changed since recording, e.g. `skill file skills/x/SKILL.md changed`."""
    divergence: Divergence | None = None
    """For `diverged`: the first re-executed request that differed from the recording."""

    @property
    def message(self) -> str:
        """The one line shown in the report and the log."""
        verb = "record it" if self.kind == "no-cassette" and self.subject == "agent" else "re-record"
        prefix = "" if self.kind == "damaged" else (
            "judge replay miss: " if self.subject == "judge" else
            "simulated user replay miss: " if self.subject == "user" else
            "replay diverged: " if self.kind == "diverged" else "replay miss: "
        )
        return f"{prefix}{self.reason}; {verb}: {self.rerecord}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Decision:
    """How a case's agent session will be obtained, and why."""

    replay: bool
    reason: str
    recorded: AgentCassette | None = None
    rerun: bool = False
    """Re-execute the real CLI against `traffic` (else snapshot, or live when not `replay`)."""
    traffic: tuple[ModelTraffic, ...] = ()
    """The recorded model traffic of each attempt, for re-execution."""
    changes: tuple[str, ...] = ()
    """Inputs changed since recording (what a divergence is most likely due to)."""

    @property
    def kind(self) -> ReplayKind:
        return "rerun" if self.rerun else "snapshot" if self.replay else "live"


def rerecord_command(settings: RunSettings, name: str, variant: str = "") -> str:
    """The command that records this case's session again, for this engine and model only."""
    import shlex

    s, cfg = settings, settings.config
    extra = " --baseline" if variant == "baseline" else ""
    if s.engine != cfg.engine or cfg.engines or cfg.pairs:
        extra += f" --engine {s.engine}"
    if s.cassette_stem != s.engine:
        extra += f" --model {shlex.quote(s.model)}"
    name = settings.package.qualified(name)
    return f"aam-eval run {name} --record{extra} --package {display_path(settings.package.layout.root)}"


def decide(settings: RunSettings, name: str, fp: Fingerprint, variant: str = "") -> Decision:
    """Replay or live for a case's agent session under the run's mode (raises Miss in replay mode).

    `variant` is `baseline` for the session run without the skill, which has its own cassette.
    """
    s = settings
    path = agent_cassette.session_path(s.cassettes, name, s.cassette_stem, variant)

    def rerecord() -> str:  # only a miss needs it
        return rerecord_command(s, name, variant)

    if s.mode in ("record", "live"):
        return Decision(False, f"mode {s.mode}")
    try:
        recorded = agent_cassette.load(path, s.cassettes)
    except CassetteError as exc:
        if s.mode == "replay":
            raise Miss("damaged", "agent", str(exc), rerecord()) from None
        return Decision(False, f"cassette damaged: {exc}")
    if recorded is None:
        pair = f"{s.engine} with model {s.model}" if s.cassette_stem != s.engine else f"engine {s.engine}"
        why = f"no cassette recorded for {pair} ({display_path(path)})"
        if s.mode == "replay":
            raise Miss("no-cassette", "agent", why, rerecord())
        return Decision(False, why)
    changes = explain(recorded.fingerprint.inputs, fp.inputs)
    blocker = None
    if not variant and (s.rerun == "always" or (s.rerun == "auto" and changes)):
        found = _rerun(s, name, recorded, fp)
        if isinstance(found, Decision):
            return found
        blocker = found
    if changes:
        why = "; ".join(changes) + f" since recording ({recorded.recorded_at})"
        why += f" ({blocker})" if blocker else ""
        if s.mode == "replay":
            raise Miss("stale", "agent", why, rerecord(), tuple(changes))
        return Decision(False, why)
    if blocker and s.mode == "replay":  # --rerun with nothing to re-execute
        raise Miss("no-cassette", "agent", blocker, rerecord())
    if len(recorded.attempts) < s.repeat and s.attempts_required:
        why = f"{len(recorded.attempts)} attempt(s) recorded, {s.repeat} wanted"
        if s.mode == "replay":
            raise Miss("stale", "agent", f"{why} ({display_path(path)})",
                       rerecord_command(s, name) + f" --repeat {s.repeat}", (why,))
        return Decision(False, why)
    return Decision(True, "cassette matches", recorded)


def _rerun(s: RunSettings, name: str, recorded: AgentCassette, fp: Fingerprint) -> Decision | str:
    """A re-execute decision, or why the case cannot be re-executed (auto falls back to snapshot).

    Forced (`always`), a CLI of another version is an error, never a false divergence.
    """
    from aam_eval_action.engines.version import installed_version
    from aam_eval_action.replay import traffic_store
    from aam_eval_action.replay.cli_version import check_version

    blocking = not_rerunnable(recorded.fingerprint.inputs, fp.inputs)
    if blocking:
        return f"not re-executable: {'; '.join(blocking)}, so the model is asked something else from turn 1"
    if not recorded.model_traffic:
        return "the cassette holds no model traffic to re-execute; re-record it once"
    unstable = next((c.unstable for c in recorded.self_check or [] if c.unstable), None)
    if unstable:
        return (f"not re-executable: its recording was unstable when checked against itself "
                f"({unstable}); make that value stable or add a `rerun-ignore` pattern for it, "
                "then re-record")
    try:
        traffic = tuple(traffic_store.load_traffic(s.cassettes, recorded.model_traffic))
    except TrafficError as exc:
        if s.mode == "replay":
            raise Miss("damaged", "agent", str(exc), rerecord_command(s, name)) from None
        return f"model traffic unusable: {exc}"
    unusable = next((why for why in map(not_reexecutable, traffic) if why), None)
    if unusable:
        return f"not re-executable: {unusable}"
    first = traffic[0]
    installed = installed_version(first.cli, s.runner_env)
    if s.rerun == "always":
        check_version(first.cli, first.cli_version, installed)
    elif installed != first.cli_version:
        found = f"{first.cli} {installed} is" if installed else "none is"
        return f"re-execute needs {first.cli} {first.cli_version} on PATH, {found}"
    if len(traffic) < s.repeat and s.mode == "auto" and s.attempts_required:
        return f"{len(traffic)} attempt(s) recorded, {s.repeat} wanted"
    changes = tuple(explain(recorded.fingerprint.inputs, fp.inputs))
    why = "re-execute: " + ("; ".join(changes) + " since recording" if changes else "forced")
    return Decision(True, why, recorded, rerun=True, traffic=traffic, changes=changes)


def not_reexecutable(traffic: ModelTraffic) -> str | None:
    """Why a recording cannot be re-executed whatever CLI is installed, in words; None if it can."""
    if not traffic.exchanges:
        return ("the recorded session sent no request to the model (it ended before its first "
                "turn), so there is nothing to answer a re-executed CLI with; re-record the case")
    if engine_of_cli(traffic.cli) is None or traffic.cli_version is None:
        return ("the recording does not say which CLI and version made it (its requests carried no "
                "User-Agent of a known agent CLI); re-record the case")
    return None


def diverged(settings: RunSettings, name: str, divergence: Divergence, changes: tuple[str, ...]) -> Miss:
    """The miss of a re-executed case whose CLI asked what the recording cannot answer."""
    why = divergence.message
    likely = likely_causes(changes, divergence)
    if likely != list(changes):
        why += f" (likely cause: {'; '.join(likely)})"
    elif changes:
        why += f" (changed since recording: {'; '.join(changes)})"
    return Miss("diverged", "agent", why, rerecord_command(settings, name), changes, divergence)


def likely_causes(changes: tuple[str, ...], divergence: Divergence) -> list[str]:
    """The changed inputs whose file name shows in the diverging tool call or its results
    (a hook's script in its error, a script in its command), or the files of the skill whose
    loading diverged; all of them when none does."""
    seen = " ".join(x for x in (divergence.tool_input, divergence.recorded, divergence.live) if x)
    skill = f"skills/{divergence.tool_input}/" if divergence.tool_name in ("Skill", "skill") else None

    def named(change: str) -> bool:
        paths = [w for w in change.split() if "/" in w]
        return any(PurePosixPath(w).name in seen or (skill and w.startswith(skill)) for w in paths)

    return [c for c in changes if named(c)] or list(changes)


@dataclass
class JudgeReplay:
    """A case's judge cassette, opened for the run's mode, and what a miss on it would mean."""

    cassette: JudgeCassette
    miss_kind: MissKind
    miss_reason: str
    changes: tuple[str, ...]


def open_judge(
    settings: RunSettings, name: str, jfp: Fingerprint, redact: Callable[[str], str], variant: str = ""
) -> JudgeReplay | None:
    """The case's judge cassette (None in live mode: nothing is read or written).

    Raises Miss when the file is damaged.
    """
    s = settings
    if s.mode == "live":
        return None
    from aam_eval_action.replay.judge_cassette import JudgeCassette

    path = agent_cassette.judge_path(s.cassettes, name, s.cassette_stem, variant)
    try:
        jc = JudgeCassette(path, s.mode, s.judge_provider, redact, s.cassettes, s.network,
                           checkout=runner_checkout(s.runner_env))
    except UntrustedFileError as exc:  # our own safe read: the message names file and line
        where, _, what = str(exc).partition(": ")
        raise Miss("damaged", "judge", f"{where}: damaged judge cassette ({what})",
                   rerecord_command(s, name)) from None
    except Exception as exc:  # vcrpy raises yaml and value errors for a damaged file
        raise Miss("damaged", "judge", f"{path}: damaged judge cassette ({exc})",
                   rerecord_command(s, name, variant)) from None
    recorded = jc.metadata.get("inputs")
    changes = tuple(explain(recorded, jfp.inputs)) if isinstance(recorded, dict) else ()
    if changes:
        return JudgeReplay(jc, "stale", "; ".join(changes), changes)
    if not path.exists():
        return JudgeReplay(jc, "no-cassette", "no judge cassette recorded", ())
    return JudgeReplay(jc, "stale", "the judge request changed", ())


def open_user(
    settings: RunSettings, name: str, provider: str, redact: Callable[[str], str]
) -> JudgeReplay | None:
    """The case's simulated-user cassette (None in live mode), read like a judge cassette.

    Raises Miss when the file is damaged."""
    path = agent_cassette.user_path(settings.cassettes, name, settings.cassette_stem)
    return _side_cassette(settings, name, provider, redact, path, "user",
                          ("simulated-user cassette", "the conversation changed"))


def open_mock_agents(
    settings: RunSettings, name: str, provider: str, redact: Callable[[str], str]
) -> JudgeReplay | None:
    """The case's cassette of agent-played mocks (None in live mode), read like a judge cassette.

    Raises Miss when the file is damaged."""
    path = agent_cassette.mocks_path(settings.cassettes, name, settings.cassette_stem)
    return _side_cassette(settings, name, provider, redact, path, "mock",
                          ("mock-agent cassette", "a mocked call changed"))


def _side_cassette(
    s: RunSettings, name: str, provider: str, redact: Callable[[str], str], path: Path, subject: Subject,
    words: tuple[str, str],
) -> JudgeReplay | None:
    """A cassette of model calls beside the agent's (the simulated user's, the agent mocks'),
    read like a judge cassette; `words`: what it is called, and what a stale one means."""
    if s.mode == "live":
        return None
    from aam_eval_action.replay.judge_cassette import JudgeCassette

    what, stale = words
    try:
        cassette = JudgeCassette(path, s.mode, provider, redact, s.cassettes, s.network,
                                 checkout=runner_checkout(s.runner_env))
    except Exception as exc:  # our safe read names file and line; vcrpy raises yaml and value errors
        raise Miss("damaged", subject, f"{path}: damaged {what} ({exc})", rerecord_command(s, name)) from None
    if not path.exists():
        return JudgeReplay(cassette, "no-cassette", f"no {what} recorded", ())
    return JudgeReplay(cassette, "stale", stale, ())


def user_miss(settings: RunSettings, name: str, replay: JudgeReplay, turn: int) -> Miss:
    """The miss raised when the simulated user's cassette has no reply to the conversation so far."""
    return Miss(replay.miss_kind, "user", f"{replay.miss_reason} at turn {turn}: the simulated user "
                "was not recorded answering what the agent said there", rerecord_command(settings, name))


def judge_miss(settings: RunSettings, name: str, replay: JudgeReplay, variant: str = "") -> Miss:
    """The miss raised when the judge cassette cannot answer a request in replay mode."""
    return Miss(replay.miss_kind, "judge", f"{replay.miss_reason} since recording",
                rerecord_command(settings, name, variant), replay.changes)

