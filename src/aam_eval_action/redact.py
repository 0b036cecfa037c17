"""Keep secrets out of everything written: cassettes, reports, logs and comments."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE)", re.I)
MIN_SECRET_LEN = 6
"""Values at least this long are replaced wherever they occur. Shorter secrets named
explicitly (API keys, `secret-env`, `${VAR}` values, the GitHub token) are replaced where
they stand as a whole word (`PIN is 42` → `PIN is [REDACTED:PIN]`), so a 2-letter secret
does not garble every word containing those letters; shorter values only *guessed* secret
from their variable's name (`AUTH_MODE=on`) are not redacted."""
KEY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ANTHROPIC_KEY", re.compile(r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{16,}")),
    ("OPENAI_KEY", re.compile(r"(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("GITHUB_TOKEN", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("AWS_KEY_ID", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
)
"""Well-known key formats, redacted in everything written whatever machine writes or replays:
they do not depend on which secrets the machine's environment happens to hold. A key starts a
word: `ask-clarifying-questions-fires-22dff6fb`, a case name, holds no key."""
_KEY_START = re.compile(r"sk-|gh[pousr]_|github_pat_|AKIA|ASIA")
"""What every key format above starts with: one scan tells whether any of them can match."""


class Redactor:
    """Replaces every known secret value, and anything shaped like a known key, with `[REDACTED:NAME]`."""

    def __init__(self, secrets: Mapping[str, str], guessed: Mapping[str, str] = {}) -> None:
        pairs = [(v, n) for n, v in secrets.items() if len(v) >= MIN_SECRET_LEN]
        pairs += [(v, n) for n, v in guessed.items() if v and len(v) >= MIN_SECRET_LEN]
        # Longest first, so a secret that contains another is replaced whole.
        self._pairs = sorted(set(pairs), key=lambda p: -len(p[0]))
        short = sorted({(v, n) for n, v in secrets.items() if 0 < len(v) < MIN_SECRET_LEN},
                       key=lambda p: -len(p[0]))
        self._words = [(re.compile(rf"(?<![\w-]){re.escape(v)}(?![\w-])"), n) for v, n in short]
        self._all = [v for v, _ in self._pairs] + [v for v, _ in short]

    @classmethod
    def from_environment(cls, extra: Mapping[str, str], environ: Mapping[str, str]) -> Redactor:
        """`extra` are explicit secrets; the variables of `environ` (the runner's environment)
        named like secrets are guessed."""
        found = {k: v for k, v in environ.items() if SECRET_NAME.search(k) and k not in extra}
        return cls(extra, found)

    def text(self, value: str) -> str:
        for secret, name in self._pairs:
            if secret in value:
                value = value.replace(secret, f"[REDACTED:{name}]")
        for word, name in self._words:
            value = word.sub(f"[REDACTED:{name}]", value)
        if _KEY_START.search(value):
            for name, pattern in KEY_PATTERNS:
                value = pattern.sub(f"[REDACTED:{name}]", value)
        return value

    def _key(self, value: str) -> str:
        for secret, name in self._pairs:
            value = value.replace(secret, f"[REDACTED:{name}]")
        return value

    def deep(self, value: Any) -> Any:
        """Redact every string inside nested dicts and lists (as they are when none holds a
        secret or anything shaped like a key: one scan of their JSON tells)."""
        if isinstance(value, dict | list) and not self._found_in(value):
            return value
        return self._deep(value)

    def _found_in(self, value: Any) -> bool:
        try:
            blob = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return True
        # Any occurrence of a secret (as written, or as JSON escapes it) sends the value the long way.
        return (any(v in blob or json.dumps(v, ensure_ascii=False)[1:-1] in blob for v in self._all)
                or _KEY_START.search(blob) is not None)

    def _deep(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            # Keys are field names: only values long enough to be unambiguous are replaced there.
            return {self._key(k) if isinstance(k, str) else k: self._deep(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._deep(v) for v in value]
        return value
