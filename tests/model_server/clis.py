"""The real agent CLIs, as package.json pins them, run where they can reach nothing real.

``make test`` installs them (``npm ci``) into ``node_modules/``; a test that needs one and
finds it missing fails saying so, rather than skipping what it is there to check.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NODE_BIN = REPO / "node_modules" / ".bin"

QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "GEMINI_TELEMETRY_ENABLED": "false",
    "NO_UPDATE_NOTIFIER": "1",
    "NO_COLOR": "1",
}
"""No telemetry, update checks or error reports: nothing a CLI does on the side."""


def cli_path(name: str) -> Path:
    """``node_modules/.bin/<name>`` (``claude``, ``codex``, ``gemini``)."""
    path = NODE_BIN / name
    if not os.access(path, os.X_OK):
        pytest.fail(f"{name} is not installed in {NODE_BIN}: run `make clis` (npm ci)")
    return path


def isolated_home(root: Path) -> dict[str, str]:
    """A temp home for the CLIs: HOME, the XDG dirs and each CLI's own home variable, so a
    test never reads or writes the developer's logins, settings or sessions."""
    dirs = {
        "HOME": root,
        "XDG_CONFIG_HOME": root / ".config",
        "XDG_DATA_HOME": root / ".local" / "share",
        "XDG_CACHE_HOME": root / ".cache",
        "XDG_STATE_HOME": root / ".local" / "state",
        "CLAUDE_CONFIG_DIR": root / ".claude",
        "CODEX_HOME": root / ".codex",
        "GEMINI_CLI_HOME": root,
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    credentials = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_")
    cleared = {name: "" for name in os.environ if name.startswith(credentials)}
    return {**cleared, **QUIET, **{name: str(path) for name, path in dirs.items()}}
