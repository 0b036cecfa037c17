"""A Vally grader as written in an eval spec: `{type, name?, turn?, weight?, config}`
(https://microsoft.github.io/vally/reference/eval-spec/, "GraderConfig"), with its scoring
weight resolved from the eval's `scoring.weights` (keyed by grader type).

The types are the built-in catalog's (https://microsoft.github.io/vally/reference/graders/),
0.17; `pairwise` is kept so that its place in a file is shown (Vally runs it only in
`vally compare`).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

VallyType = Literal[
    "completed",
    "exit-success",
    "error-count",
    "wall-time",
    "tool-call-count",
    "turn-count",
    "token-budget",
    "output-contains",
    "output-not-contains",
    "output-matches",
    "output-not-matches",
    "transcript-contains",
    "transcript-matches",
    "file-exists",
    "file-not-exists",
    "file-contains",
    "file-not-contains",
    "file-matches",
    "file-not-matches",
    "diff-contains",
    "diff-not-contains",
    "diff-empty",
    "tool-calls",
    "skill-invocation",
    "run-command",
    "program",
    "prompt",
    "panel",
    "pairwise",
]
TYPES: tuple[str, ...] = get_args(VallyType)
"""Every built-in grader type this project reads."""


class VallyGrader(BaseModel):
    """One grader of a stimulus: its type, its name (given, or derived from its config as Vally
    derives one since 0.13), the turn it looks at, its scoring weight and its config."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: VallyType
    name: str
    weight: float = 1.0
    """`scoring.weights[type]` (1 when the eval sets none for the type)."""
    turn: int | None = None
    """0-based turn of a multi-turn stimulus the grader looks at (None: the whole session)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Its `config:` mapping as written."""
    rubric: tuple[str, ...] = ()
    """The stimulus's rubric, which an LLM judge (`prompt`, `panel`) grades against."""
    threshold: float | None = None
    """The eval's `scoring.threshold`: a run passes at that score; None: when every grader passes."""
    arm: None = None

    @property
    def target_of(self) -> None:
        return None

    def reads_trace(self) -> bool:
        return False

    def tools(self) -> list[str]:
        return []

    def with_only(self, calls_with_only: bool = False) -> bool:
        return False

    def checks_a_file(self, scaffolded: bool = False) -> bool:
        return self.type in ("file-exists", "file-contains", "file-matches")

    def config(self) -> dict[str, Any]:
        return dict(self.options)

