"""The agent behind the built-in ``demo`` platform: no API key, no network.

``python -m canopy.platforms.demo_agent -p --output-format stream-json --verbose
[PERMISSION FLAGS] [--model M] [--effort E] [--resume ID | --session-id ID]
[--max-budget-usd USD] [-- PROMPT]`` accepts Claude Code's argv (the prompt on stdin when
no argument gives it, as Canopy passes it; the permission flags and the budget are taken
and ignored), prints Claude-style stream-json
(an ``init`` event with the resumed or the chosen session id, else a fresh one, an
assistant message and a ``result``), and does a tiny, visible piece of work in the
current directory, which must be a git work tree: it appends ``- <first prompt line>`` to
``CHANGES.md`` and commits it. Commits carry their own identity (``-c user.name=…``), so
the demo works on a machine where git was never configured.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

CHANGES_FILE = "CHANGES.md"
_GIT_IDENTITY = (
    "-c",
    "user.name=Canopy demo agent",
    "-c",
    "user.email=demo-agent@canopy.invalid",
    "-c",
    "commit.gpgsign=false",
)
_TITLE_LIMIT = 72


def main(argv: list[str] | None = None) -> int:
    """Run one demo turn; exit 0 after committing, 1 if git refused."""
    args = _parser().parse_args(argv)
    session_id = args.resume or args.session_id or str(uuid.uuid4())
    model = args.model or "demo"
    _emit({"type": "system", "subtype": "init", "session_id": session_id, "model": model})
    title = _title(sys.stdin.read() if args.prompt is None else args.prompt)
    try:
        _commit_change(Path.cwd(), title)
    except (OSError, subprocess.CalledProcessError) as error:
        _emit(_result(session_id, f"demo agent could not commit: {_reason(error)}", error=True))
        return 1
    text = f"Added {title!r} to {CHANGES_FILE} and committed it."
    _emit(_assistant(session_id, model, text))
    _emit(_result(session_id, text, error=False))
    return 0


def _parser() -> argparse.ArgumentParser:
    """The subset of Claude Code's options the demo platform passes."""
    parser = argparse.ArgumentParser(prog="demo_agent", description=__doc__)
    parser.add_argument("-p", "--print", action="store_true")
    parser.add_argument("--output-format", default="stream-json")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--model")
    parser.add_argument("--effort")
    parser.add_argument("--resume")
    parser.add_argument("--session-id")
    for option in ("--permission-mode", "--allowedTools", "--settings", "--max-budget-usd"):
        parser.add_argument(option)
    parser.add_argument("prompt", nargs="?")
    return parser


def _title(prompt: str) -> str:
    """The prompt's first non-blank line, short enough for a commit subject."""
    for line in prompt.splitlines():
        if line.strip():
            return line.strip()[:_TITLE_LIMIT]
    return "(empty prompt)"


def _commit_change(workdir: Path, title: str) -> None:
    """Append the title to CHANGES.md and commit that file."""
    with (workdir / CHANGES_FILE).open("a", encoding="utf-8") as changes:
        changes.write(f"- {title}\n")
    _git(workdir, "add", CHANGES_FILE)
    _git(workdir, *_GIT_IDENTITY, "commit", "--quiet", "-m", f"demo: {title}")


def _git(workdir: Path, *args: str) -> None:
    """Run git quietly (stdout is the event stream); raise with its stderr on failure."""
    subprocess.run(["git", *args], cwd=workdir, check=True, capture_output=True, text=True)


def _reason(error: OSError | subprocess.CalledProcessError) -> str:
    """One line saying why git failed."""
    if isinstance(error, subprocess.CalledProcessError):
        detail = (error.stderr or "").strip().splitlines()
        return detail[-1] if detail else f"git exited {error.returncode}"
    return str(error)


def _assistant(session_id: str, model: str, text: str) -> dict[str, Any]:
    """An assistant message event, shaped like Claude Code's."""
    message = {"role": "assistant", "model": model, "content": [{"type": "text", "text": text}]}
    return {"type": "assistant", "message": message, "session_id": session_id}


def _result(session_id: str, text: str, *, error: bool) -> dict[str, Any]:
    """The final ``result`` event, shaped like Claude Code's."""
    return {
        "type": "result",
        "subtype": "error_during_execution" if error else "success",
        "is_error": error,
        "num_turns": 1,
        "result": text,
        "session_id": session_id,
    }


def _emit(event: dict[str, Any]) -> None:
    """Print one event as a JSON line, flushed so the caller sees it at once."""
    print(json.dumps(event, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    sys.exit(main())
