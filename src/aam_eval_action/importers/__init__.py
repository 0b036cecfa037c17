"""Eval files of other tools, read as they are into our cases.

One module per format: `skill_creator` (Anthropic's skill-creator `evals/evals.json`, and
evolve's superset of it with typed assertions), `triggers` (trigger sets in their three shapes)
and `openai_skills` (`evaluations/*.json`). `discover` finds the files beside each skill and in
`evals/<skill>/`, tells their format by their content and hands the cases to the loader;
nothing downstream learns where a case came from but its provenance in the report.
"""
