"""Build the action's images and run them as GitHub runs a docker action.

    sudo bash tests/docker/run_container_test.sh [--live] [--keep]

Starts a Docker engine of its own, makes the base image (cached), builds the project's
Dockerfiles unchanged and tags each image with the reference its action.yml names
(`runs.image: docker://…`, as the release workflow publishes it), times a cold build
against a `docker load` of the saved image (the stand-in for the runner's pull), checks
the images' sizes, then runs the container twice on a real pull request: a git
repository with a base branch and a PR branch, checked out as actions/checkout does,
the workspace and file-command directories mounted where GitHub mounts them, INPUT_*
from action.yml's defaults and GITHUB_* as the runner sets them, and the project's
GitHub-compatible server as the API. It checks the one sticky comment and the outputs,
and that a later step running as the runner's user reads and changes what the action wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import BaseImage, Dockerd, EngineError, make_workdir, remove_tree  # noqa: E402

from aam_eval_action.testing.github_server import GitHubServer  # noqa: E402

from support.gitrepo import commit_all, git, init  # noqa: E402

# Each action and the Dockerfile its image is built from, as .github/workflows/release.yml does.
LEAN_ACTION, LEAN_DOCKERFILE = ROOT / "action.yml", ROOT / "Dockerfile"
LIVE_ACTION, LIVE_DOCKERFILE = ROOT / "live" / "action.yml", ROOT / "live" / "Dockerfile"
AGENT_UID = 10001
"""The uid of live/Dockerfile's `aam-agent`, the user sessions run as in the live image."""
# What the Dockerfile adds to the base image (git without Perl, the pinned dependencies).
MAX_LEAN_LAYERS_MB = 130
# Perl packages Debian's git pulls in, which the Dockerfile purges (perl-base stays: dpkg needs it).
PURGED = re.compile(r"^(perl|perl-modules-.+|libperl[0-9.]+|liberror-perl|git-man)$")
OWNER, REPO, PR = "octo-org", "agent-skills", 7
TOKEN = "ghs_container_test_token"
RUNNER_UID = 1001  # the runner's user on GitHub-hosted machines, not root
EXAMPLE = ROOT / "examples" / "csv-tools"
NEVER_SAID = "a sentence the agent never wrote"


class Timings:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        print(f"==> {label}", flush=True)
        start = time.monotonic()
        yield
        took = time.monotonic() - start
        self.rows.append((label, f"{took:.1f} s"))
        print(f"    {label}: {took:.1f} s", flush=True)

    def note(self, label: str, value: str) -> None:
        self.rows.append((label, value))
        print(f"    {label}: {value}", flush=True)

    def table(self) -> str:
        width = max(len(label) for label, _ in self.rows)
        return "\n".join(f"  {label:<{width}}  {value}" for label, value in self.rows)


# -- the images ---------------------------------------------------------------------


def image_of(action_yml: Path) -> str:
    """The image the runner pulls for this action: `runs.image` without its `docker://`."""
    image = str(yaml.safe_load(action_yml.read_text())["runs"]["image"])
    _require(image.startswith("docker://"), f"{action_yml}: runs.image {image!r} is not a docker:// image")
    return image.removeprefix("docker://")


def build(engine: Dockerd, tag: str, dockerfile: Path, base: str, log: Path, cold: bool = False) -> None:
    """As the release workflow builds it: the repository's root as the context."""
    proc = engine.docker(
        "build", "--network", "host", "--build-arg", f"BASE_IMAGE={base}", *(["--no-cache"] if cold else []),
        "--file", str(dockerfile), "--tag", tag, str(ROOT), check=False,
    )
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        raise EngineError(f"docker build of {dockerfile.name} failed ({proc.returncode}):\n{tail}")


