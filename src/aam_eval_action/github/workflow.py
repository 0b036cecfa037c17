"""Workflow commands: what the runner reads from a docker action's output and files.

`::error`/`::warning` annotations, `::add-mask::`, `key=value` outputs in `$GITHUB_OUTPUT`
and Markdown appended to `$GITHUB_STEP_SUMMARY`. All escaping of workflow-command data
and properties happens here and only here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from secrets import token_hex


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF encoded so it stays one command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,` encoded."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def error(message: str, *, file: str | None = None, line: int | None = None,
          title: str | None = None) -> None:
    """An `::error` annotation, on a file and line when given."""
    props = []
    if file:
        props += [f"file={escape_property(file)}", f"line={line or 1}"]
    if title:
        props.append(f"title={escape_property(title)}")
    head = "::error " + ",".join(props) if props else "::error"
    print(f"{head}::{escape_data(message)}", flush=True)


def warning(message: str, summary_file: Path | None) -> None:
    """A `::warning` annotation, repeated in the job summary."""
    print(f"::warning::{escape_data(message)}", flush=True)
    append(summary_file, f"> [!WARNING]\n> {message}\n")


@contextmanager
def commands_stopped() -> Iterator[None]:
    """Nothing printed inside can be read as a workflow command, whoever prints it.

    `::stop-commands::<token>` makes the runner ignore commands until `::<token>::`; the
    token is random, so text printed inside (agent output, cassette contents) cannot end
    the block early.
    """
    token = token_hex(16)
    sys.stderr.flush()
    print(f"::stop-commands::{token}", flush=True)
    try:
        yield
    finally:
        sys.stderr.flush()
        print(f"::{token}::", flush=True)


def mask(*secrets: str | None) -> None:
    """Ask the runner to mask these values in the rest of the log."""
    for secret in secrets:
        if secret:
            print(f"::add-mask::{secret}", flush=True)


def append(path: Path | None, text: str) -> None:
    """Append to a file command (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`); nothing without one."""
    if path is None:
        return
    with path.open("a", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def set_outputs(output_file: Path | None, values: dict[str, str]) -> None:
    """`key=value` lines to `$GITHUB_OUTPUT`, or to stdout outside Actions."""
    lines = "".join(f"{k}={v}\n" for k, v in values.items())
    if output_file is not None:
        append(output_file, lines)
    else:
        print(lines, end="")
