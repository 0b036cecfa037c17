"""The base of every part of a report: extra keys from other versions are kept, not refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Part(BaseModel):
    """Base for report parts: extra keys from other versions are kept, not refused."""

    model_config = ConfigDict(extra="allow")
