# The Canopy worker image, built by docker-compose.yml's `canopy-worker` service:
#   docker build -t canopy-worker .
# It runs `canopy worker` as an unprivileged user. Its data dir (CANOPY_HOME), the workdirs
# and the agents' logins are volumes; Temporal and the store are reached by address
# (TEMPORAL_ADDRESS, CANOPY_DB_URL). docs/operations.md, "Scaling out", explains them.

# Pinned to the patch release and Debian release. Python 3.11 is the version the pins in
# constraints.txt are resolved and tested on (CI's), and Debian 13 ships Node.js 20, the
# oldest the agent CLIs below support.
FROM python:3.11.14-slim-trixie

# The agent CLIs (Claude Code, Codex, Gemini CLI) at the versions package-lock.json pins,
# the ones Canopy's tests ran; build with AGENT_CLIS=0 for an image that runs command
# nodes only (and no Node.js).
ARG AGENT_CLIS=1
# The worker's uid/gid: the owner of the workdirs on the host (docker-compose.yml passes
# CANOPY_UID/CANOPY_GID), so agents can write there and git trusts the repositories.
ARG CANOPY_UID=1000
ARG CANOPY_GID=1000

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git for the workdir activities (dirty-tree guard, worktrees), ssh for git remotes.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git openssh-client \
        $(if [ "$AGENT_CLIS" = 1 ]; then echo nodejs npm; fi) \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/canopy/agents
COPY package.json package-lock.json ./
RUN if [ "$AGENT_CLIS" = 1 ]; then \
        npm ci --no-fund --no-audit && npm cache clean --force; \
    fi

# Dependencies first, from pyproject.toml at the versions constraints.txt pins, so that a
# change to Canopy's code alone reuses this layer: the dependencies and the `postgres` extra
# (psycopg, the driver for CANOPY_DB_URL), i.e. what `pip install 'canopy[postgres]'` pulls in.
WORKDIR /opt/canopy/src
COPY pyproject.toml constraints.txt ./
RUN python -m venv /opt/canopy/venv \
    && python -c "import tomllib; project = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(project['dependencies'] + project['optional-dependencies']['postgres']))" > /tmp/requirements.txt \
    && /opt/canopy/venv/bin/pip install -c constraints.txt -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# Canopy itself (not editable: the venv owns a copy, the source can go). canopy/ holds
# links to the top-level cli/, tui/, workflows/, activities/ and worker.py, copied beside it.
COPY README.md ./
COPY canopy/ canopy/
COPY cli/ cli/
COPY tui/ tui/
COPY workflows/ workflows/
COPY activities/ activities/
COPY worker.py ./
RUN /opt/canopy/venv/bin/pip install -c constraints.txt --no-deps '.[postgres]' \
    && rm -rf /opt/canopy/src/build

RUN groupadd --gid "$CANOPY_GID" canopy \
    && useradd --uid "$CANOPY_UID" --gid canopy --create-home --shell /bin/bash canopy \
    && mkdir -p /var/lib/canopy /home/canopy/.claude /home/canopy/.codex /home/canopy/.gemini \
    && chown -R canopy:canopy /var/lib/canopy /home/canopy

ENV PATH=/opt/canopy/venv/bin:/opt/canopy/agents/node_modules/.bin:$PATH \
    CANOPY_HOME=/var/lib/canopy

USER canopy
WORKDIR /home/canopy

# Exec form: SIGTERM from `docker stop` reaches the worker, which shuts down gracefully.
ENTRYPOINT ["canopy"]
CMD ["worker"]