def image_mb(engine: Dockerd, tag: str) -> float:
    size = engine.docker("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip()
    return int(size) / 1e6


def pull_stand_in(engine: Dockerd, ref: str, work: Path, timings: Timings) -> None:
    """`docker save`, remove, `docker load`: what a pull costs the runner, without a registry."""
    image_id = engine.docker("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip()
    archive = work / "image.tar"
    engine.docker("save", "--output", str(archive), ref)
    timings.note("saved image archive", f"{archive.stat().st_size / 1e6:.0f} MB")
    engine.docker("image", "rm", ref)
    with timings.step(f"docker load ({ref}), the stand-in for the pull"):
        engine.docker("load", "--input", str(archive))
    archive.unlink()
    loaded = engine.docker("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip()
    _require(loaded == image_id, f"the loaded image {loaded} is not the built one {image_id}")


def check_lean_image(engine: Dockerd, ref: str, base: str) -> None:
    """Git's Perl packages are gone (by whatever name this Debian gives them), the scripted
    servers of the tests (`aam_eval_action.testing`) are not in the image, and the Dockerfile's
    layers stay small."""
    installed = engine.docker("run", "--rm", "--network", "none", "--entrypoint", "dpkg-query", ref,
                              "-W", "-f", "${Package}\n").stdout.split()
    left = [p for p in installed if PURGED.match(p)]
    _require(not left, f"the replay image still holds git's Perl packages: {left}")
    found = engine.docker("run", "--rm", "--network", "none", "--entrypoint", "python3", ref, "-c",
                          "import importlib.util as u; print(u.find_spec('aam_eval_action.testing') is None, "
                          "u.find_spec('aam_eval_action.main') is not None)").stdout.split()
    _require(found == ["True", "True"], f"the image holds aam_eval_action.testing (or not the tool): {found}")
    added = image_mb(engine, ref) - image_mb(engine, base)
    _require(added <= MAX_LEAN_LAYERS_MB,
             f"the Dockerfile adds {added:.0f} MB to the base image, more than {MAX_LEAN_LAYERS_MB} MB")


def later_step_reads(engine: Dockerd, image: str, workspace: Path, paths: list[str]) -> None:
    """A later step of the job, as the runner's user: it reads and changes what the action wrote."""
    _require(paths, "nothing to read")
    proc = engine.docker(
        "run", "--rm", "--network", "none", "--user", f"{RUNNER_UID}:{RUNNER_UID}",
        "-v", f"{workspace}:/github/workspace", "--workdir", "/github/workspace", "--entrypoint", "sh",
        image, "-c", 'set -e; for f in "$@"; do cat "$f" > /dev/null; echo >> "$f"; done', "sh", *paths,
        check=False,
    )
    _require(proc.returncode == 0, f"uid {RUNNER_UID} cannot read or change what the action wrote: "
             f"{(proc.stdout + proc.stderr).strip()}")


# -- the pull request ---------------------------------------------------------------


@dataclass(frozen=True)
class PullRequest:
    workspace: Path
    package_path: str
    base_sha: str
    head_sha: str
    merge_sha: str
    synthetic: bool


def make_pull_request(tmp: Path, change: Callable[[Path], None] | None = None) -> PullRequest:
    """origin: main with the evals, feature with one check broken and one case removed
    (or what `change` does to the package).

    The workspace is then a clone checked out at the PR's merge commit, as
    actions/checkout with fetch-depth 0 leaves it on a pull_request event.
    """
    origin = tmp / "origin"
    init(origin)
    synthetic = not _example_is_recorded()
    package_path = _synthetic_package(origin) if synthetic else _example_package(origin)
    base = commit_all(origin, "Add the evals")
    git(origin, "checkout", "-q", "-b", "feature")
    (change or _change_the_agent)(origin / package_path)
    head = commit_all(origin, "Change the agent")
    git(origin, "checkout", "-q", "--detach", "main")
    git(origin, "merge", "-q", "--no-ff", "-m", f"Merge {head} into {base}", "feature")
    merge = git(origin, "rev-parse", "HEAD")
    git(origin, "update-ref", f"refs/pull/{PR}/merge", merge)
    git(origin, "checkout", "-q", "main")

    workspace = tmp / "runner" / "work" / REPO / REPO
    workspace.parent.mkdir(parents=True)
    git(tmp, "clone", "-q", str(origin), str(workspace))
    git(workspace, "fetch", "-q", "origin", f"+refs/pull/{PR}/merge:refs/remotes/pull/{PR}/merge")
    git(workspace, "checkout", "-q", "--detach", f"refs/remotes/pull/{PR}/merge")
    return PullRequest(workspace, package_path, base, head, merge, synthetic)


def _example_is_recorded() -> bool:
    cassettes = ROOT / "cassettes"
    return cassettes.is_dir() and any(p.is_file() for p in cassettes.rglob("*"))


def _example_package(origin: Path) -> str:
    """The shipped example with its recorded cassettes, laid out as in this repository."""
    shutil.copytree(EXAMPLE, origin / "examples" / "csv-tools",
                    ignore=shutil.ignore_patterns("reports"))
    shutil.copytree(ROOT / "cassettes", origin / "cassettes")
    return "examples/csv-tools"


def _synthetic_package(origin: Path) -> str:
    """Four passing cases with agent and judge cassettes, recorded on the host."""
    from aam_eval_action.testing.model_server import ModelServer
    from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

    names = [f"case-{i}" for i in range(1, 5)]
    cases = [simple_case(n, expected={"contains": ["done"]}) for n in names]
    package = write_package(origin / "pkg", cases)
    record_sessions(package, {n: f"done: finished the task for {n}." for n in names})
    scenarios = [{"match": f"task for {n}.", "judge": {"result": "PASS", "reason": f"{n} is fine"}}
                 for n in names]
    with ModelServer(scenarios) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key}
        subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(package)],
                       env=env, check=True, capture_output=True)
    shutil.rmtree(package / "evals" / "reports", ignore_errors=True)
    return "pkg"


