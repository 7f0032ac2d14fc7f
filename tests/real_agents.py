"""The real agent CLIs wired into a test's data dir, each against its scripted model.

:func:`real_agents` starts one scripted server per vendor inside a loopback-only network
namespace and writes the data dir's ``config.toml`` so that the built-in ``claude``,
``codex`` and ``gemini`` platforms launch the pinned CLIs (``node_modules/.bin``) inside
that namespace, with an isolated home and the vendor's URL and key. Everything else is
Canopy as a user runs it: its argv, its permission levels, its worker and store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.model_server import anthropic, gemini, openai
from tests.model_server.clis import cli_path
from tests.model_server.core import (
    LoopbackOnly,
    ModelServer,
    Request,
    Script,
    Vendor,
    loopback_only,
)

CLIS = ("claude", "codex", "gemini")
HARNESS_HOMES = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "gemini": "GEMINI_CLI_HOME"}


@dataclass(frozen=True)
class VendorKit:
    """How one CLI reaches its scripted vendor: the API class and the env it needs."""

    api: Callable[[Script], Vendor]
    env: Callable[[ModelServer, Path], dict[str, str]]
    quick: dict[str, str] = field(default_factory=dict)
    """Env that keeps the CLI's own retries short, so a limit answer ends the run soon."""


KITS: dict[str, VendorKit] = {
    "claude": VendorKit(
        anthropic.AnthropicAPI,
        anthropic.cli_env,
        {"CLAUDE_CODE_MAX_RETRIES": "0"},
    ),
    "codex": VendorKit(openai.OpenAIResponsesAPI, openai.cli_env),
    "gemini": VendorKit(
        gemini.GeminiAPI, lambda server, home: gemini.cli_env(server, home, max_attempts=1)
    ),
}


@dataclass
class RealAgents:
    """The scripted servers the configured CLIs talk to, by platform name."""

    network: LoopbackOnly
    scripts: dict[str, Script]
    servers: dict[str, ModelServer]

    def requests(self, platform: str) -> list[Request]:
        """The agent's own requests (POSTs with a JSON body) the platform's CLI made."""
        return [
            request
            for request in self.servers[platform].requests
            if request.method == "POST" and isinstance(request.body, dict)
        ]

    def sent(self, platform: str) -> str:
        """Everything the platform's CLI sent, as one JSON text (to look for a prompt)."""
        return json.dumps([request.body for request in self.requests(platform)])


@contextmanager
def real_agents(
    canopy_home: Path,
    cli_home: Path,
    setenv: Callable[[str, str], None],
    env: dict[str, str] | None = None,
) -> Iterator[RealAgents]:
    """Scripted servers for every vendor and a ``config.toml`` in ``canopy_home`` that
    launches the real CLIs against them, with ``cli_home`` as their home and ``env`` on
    top. The harness home variables of this process point into ``cli_home`` too (set with
    ``setenv``, a monkeypatch's), so the adapters read the conversations the CLIs write."""
    cli_home.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        network = stack.enter_context(loopback_only())
        scripts = {name: Script() for name in CLIS}
        servers = {
            name: stack.enter_context(ModelServer(KITS[name].api(scripts[name]), network))
            for name in CLIS
        }
        tables = []
        for name in CLIS:
            launch_env = {
                **KITS[name].env(servers[name], cli_home),
                **KITS[name].quick,
                **(env or {}),
            }
            setenv(HARNESS_HOMES[name], launch_env[HARNESS_HOMES[name]])
            prefix = [*network.prefix(), "env", *(f"{k}={v}" for k, v in launch_env.items())]
            executable = json.dumps([*prefix, str(cli_path(name))])
            tables.append(f"[platforms.{name}]\nexecutable = {executable}\n")
        (canopy_home / "config.toml").write_text("\n".join(tables))
        yield RealAgents(network, scripts, servers)
