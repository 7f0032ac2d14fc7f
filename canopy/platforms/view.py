"""How a run's output reads for a person (``canopy graph logs``): the line forms every
adapter shares.

Each adapter turns its own CLI's events into these lines
(:meth:`~canopy.platforms.base.Platform.render`), so a Claude Code run, a Codex run and a
Gemini CLI run read alike: the agent's text as it wrote it, one line per tool call naming
what it works on, and a mark in front of everything that is not the agent's text. The
lines are text for a terminal only after the CLI has escaped them: agent output may hold
anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from canopy.platforms.usage import HarnessUsage
from canopy.usagefmt import used_text

EDIT = "✎"
"""A tool call that writes a file: ``✎ Write app/x.py``."""
SHELL = "$"
"""A shell command: ``$ make test``."""
TOOL = "→"
"""Any other tool call (read, search, fetch): ``→ Read README.md``."""
FAILED = "✗"
"""A failed tool call (``✗ Bash: exit code 1``) or the run's own failure."""
WARNING = "!"
"""A warning the CLI printed among its events."""
RETRY = "↻"
"""A retry the CLI announced (:class:`~canopy.platforms.base.RetryNotice`)."""
DENIED = "⊘"
"""A permission denial, as recorded on the node run."""
LIMIT = "⏸"
"""The usage limit the run hit, with when it resets."""
USAGE = "Σ"
"""What the run reported it used."""
MAX_LINE = 200
"""The longest a one-line reading gets (a command or a tool's error can be pages long)."""


@dataclass
class LogContext:
    """What earlier lines of one run's output said that later lines refer to.

    One per run's output, fed every line in order: a tool's result names only its call's
    id, Claude Code's tool calls give absolute paths that read better relative to the
    run's cwd, streamed text arrives in pieces, and CLIs repeat their failure.
    """

    cwd: str | None = None
    """The run's working directory, which paths read relative to (the run's workdir,
    or the one the CLI announces)."""
    tools: dict[str, str] = field(default_factory=dict)
    """Each tool call's name by its id."""
    text: str = ""
    """Streamed text not yet ended by a newline (shown when its message ends)."""
    failure: str | None = None
    """The run failure shown last, so the same one repeated is shown once."""

    def flush(self) -> list[str]:
        """The streamed text held back, as lines; none is held any more."""
        held, self.text = self.text, ""
        return text_lines(held)


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """``text`` on one line (a command may span several), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[: limit - 1]}…"


def relative(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it lies under it, else as given."""
    if cwd is None or not Path(path).is_absolute():
        return path
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path


def text_lines(text: str) -> list[str]:
    """The agent's text as lines, as it wrote them, without the blank lines around it."""
    return [line.rstrip() for line in text.strip("\n").splitlines()] if text.strip() else []


def marked(mark: str, text: str) -> list[str]:
    """``text`` after ``mark``, its further lines indented under the first."""
    first, *rest = text_lines(text) or [""]
    return [f"{mark} {first}", *(f"  {line}" for line in rest)]


def call_line(name: str, *, command: str | None = None, target: str | None = None) -> str:
    """One tool call: ``$ COMMAND`` for a shell command, else ``NAME TARGET`` after
    :data:`TOOL` (callers mark a file write with :func:`edit_line`)."""
    if command is not None:
        return f"{SHELL} {one_line(command)}"
    return one_line(f"{TOOL} {name} {target}" if target else f"{TOOL} {name}")


def edit_line(name: str, target: str | None) -> str:
    """A tool call that writes a file: ``✎ NAME TARGET``."""
    return one_line(f"{EDIT} {name} {target}" if target else f"{EDIT} {name}")


def failed_line(name: str | None, text: str) -> str:
    """A failed tool call: ``✗ NAME: first line of what it said``."""
    said = next((line for line in text_lines(text) if line.strip()), "failed")
    return one_line(f"{FAILED} {name}: {said}" if name else f"{FAILED} {said}")


def usage_line(usage: HarnessUsage | None) -> list[str]:
    """``Σ 1.2k in · 340 out · $0.2500 · 3 turns · claude-opus-4-6``: what the run
    reported it used, worded as ``graph info`` words it; nothing when it reported no
    tokens and no cost (a model alone, named before the run failed, is not usage)."""
    used = "" if usage is None else used_text(usage)
    if usage is None or not used:
        return []
    parts = [used]
    if usage.turns is not None:
        parts.append(f"{usage.turns} turn{'' if usage.turns == 1 else 's'}")
    if usage.model is not None:
        parts.append(usage.model)
    return [f"{USAGE} {' · '.join(parts)}"]
