#!/usr/bin/env bash
# The action's container for real: a Docker engine of its own, the base image made with
# debootstrap, the Dockerfiles built unchanged under the image references action.yml and
# live/action.yml name, and run as GitHub runs a docker action.
# Needs root (dockerd, debootstrap, chroot). Options: --live (also build live/Dockerfile),
# --keep (leave the engine's directory for debugging). See tests/docker/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" -ne 0 ]; then
  echo "run_container_test.sh: needs root (it starts dockerd)" >&2
  exit 2
fi

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The interpreter the project is installed in (.ci/run uses `python`).
exec "$(command -v python || command -v python3)" tests/docker/run_action.py "$@"
