"""The one user-facing error base and its exit codes."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BUG = 3
EXIT_INTERRUPTED = 130


class AamEvalError(Exception):
    """An error the user can fix; its message says what to do."""

    exit_code = EXIT_USAGE


class ConfigError(AamEvalError):
    """A bad package, eval-config or case file (exit 2)."""


class UsageError(AamEvalError):
    """A bad command line (exit 2)."""


class UnsupportedEngineError(ConfigError):
    """An engine name the seed reserves but that has no headless mode yet."""
