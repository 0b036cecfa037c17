"""Keep secrets out of everything written: cassettes, reports, logs and comments."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE)", re.I)
MIN_SECRET_LEN = 6


class Redactor:
    """Replaces every known secret value with a `[REDACTED:NAME]` placeholder."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        pairs = [(v, n) for n, v in secrets.items() if v and len(v) >= MIN_SECRET_LEN]
        # Longest first, so a secret that contains another is replaced whole.
        self._pairs = sorted(set(pairs), key=lambda p: -len(p[0]))

    @classmethod
    def from_environment(
        cls, extra: Mapping[str, str] = {}, environ: Mapping[str, str] | None = None
    ) -> Redactor:
        env = os.environ if environ is None else environ
        found = {k: v for k, v in env.items() if SECRET_NAME.search(k)}
        return cls({**found, **extra})

    def text(self, value: str) -> str:
        for secret, name in self._pairs:
            if secret in value:
                value = value.replace(secret, f"[REDACTED:{name}]")
        return value

    def deep(self, value: Any) -> Any:
        """Redact every string inside nested dicts and lists."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.deep(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.deep(v) for v in value]
        return value
