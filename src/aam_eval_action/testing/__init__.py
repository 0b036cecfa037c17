"""Local stand-ins for the services aam-eval talks to, for tests, benchmarks and offline recording.

- `model_server`: a scripted Anthropic Messages / OpenAI Responses server on 127.0.0.1
  (`python -m aam_eval_action.testing.model_server --scenarios FILE`);
- `github_server`: a GitHub-REST-compatible server for PyGitHub;
- `packages`: real AAM packages written to disk.

Nothing here is imported by the CLI itself.
"""
