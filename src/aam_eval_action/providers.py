"""Model providers: one table of what differs between Anthropic, OpenAI and Gemini.

Everything provider-specific that is not an SDK call lives here: which variable holds the
key and the base URL, the public API host (judge cassettes are canonicalised to it), the
default model, and how to tell a model name's provider. Adding a provider is one entry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    """One model provider, as the engines, the judge and the settings see it."""

    name: str
    """`anthropic` or `openai`."""
    key_var: str
    """Environment variable holding the API key."""
    base_url_var: str
    """Environment variable holding a gateway or local server's base URL."""
    api_host: str
    """The public API host; recordings are stored as if made against it."""
    default_base_url: str
    """Base URL when none is configured (what the SDK and the CLI use by default)."""
    default_model: str
    """Judge model when nothing else is configured."""
    model_prefixes: tuple[str, ...]
    """Model-name prefixes that belong to this provider."""
    base_url_path: str = ""
    """What a base URL carries after the host (`/v1` for OpenAI's clients), e.g. for a proxy's URL."""
    judge: bool = True
    """Whether the judge can run on this provider's models (through its SDK)."""


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(
        name="anthropic", key_var="ANTHROPIC_API_KEY", base_url_var="ANTHROPIC_BASE_URL",
        api_host="api.anthropic.com", default_base_url="https://api.anthropic.com",
        default_model="claude-sonnet-4-6", model_prefixes=("claude", "anthropic"),
    ),
    "openai": Provider(
        name="openai", key_var="OPENAI_API_KEY", base_url_var="OPENAI_BASE_URL",
        api_host="api.openai.com", default_base_url="https://api.openai.com/v1",
        default_model="gpt-5.5",
        model_prefixes=("gpt", "o1", "o3", "o4", "codex", "openai", "chatgpt"), base_url_path="/v1",
    ),
    # The Gemini API: the Gemini CLI's models. The judge does not run on it (no SDK of ours).
    "gemini": Provider(
        name="gemini", key_var="GEMINI_API_KEY", base_url_var="GOOGLE_GEMINI_BASE_URL",
        api_host="generativelanguage.googleapis.com",
        default_base_url="https://generativelanguage.googleapis.com", default_model="gemini-2.5-pro",
        model_prefixes=("gemini",), judge=False,
    ),
}

KEY_VARS = tuple(p.key_var for p in PROVIDERS.values())
JUDGE_PROVIDERS = tuple(p.name for p in PROVIDERS.values() if p.judge)
BASE_URL_VARS = tuple(p.base_url_var for p in PROVIDERS.values())


def provider_for_model(model: str, fallback: str) -> str:
    """Which provider serves a model name: Claude models → anthropic, GPT/o-series → openai."""
    lowered = model.lower()
    for provider in PROVIDERS.values():
        if lowered.startswith(provider.model_prefixes):
            return provider.name
    return fallback