def _change_the_agent(package: Path) -> None:
    """One case's check now asks for words never said; the last case is removed."""
    files = sorted((package / "evals" / "cases").glob("*.yaml"))
    for path in files:
        case = yaml.safe_load(path.read_text())
        if case.get("expected", {}).get("contains"):
            case["expected"]["contains"] = [NEVER_SAID]
            path.write_text(yaml.safe_dump(case, sort_keys=False))
            break
    files[-1].unlink()


def event_payload(pr: PullRequest, api: str) -> dict[str, Any]:
    """A `pull_request` event as GitHub writes it (the fields anyone reads, real-shaped)."""
    repo = {"id": 1, "name": REPO, "full_name": f"{OWNER}/{REPO}", "owner": {"login": OWNER},
            "default_branch": "main", "private": False}
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {
            "number": PR, "state": "open", "title": "Change the agent",
            "url": f"{api}/repos/{OWNER}/{REPO}/pulls/{PR}",
            "html_url": f"https://github.com/{OWNER}/{REPO}/pull/{PR}",
            "user": {"login": "contributor"},
            "head": {"ref": "feature", "sha": pr.head_sha, "label": f"{OWNER}:feature", "repo": repo},
            "base": {"ref": "main", "sha": pr.base_sha, "label": f"{OWNER}:main", "repo": repo},
        },
        "repository": repo,
        "sender": {"login": "contributor"},
    }


# -- the run, as the runner does it -------------------------------------------------


