"""A drafting call, recorded like the judge's: `init`'s drafts and `tune --draft-test`'s.

The answer is played from its cassette when the same request was recorded (`replay`, and `auto`
when it is there); otherwise the model is asked through its SDK and the exchange is recorded.
Every failure is a `DraftRefused` with what to do, never a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aam_eval_action.drafting.request import DraftRefused, answer_from_body, request_params
from aam_eval_action.fsutil import runner_checkout
from aam_eval_action.providers import PROVIDERS
from aam_eval_action.replay.outage import ApiDown
from aam_eval_action.settings import RunSettings


def recorded_draft(s: RunSettings, path: Path, provider: str, model: str, text: str, replay: bool,
                   provenance: dict[str, Any], redo: str, auto: bool = False) -> dict[str, Any]:
    """The model's drafted object for `text`: played from the cassette at `path` (`replay`, or
    `auto` when recorded), else asked and recorded there with `provenance`. `redo` says how to
    draft again when a replay has no recording of the request."""
    from aam_eval_action.replay.judge_cassette import JudgeCassette

    params = request_params(provider, model, text)
    mode = "replay" if replay else "auto" if auto else "record"
    try:
        jc = JudgeCassette(path, mode, provider, s.redactor().text, s.cassettes, s.network,
                           checkout=runner_checkout(s.runner_env))
    except Exception as exc:  # our safe reader's or vcrpy's error on a damaged or missing file
        raise DraftRefused(f"{path}: no usable recording ({str(exc)[:200]}); {redo}") from None
    if mode != "record":
        api = "/v1/messages" if provider == "anthropic" else "/v1/responses"
        body = jc.play_recorded(provider, api, params)
        if body is not None:
            return answer_from_body(provider, body)
        if replay:
            raise DraftRefused(f"{path} has no recording of this request: the skill or its siblings changed "
                               f"since it was drafted; {redo}")
    body = call_model(s, provider, params, jc)
    answer = answer_from_body(provider, body)
    jc.save(provenance)
    return answer


def call_model(s: RunSettings, provider: str, params: dict[str, Any], jc: Any) -> Any:
    """One structured request through the provider's SDK, its exchange recorded by `jc`."""
    from aam_eval_action.model_calls import api_down, client

    if not s.api_key(provider):
        raise DraftRefused(
            f"no {PROVIDERS[provider].key_var} is set: drafting calls the model (or pass "
            "--replay to redraft from the recordings)"
        )
    try:
        with client(provider, s.base_url(provider), s.api_key(provider), jc.http_client(), 4) as sdk, \
                api_down(provider, 4):
            create = sdk.messages.create if provider == "anthropic" else sdk.responses.create
            return create(**params).model_dump(mode="json")
    except ApiDown as down:  # not recorded: the next run asks again
        raise DraftRefused(str(down)) from None
    except Exception as exc:  # any SDK error after its retries: this skill is refused, the others go on
        raise DraftRefused(
            f"the drafting call failed: {type(exc).__name__}: {s.redactor().text(str(exc))[:300]}"
        ) from None
