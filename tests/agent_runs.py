"""Running an agent CLI (the fake one) through its platform adapter, as Canopy does:
the adapter's argv, its stdin, and what the adapter reads back from the output."""

import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from canopy.permissions import DEFAULT_PERMISSIONS, Permissions
from canopy.platforms import Platform, UsageLimit


@dataclass
class Run:
    """One finished agent process, read through its platform adapter."""

    code: int
    stdout: str
    stderr: str
    session_id: str | None
    limit: UsageLimit | None


def run_agent(
    platform: Platform,
    prompt: str,
    cwd: Path,
    *,
    resume: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    permissions: Permissions = DEFAULT_PERMISSIONS,
    **env: str,
) -> Run:
    invocation = platform.build_invocation(
        prompt, model=model, effort=effort, resume_session_id=resume, permissions=permissions
    )
    done = subprocess.run(
        invocation.argv,
        input=invocation.stdin,
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=30,
        check=False,
    )
    ids = [platform.session_id_from_line(text) for text in done.stdout.splitlines()]
    session_id = next((found for found in reversed(ids) if found), None)
    limit = platform.usage_limit(done.stdout + done.stderr, datetime.now(UTC))
    return Run(done.returncode, done.stdout, done.stderr, session_id, limit)
