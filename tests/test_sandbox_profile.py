"""The macOS layer's profile, as text (this project's CI has no macOS runner: `sandbox-exec`
itself is not run here), and how a session reports and wraps it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aam_eval_action.sandbox import seatbelt
from aam_eval_action.sandbox.plan import DEVICES, Confinement, short_of


def test_a_profile_allows_writes_beneath_the_session_folders_and_one_port(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real", target_is_directory=True)
    text = seatbelt.profile([str(link), *DEVICES], [43121])
    lines = text.splitlines()
    assert lines[:4] == ["(version 1)", "(allow default)", "(deny file-write*)", "(allow file-write*"]
    assert f'    (subpath "{link}")' in lines and f'    (subpath "{os.path.realpath(link)}")' in lines
    assert not any("/dev/pts" in line or "/dev/shm" in line for line in lines)
    assert '    (literal "/dev/null")' in lines
    assert lines[-4:-2] == ["(deny network*)", '(allow network-outbound (remote tcp "localhost:43121"))']
    # UNIX sockets: only the session's own, by path (both spellings of the folder)
    assert lines[-2:] == [f'(allow network-outbound (subpath "{p}"))' for p in sorted({str(link), os.path.realpath(link)})]
    assert text.count("(") == text.count(")")


def test_an_open_network_still_keeps_unix_sockets_to_the_session() -> None:
    lines = seatbelt.profile(["/w"], None).splitlines()
    assert [line for line in lines if "network" in line] == [
        "(deny network-outbound (remote unix-socket))",
        f'(allow network-outbound (literal "{seatbelt.MDNS}"))', '(allow network-outbound (subpath "/w"))']


def test_a_path_cannot_end_the_string_or_start_a_form() -> None:
    hostile = '/w/") (allow file-write* (subpath "/'
    text = seatbelt.profile([hostile], None)
    assert '(subpath "/w/\\") (allow file-write* (subpath \\"/")' in text
    assert [line for line in text.splitlines() if line.startswith("(")][:5] == [
        "(version 1)", "(allow default)", "(deny file-write*)", "(allow file-write*",
        "(deny network-outbound (remote unix-socket))"]
    assert text.count('(allow file-write* (subpath \\"/")') == 2  # quoted, in both rules
    assert seatbelt.quote("a\\b") == '"a\\\\b"'
    with pytest.raises(ValueError, match="control character"):
        seatbelt.quote("/w\n(allow default)")


def test_a_session_on_macos_is_reported_and_wrapped_by_the_profile() -> None:
    made = Confinement(writable=("/w", *DEVICES), tcp_ports=(43121,), abi=0, seatbelt=True, unix="session")
    assert made.describe() == "writes: sandbox-exec; network: port-only; unix: session"
    assert short_of(made, network=False) is None
    with made.entered(["claude", "-p", "hi"]) as argv:
        assert argv[:2] == [seatbelt.SANDBOX_EXEC, "-p"] and argv[3:] == ["claude", "-p", "hi"]
        assert argv[2] == seatbelt.profile(["/w", *DEVICES], [43121])
    nothing = Confinement(writable=(), tcp_ports=(1,), abi=0, why_not="no")
    assert nothing.describe() == "writes: check; network: none; unix: open (no)"


def test_codex_turns_its_own_sandbox_off_only_inside_ours(tmp_path: Path) -> None:
    """Inside our Landlock or Seatbelt, Codex runs as its help says to in an external sandbox;
    where ours enforces nothing, it keeps its own workspace-write sandbox."""
    import dataclasses

    from aam_eval_action.engines.base import AgentRun
    from aam_eval_action.engines.codex import EXTERNALLY_SANDBOXED, Codex

    ours = Confinement(writable=(str(tmp_path),), tcp_ports=(43121,), abi=6)
    run = AgentRun(prompt="p", model="gpt-5.5", workspace=tmp_path / "w", home=tmp_path / "h", env={},
                   runner_env={}, timeout=5, confine=ours)
    for inside in (ours, dataclasses.replace(ours, abi=0, seatbelt=True)):
        argv = Codex().argv(dataclasses.replace(run, confine=inside))
        assert EXTERNALLY_SANDBOXED in argv and "--sandbox" not in argv
    alone = dataclasses.replace(ours, abi=0, by="codex sandbox", why_not="the kernel has no Landlock")
    argv = Codex().argv(dataclasses.replace(run, confine=alone))
    assert EXTERNALLY_SANDBOXED not in argv and argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert alone.describe().startswith("writes: codex sandbox; network: codex sandbox")


def test_the_seccomp_filter_is_built_for_both_linux_machines() -> None:
    """The filter's program, as instructions (the real kernel runs it in test_sandbox_e2e.py):
    every jump lands inside it, and it ends by refusing; arm64 has no x32 check."""
    from aam_eval_action.sandbox import seccomp

    for machine in ("x86_64", "aarch64"):
        code = seccomp.program(machine)
        assert code[-1] == (seccomp.RET_K, 0, 0, seccomp.RET_ERRNO | 13)  # EACCES
        for n, (op, jt, jf, _) in enumerate(code):
            if op == seccomp.RET_K:
                assert (jt, jf) == (0, 0)
            else:
                assert n + 1 + max(jt, jf) < len(code)
        x32 = any(k == seccomp.X32_BIT for _, _, _, k in code)
        assert x32 is (machine == "x86_64")


def test_required_refuses_a_session_no_filter_keeps_from_unix_sockets() -> None:
    """Where no seccomp filter can be installed, nothing keeps a session from a UNIX socket by
    path: the report says `unix: open`, and `sandbox.enforce: required` refuses the session."""
    open_unix = Confinement(writable=("/w", *DEVICES), tcp_ports=(43121,), abi=7, namespace=True, unix="")
    assert open_unix.describe() == "writes: landlock; network: namespace; unix: open"
    assert "cannot keep the agent from UNIX sockets outside its session" in (short_of(open_unix, network=False) or "")
    for held in ("session", "none"):
        assert short_of(open_unix.__class__(**{**open_unix.__dict__, "unix": held}), network=False) is None
