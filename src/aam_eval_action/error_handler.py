"""Known errors → one message and a fixed exit code; ^C → 130; a bug → 3 with a traceback."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from aam_eval_action.errors import EXIT_BUG, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, AamEvalError
from aam_eval_action.redact import Redactor


@dataclass
class Status:
    code: int = EXIT_OK


@contextmanager
def error_handler() -> Iterator[Status]:
    status = Status()
    try:
        yield status
    except AamEvalError as exc:
        from aam_eval_action.render.console import neutralize_commands

        # The message may quote the repository's files (names, manifest values): in a workflow
        # log none of its lines may form a command.
        print(neutralize_commands(f"aam-eval: error: {exc}"), file=sys.stderr)
        status.code = exc.exit_code
    except BrokenPipeError:
        # The reader went away (`aam-eval ... | head`): stop quietly, as other CLIs do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status.code = EXIT_FAILED
    except KeyboardInterrupt:
        print("aam-eval: interrupted", file=sys.stderr)
        status.code = EXIT_INTERRUPTED
    except Exception:
        print("aam-eval: internal error (a bug, please report it):", file=sys.stderr)
        # Redacted with what this process knows: secret-looking variables and key patterns.
        from aam_eval_action.settings import runner_environment

        redactor = Redactor.from_environment({}, runner_environment())
        print(redactor.text(traceback.format_exc()), end="", file=sys.stderr)
        status.code = EXIT_BUG