@dataclass
class Runner:
    """The host side of one job: its temp directories and what it hands to the container."""

    temp: Path
    pr: PullRequest
    api_url: str

    def __post_init__(self) -> None:
        for name in ("_github_home", "_github_workflow", "_runner_file_commands"):
            (self.temp / name).mkdir(parents=True, exist_ok=True)
        event = self.temp / "_github_workflow" / "event.json"
        event.write_text(json.dumps(event_payload(self.pr, self.api_url), indent=2))
        for root in (self.temp, self.pr.workspace):
            subprocess.run(["chown", "-R", f"{RUNNER_UID}:{RUNNER_UID}", str(root)], check=True)

    def step_env(self, step: str) -> dict[str, str]:
        inputs = _action_inputs(self.pr.package_path)
        github = {
            "HOME": "/github/home", "CI": "true", "GITHUB_ACTIONS": "true",
            "GITHUB_JOB": "evals", "GITHUB_WORKFLOW": "evals", "GITHUB_ACTION": "__org_aam-eval-action",
            "GITHUB_ACTION_REPOSITORY": "org/aam-eval-action", "GITHUB_ACTION_REF": "v1",
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "/github/workflow/event.json",
            "GITHUB_REPOSITORY": f"{OWNER}/{REPO}", "GITHUB_REPOSITORY_OWNER": OWNER,
            "GITHUB_REF": f"refs/pull/{PR}/merge", "GITHUB_REF_NAME": f"{PR}/merge",
            "GITHUB_REF_TYPE": "branch", "GITHUB_SHA": self.pr.merge_sha,
            "GITHUB_HEAD_REF": "feature", "GITHUB_BASE_REF": "main",
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": self.api_url,
            "GITHUB_GRAPHQL_URL": f"{self.api_url}/graphql",
            "GITHUB_RUN_ID": "4242", "GITHUB_RUN_NUMBER": "7", "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_ACTOR": "contributor", "GITHUB_WORKSPACE": "/github/workspace",
            "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", "RUNNER_NAME": "GitHub Actions 1",
        }
        for var, prefix in (("GITHUB_OUTPUT", "set_output"), ("GITHUB_STEP_SUMMARY", "step_summary"),
                            ("GITHUB_ENV", "set_env"), ("GITHUB_PATH", "add_path"),
                            ("GITHUB_STATE", "save_state")):
            name = f"{prefix}_{step}"
            (self.temp / "_runner_file_commands" / name).touch()
            github[var] = f"/github/file_commands/{name}"
        return {**inputs, **github}

    def run(self, engine: Dockerd, image: str, env: dict[str, str],
            sockets: dict[Path, str] | None = None) -> subprocess.CompletedProcess[str]:
        # As the runner: variable names on the command line, values in the client's environment.
        # The runner also mounts its Docker socket into every container action: `sockets` stand
        # in for it (and others) at those paths.
        names = [arg for name in env for arg in ("-e", name)]
        mounts = {
            self.temp / "_github_home": "/github/home",
            self.temp / "_github_workflow": "/github/workflow",
            self.temp / "_runner_file_commands": "/github/file_commands",
            self.pr.workspace: "/github/workspace",
            **(sockets or {}),
        }
        volumes = [arg for host, inside in mounts.items() for arg in ("-v", f"{host}:{inside}")]
        return engine.docker(
            "run", "--name", uuid.uuid4().hex, "--label", "aam-eval-container-test",
            "--workdir", "/github/workspace", "--rm", "--network", "host",
            *names, *volumes, image, check=False, env=env,
        )

    def file_command(self, env: dict[str, str], var: str) -> str:
        name = Path(env[var]).name
        return (self.temp / "_runner_file_commands" / name).read_text()


def _action_inputs(package_path: str) -> dict[str, str]:
    """Every input with action.yml's default, as the runner passes them (`with:` overrides)."""
    spec = yaml.safe_load((ROOT / "action.yml").read_text())
    values = {name: str(meta.get("default", "")) for name, meta in spec["inputs"].items()}
    values = {k: TOKEN if v == "${{ github.token }}" else v for k, v in values.items()}
    values["package-path"] = package_path
    return {f"INPUT_{name.upper()}": value for name, value in values.items()}


# -- what must be true afterwards ---------------------------------------------------


