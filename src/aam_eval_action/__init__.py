"""Record, replay and diff LLM-judged agent evals of AAM packages."""

__version__ = "0.1.0"
