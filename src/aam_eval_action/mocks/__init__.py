"""MCP mocks of `claude plugin eval` suites: `mocks/<server>/` folders, read as that runner reads
them, and served to any engine's CLI by a stand-in MCP server of ours (`mocks/server.py`).

A case's mocks are layered from its eval dir down to its own folder: every folder on that path
may hold a `mocks/`, and a deeper layer's `<tool>.md` answers over a shallower one's. In a
server folder:

* `<tool>.md` answers the tool `<tool>`: its body (leading blank lines and trailing space cut) is
  the text returned, with `{{input.a.b}}` and `{{file:rel/{input.id}.json}}` (a file of that
  folder) filled in; `error: true` returns it as a tool error; `expect:` guards the input (a
  dotted path → a list of allowed literals, a type name, a literal, or a `/regex/`), and a call
  that breaks a guard aborts the run (it scores 0, ungraded).
* `_tools.json` is a saved `tools/list` (the tools' descriptions and input schemas); a tool it
  does not list is offered with an empty description and any input.
* `_server.md` (`type: agent`, `tools: [...]`, `abort_when:`) is a model playing the server: the
  stand-in hands its calls to the harness (`pipeline/mock_agent.py`), which asks the model and
  records the answers in the case's own cassette.

A folder named after a server of the plugin under test shadows it (its tools keep their names,
`mcp__plugin_<plugin>_<server>__<tool>` on Claude Code); any other folder is a standalone server
of that name, present in both arms. A plugin server no folder mocks is not started, unless the
run allows real servers (`--allow-real-servers`).

What that runner refuses is refused here, naming the file and what to write instead.
"""

from __future__ import annotations

from aam_eval_action.mocks.calls import (
    aborted,
    calls_text,
    parsed,
)
from aam_eval_action.mocks.model import (
    FRONT_KEYS,
    PLACEHOLDER,
    SEGMENT,
    Mocks,
    MockServer,
    Responder,
    segment,
)
from aam_eval_action.mocks.reading import (
    guard_problems,
    layers,
    load,
)
from aam_eval_action.mocks.serving import (
    Served,
    declared,
    for_case,
    serve,
)
from aam_eval_action.mocks.shadowing import (
    resolve,
    spec,
    with_only_calls,
)

__all__ = [
    "FRONT_KEYS",
    "PLACEHOLDER",
    "SEGMENT",
    "MockServer",
    "Mocks",
    "Responder",
    "Served",
    "aborted",
    "calls_text",
    "declared",
    "for_case",
    "guard_problems",
    "layers",
    "load",
    "parsed",
    "resolve",
    "segment",
    "serve",
    "spec",
    "with_only_calls",
]