def parse_outputs(text: str) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` blocks, as the runner reads GITHUB_OUTPUT."""
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            for part in lines:
                if part == delimiter:
                    break
                block.append(part)
            outputs[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


def check_first_run(proc: subprocess.CompletedProcess[str], outputs: dict[str, str], summary: str,
                    server: GitHubServer, pr: PullRequest, marker: str) -> dict[str, Any]:
    expected = {"pass-rate", "pass-rate-delta", "passed", "failed", "errored", "total",
                "regressions", "report-path", "comment-url"}
    _require(expected <= outputs.keys(), f"GITHUB_OUTPUT lacks {sorted(expected - outputs.keys())}")
    counts = {k: int(outputs[k]) for k in ("passed", "failed", "errored", "total", "regressions")}
    _require(counts["passed"] + counts["failed"] + counts["errored"] == counts["total"],
             f"passed + failed + errored != total: {counts}")
    rate = 100 * counts["passed"] / counts["total"] if counts["total"] else 0.0
    _require(outputs["pass-rate"] == f"{rate:.1f}", f"pass-rate {outputs['pass-rate']} != {rate:.1f}")
    _require(outputs["pass-rate-delta"] != "", "no pass-rate-delta: the base was not replayed")
    code = 1 if counts["regressions"] else 0
    _require(proc.returncode == code,
             f"exit code {proc.returncode}, expected {code} for {counts['regressions']} regression(s)")
    if counts["regressions"]:
        _require("::error file=" in proc.stdout, "no ::error file=… annotation for the regression")
    _require(f"::add-mask::{TOKEN}" in proc.stdout, "the token was not masked")

    comments = [c for c in server.comments(OWNER, REPO, PR) if marker in c["body"]]
    _require(len(comments) == 1, f"{len(comments)} comments carry the marker, expected 1")
    comment = comments[0]
    _require(outputs["comment-url"] == comment["html_url"],
             f"comment-url {outputs['comment-url']!r} != {comment['html_url']!r}")
    _require(summary.count(marker) == 1, "the job summary does not hold the comment once")
    report = pr.workspace / outputs["report-path"]
    _require(report.is_file(), f"report-path {outputs['report-path']} is not in the workspace")
    _require(json.loads(report.read_text()).get("cases"), "the head report has no cases")
    if pr.synthetic:  # four passing cases; the PR breaks one and removes one
        want = {"pass-rate": "66.7", "pass-rate-delta": "-33.3", "total": "3", "regressions": "1"}
        got = {k: outputs[k] for k in want}
        _require(got == want, f"outputs {got} != {want}")
        _require("case-4" in comment["body"], "the removed case is not in the comment")
    return comment


def check_later_run(proc: subprocess.CompletedProcess[str], server: GitHubServer, marker: str,
                    first: dict[str, Any], seeded: int, edits: int) -> None:
    comments = server.comments(OWNER, REPO, PR)
    ours = [c["id"] for c in comments if marker in c["body"]]
    _require(ours == [first["id"]], f"marker comments after a later run: {ours}, expected "
             f"only {first['id']} (edited in place)")
    _require(len(comments) == seeded + 1, f"{len(comments)} comments, expected {seeded + 1}")
    edited = [r for r in server.requests
              if r.method == "PATCH" and r.path.endswith(f"/issues/comments/{first['id']}")]
    _require(len(edited) == edits and all(r.status == 200 for r in edited),
             f"{len(edited)} PATCHes of the comment, expected {edits}")
    _require(proc.returncode in (0, 1), f"a later run exited {proc.returncode}")


def _require(condition: object, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _show(title: str, proc: subprocess.CompletedProcess[str], lines: int = 25) -> None:
    out = (proc.stdout + proc.stderr).rstrip().splitlines()
    print(f"---- {title}: exit {proc.returncode}, last {min(lines, len(out))} of {len(out)} lines")
    print("\n".join("    " + line for line in out[-lines:]))


# -- main ---------------------------------------------------------------------------


def scenario(engine: Dockerd, work: Path, timings: Timings, images: list[str]) -> None:
    """The first image creates the comment; each later run (same PR, new push) edits it."""
    from aam_eval_action.render.comment import MARKER

    with timings.step("pull request repository"):
        pr = make_pull_request(work / "job")
    timings.note("example package", "synthetic (no cassettes/ yet)" if pr.synthetic
                 else "examples/csv-tools with cassettes/")
    seeded = 120  # the marker comment is found past the first pages
    with GitHubServer(tokens={TOKEN: "write"}) as server:
        server.add_pr(OWNER, REPO, PR, head="feature", base="main")
        server.seed_comments(OWNER, REPO, PR, seeded)
        runner = Runner(work / "job" / "runner" / "work" / "_temp", pr, server.url)
        first: dict[str, Any] = {}
        for number, image in enumerate(images, start=1):
            env = runner.step_env(uuid.uuid4().hex)
            with timings.step(f"container run {number} ({image})"):
                proc = runner.run(engine, image, env)
            _show(f"run {number}", proc, lines=25 if number == 1 else 5)
            if number == 1:
                outputs = parse_outputs(runner.file_command(env, "GITHUB_OUTPUT"))
                print("    outputs:", json.dumps(outputs))
                summary = runner.file_command(env, "GITHUB_STEP_SUMMARY")
                first = check_first_run(proc, outputs, summary, server, pr, MARKER)
                later_step_reads(engine, image, pr.workspace, [outputs["report-path"]])
            else:
                check_later_run(proc, server, MARKER, first, seeded, edits=number - 1)
    print("---- the sticky comment:")
    print("\n".join("    " + line for line in first["body"].splitlines()))


def nightly_record(engine: Dockerd, work: Path, timings: Timings) -> None:
    """The live image as the nightly job runs it: `mode: record` with a key, on `schedule`.

    The agents really run inside the container (claude as root in its sandbox mode) against
    the project's scripted model server on the host's loopback.
    """
    from aam_eval_action.testing.model_server import ModelServer, load_scenarios

    pr = make_pull_request(work / "nightly")
    if pr.synthetic:
        timings.note("nightly record run", "skipped: the example has no cassettes yet")
        return
    scenarios = load_scenarios(ROOT / "examples" / "scripted-model" / "csv-tools.yaml")
    key = "sk-ant-nightly-test"
    with ModelServer(scenarios, api_key=key) as models, GitHubServer(tokens={TOKEN: "write"}) as server:
        runner = Runner(work / "nightly" / "runner" / "work" / "_temp", pr, server.url)
        env = runner.step_env(uuid.uuid4().hex)
        env.update({
            "GITHUB_EVENT_NAME": "schedule", "INPUT_MODE": "record", "INPUT_FAIL-ON": "never",
            "INPUT_ANTHROPIC-API-KEY": key, "ANTHROPIC_BASE_URL": models.url,
            "INPUT_REPORT-PATH": "nightly-report.json",
        })
        live = image_of(LIVE_ACTION)
        with timings.step(f"container run: nightly record ({live})"):
            proc = runner.run(engine, live, env)
        _show("nightly record", proc, lines=12)
        # The CLI streams its turns; the judge's calls do not.
        agent_calls = [r for r in models.requests if r.body.get("stream") is True]
    _require(proc.returncode == 0, f"the nightly record run exited {proc.returncode}")
    report = json.loads((pr.workspace / "nightly-report.json").read_text())
    _require(report["config"]["mode"] == "record", "the report is not a record run")
    _require(all(c.get("replayed") is False for c in report["cases"]), "cases were not run live")
    _require(len(agent_calls) >= len(report["cases"]), "the agents never reached the model server")
    _require("::add-mask::sk-ant-nightly-test" in proc.stdout, "the API key was not masked")
    cassettes = sorted((pr.workspace / "cassettes").rglob("*.yaml"))
    recorded = "\n".join(p.read_text() for p in cassettes)
    _require("sk-ant-nightly-test" not in recorded, "the API key reached a cassette")
    later_step_reads(engine, live, pr.workspace,
                     ["nightly-report.json", *(str(p.relative_to(pr.workspace)) for p in cassettes)])
    timings.note("nightly record run", f"{len(report['cases'])} cases live, "
                 f"{report['summary']['passed']} passed, {len(agent_calls)} agent model calls")


def escape_in_container(engine: Dockerd, work: Path, timings: Timings) -> None:
    """The live image recording a skill whose script tries to leave its sandbox (the package of
    tests/test_sandbox_e2e.py): inside the container, under Docker's default seccomp profile
    and no extra privilege, with `sandbox-enforce: required`, every attempt fails as on the host
    (UNIX sockets: every one refused, as there is no supervisor there),
    and the seccomp filter keeps every UDP datagram in, with no network namespace there. A
    stand-in for the Docker socket is mounted at /var/run/docker.sock, as the runner mounts the
    real one, and one at /run/user/<the agent's uid>/: mode 0666, so only the sandbox keeps the
    agent out of them; the host's abstract socket is in reach of the container's network."""
    import socket
    import threading

    from aam_eval_action.testing.model_server import ModelServer, load_scenarios

    workspace = work / "escape" / "runner" / "work" / REPO / REPO
    workspace.mkdir(parents=True)
    init(workspace)
    shutil.copytree(ROOT / "tests" / "fixtures" / "escape-pkg", workspace / "pkg")
    # Docker's default seccomp profile refuses `pidfd_getfd` to a container without
    # CAP_SYS_PTRACE, so there is no supervisor: every `socket(AF_UNIX)` is refused, the
    # session's own too.
    case = workspace / "pkg" / "evals" / "cases" / "escape.yaml"
    case.write_text(case.read_text().replace('"own-unix-socket": "done"', '"own-unix-socket": "denied'))
    key = "sk-ant-escape-CANARY-5d17"
    listener = socket.create_server(("127.0.0.1", 0))
    offered: list[object] = []
    threading.Thread(target=lambda: offered.append(listener.accept()), daemon=True).start()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    stand_ins = work / "escape" / "sockets"
    stand_ins.mkdir(parents=True)
    unix: list[socket.socket] = []
    accepted: list[str] = []
    for name in ("docker.sock", "agent.sock", "\0aam-eval-escape-container"):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(name if name.startswith("\0") else str(stand_ins / name))
        if not name.startswith("\0"):
            os.chmod(stand_ins / name, 0o666)
        server.listen(8)
        unix.append(server)
        threading.Thread(target=lambda s=server, n=name: accepted.append(n) if _accepted(s) else None,
                         daemon=True).start()
    scenarios = load_scenarios(ROOT / "tests" / "fixtures" / "escape-scenarios.yaml")
    with ModelServer(scenarios, api_key=key) as models, GitHubServer(tokens={TOKEN: "write"}) as server:
        (workspace / "pkg" / "evals" / "fixtures" / "targets.json").write_text(json.dumps({
            "listener": listener.getsockname()[1], "udp_listener": udp.getsockname()[1],
            "model_server": int(models.url.rsplit(":", 1)[1]), "unix_socket": "/var/run/docker.sock",
            "abstract": "aam-eval-escape-container", "signal_pid": 1,
            "marker": "aam-eval-escaped.txt", "canaries": {"ANTHROPIC_API_KEY": key}}))
        sha = commit_all(workspace, "A skill that tries to escape")
        pr = PullRequest(workspace, "pkg", sha, sha, sha, False)
        runner = Runner(work / "escape" / "runner" / "work" / "_temp", pr, server.url)
        env = runner.step_env(uuid.uuid4().hex)
        env.update({
            "GITHUB_EVENT_NAME": "schedule", "INPUT_MODE": "record", "INPUT_FAIL-ON": "never",
            "INPUT_ANTHROPIC-API-KEY": key, "ANTHROPIC_BASE_URL": models.url,
            "INPUT_REPORT-PATH": "sandbox-report.json", "INPUT_SANDBOX-ENFORCE": "required",
        })
        live = image_of(LIVE_ACTION)
        with timings.step(f"container run: escape probe ({live})"):
            proc = runner.run(engine, live, env, sockets={
                stand_ins / "docker.sock": "/var/run/docker.sock",
                stand_ins / "agent.sock": f"/run/user/{AGENT_UID}/agent.sock"})
        _show("escape probe", proc, lines=12)
    listener.close()
    for server in unix:
        server.close()
    udp.setblocking(False)
    try:  # no user namespace under Docker's default profile: the seccomp filter refuses UDP
        got_out = f"a UDP datagram got out of the container ({len(udp.recv(64))} bytes)"
    except BlockingIOError:
        got_out = ""
    udp.close()
    _require(not got_out, got_out)
    _require(proc.returncode == 0, f"the escape probe run exited {proc.returncode}")
    report = json.loads((workspace / "sandbox-report.json").read_text())
    case = report["cases"][0]
    _require(not accepted, f"a UNIX socket outside the session was reached from the container: {accepted}")
    _require(case.get("confinement") == "writes: landlock; network: port-only; unix: none; user: aam-agent",
             f"the session was not confined by Landlock, as the image's agent user, in the container: "
             f"{case.get('confinement')}")
    layers = report["config"]["sandbox"].get("layers") or ""
    _require("; no network namespace (" in layers and "; seccomp; no supervisor (pidfd_getfd: " in layers,
             f"the container's layers: {layers}")
    _require(case["verdict"] == "PASS", f"an escape attempt got through: {case.get('check_details')}")
    _require(not offered, "the listener was offered a connection from the container")
    timings.note("escape probe", f"{case['confinement']}; every attempt denied, no UDP datagram got out, "
                 "no UNIX socket outside reached (the Docker socket's stand-in included)")


def _accepted(server: object) -> bool:
    """Whether a listening socket is offered a connection before it is closed."""
    try:
        server.accept()  # type: ignore[attr-defined]
    except OSError:
        return False
    return True


def _edit_the_skill(package: Path) -> None:
    """A one-line edit of the skill's body, which only the cases that load the skill see."""
    skill = package / "skills" / "csv-summary" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nMention the file name in the first line of the summary.\n")


def pr_rerun(engine: Dockerd, work: Path, timings: Timings) -> None:
    """The live image on a pull request that edits SKILL.md, `rerun: auto`, no key: the real
    claude re-executes inside the container against the recorded model traffic."""
    pr = make_pull_request(work / "rerun", _edit_the_skill)
    if pr.synthetic:
        timings.note("PR re-execute run", "skipped: the example has no cassettes yet")
        return
    with GitHubServer(tokens={TOKEN: "write"}) as server:
        server.add_pr(OWNER, REPO, PR, head="feature", base="main")
        runner = Runner(work / "rerun" / "runner" / "work" / "_temp", pr, server.url)
        env = runner.step_env(uuid.uuid4().hex)
        env.update({"INPUT_RERUN": "auto", "INPUT_REPORT-PATH": "rerun-report.json"})
        live = image_of(LIVE_ACTION)
        with timings.step(f"container run: PR re-execute ({live})"):
            proc = runner.run(engine, live, env)
        _show("PR re-execute", proc, lines=14)
        summary = runner.file_command(env, "GITHUB_STEP_SUMMARY")
    report = json.loads((pr.workspace / "rerun-report.json").read_text())
    cases = {c["name"]: c for c in report["cases"]}
    rerun = [n for n, c in cases.items() if c.get("replay_kind") == "rerun"]
    diverged = [n for n, c in cases.items() if c.get("replay_miss") == "diverged"]
    never_load = sorted(set(cases) - {"average-revenue", "csv-summary-e2e"})
    _require(sorted(rerun) == never_load and all(cases[n]["verdict"] in ("PASS", "FAIL") for n in rerun),
             f"the cases that never load the skill were not re-executed with a verdict: {rerun}")
    _require(sorted(diverged) == ["average-revenue", "csv-summary-e2e"], f"diverged: {diverged}")
    _require("### Diverged on re-execution (2)" in summary and "Stale cassettes" not in summary,
             "the comment does not list the diverged cases apart")
    _require(proc.returncode == 1, "diverged cases must fail the check under fail-on: regression")
    timings.note("PR re-execute run", f"{len(rerun)} cases re-executed with a verdict, "
                 f"{len(diverged)} diverged at turn {cases[diverged[0]]['miss']['divergence']['turn']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="also build the live variant's image")
    parser.add_argument("--keep", action="store_true", help="leave the engine's directory behind")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cache = Path(os.environ.get("AAM_DOCKER_CACHE", "/var/cache/aam-eval-docker"))
    timings = Timings()
    work = make_workdir()
    engine = Dockerd(work)
    try:
        with timings.step("dockerd start"):
            engine.start()
        base = BaseImage.like_host()
        with timings.step("base image"):
            tarball, made = base.ensure_tarball(cache, work)
            base.import_into(engine, tarball)
        timings.note("base image source", "debootstrap (now cached)" if made else f"cache {tarball}")
        lean_ref, live_ref = image_of(LEAN_ACTION), image_of(LIVE_ACTION)
        with timings.step(f"cold docker build (Dockerfile as {lean_ref})"):
            build(engine, lean_ref, LEAN_DOCKERFILE, base.tag, work / "build-lean.log", cold=True)
        lean, base_mb = image_mb(engine, lean_ref), image_mb(engine, base.tag)
        timings.note("image size", f"{lean:.0f} MB = stand-in base {base_mb:.0f} MB "
                     f"+ the Dockerfile's layers {lean - base_mb:.0f} MB")
        check_lean_image(engine, lean_ref, base.tag)
        pull_stand_in(engine, lean_ref, work, timings)
        if args.live:
            with timings.step(f"docker build (live/Dockerfile as {live_ref})"):
                build(engine, live_ref, LIVE_DOCKERFILE, base.tag, work / "build-live.log")
            live = image_mb(engine, live_ref)
            timings.note("live image size", f"{live:.0f} MB (+{live - base_mb:.0f} MB over the base)")
            pull_stand_in(engine, live_ref, work, timings)
            versions = engine.docker("run", "--rm", "--network", "host", "--entrypoint", "sh", live_ref,
                                     "-c", "node --version; claude --version; codex --version")
            timings.note("live image tools", " | ".join(versions.stdout.split("\n")).strip(" |"))
        scenario(engine, work, timings, [lean_ref, lean_ref] + ([live_ref] if args.live else []))
        if args.live:
            nightly_record(engine, work, timings)
            pr_rerun(engine, work, timings)
            escape_in_container(engine, work, timings)
    except (EngineError, AssertionError, subprocess.CalledProcessError) as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        with timings.step("dockerd stop and clean up"):
            engine.stop()
            if not args.keep:
                remove_tree(work)
        print("---- timings\n" + timings.table(), flush=True)
    print("container test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
