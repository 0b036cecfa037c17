"""Which layout a repository is in, and its packages in the neutral form the engines install.

One module per layout: `aam`, `marketplace`, one per host's plugin (`claude_plugin`,
`codex_plugin`, `copilot_plugin`, `gemini_extension`, merged by `plugin` when one folder has
several hosts' manifests) and `skills_folder`. A new layout is one module, one entry in
`detect.detect` and its tests.
"""
