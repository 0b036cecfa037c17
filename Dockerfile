# The image of `uses: org/aam-eval-action@v1`: replays the evals from cassettes, so it
# needs Python, git and the pinned dependencies, and nothing of the live modes (Node and
# the agent CLIs are in live/Dockerfile, for the `live` variant). The release workflow
# builds it once per version and action.yml runs that prebuilt image: keep it small and
# the slow layers first. Build context: the repository's root.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

LABEL org.opencontainers.image.title="aam-eval-action" \
      org.opencontainers.image.description="Replay and diff LLM-judged agent evals on pull requests"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# git replays the base branch from a worktree of the checked-out repository. Only its C
# commands are used (rev-parse, fetch, worktree), so the Perl packages that Debian's git
# package pulls in for a few scripted commands are removed again, found by comparing the
# installed packages before and after (their names carry Perl's version, which differs
# between Debian releases): about 45 MB less. perl-base, which dpkg itself needs, was
# there before and stays.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN dpkg-query -W -f '${Package}\n' | sort > /tmp/before \
    && apt-get update \
    && apt-get install -y --no-install-recommends git \
    && dpkg-query -W -f '${Package}\n' | sort | comm -13 /tmp/before - \
       | grep -E '^(perl|perl-modules-.+|libperl[0-9.]+|liberror-perl|git-man)$' > /tmp/purge \
    && echo "purging: $(tr '\n' ' ' < /tmp/purge)" \
    && xargs dpkg --purge --force-depends < /tmp/purge \
    && git --version \
    && rm -rf /tmp/before /tmp/purge /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*

# The mounted workspace belongs to the runner's user, not to root in here.
RUN git config --system --add safe.directory '*'

# Dependencies before the source: editing src/ rebuilds only the layers below.
COPY requirements/action.txt /tmp/requirements/action.txt
RUN pip install --no-compile --requirement /tmp/requirements/action.txt \
    && rm -rf /tmp/requirements

COPY pyproject.toml README.md /tmp/aam-eval-action/
COPY src /tmp/aam-eval-action/src
# testing/ (the scripted servers of the tests, benches and example) is not part of the action.
RUN rm -rf /tmp/aam-eval-action/src/aam_eval_action/testing \
    && pip install --no-compile --no-deps /tmp/aam-eval-action \
    && rm -rf /tmp/aam-eval-action

ENTRYPOINT ["aam-eval", "action"]
