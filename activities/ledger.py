"""The usage ledger's writes: what a node run's or hook run's harness reported it used.

The adapters read usage from a run's whole log (Codex reports it per turn, Claude Code and
Gemini CLI at the end), so it is read once the process has ended, from the log the run
wrote. Command nodes and command hooks have no harness: they record nothing (``NULL``),
never a guessed zero.
"""

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from canopy.platforms import HarnessUsage, Platform


@dataclass(frozen=True)
class LogReport:
    """What a harness reported in a run's log: its usage (``None``: nothing reported) and
    the permission denials it met, one line each."""

    usage: HarnessUsage | None = None
    denials: list[str] = field(default_factory=list)


def read_report(platform: Platform | None, log: Path | None) -> LogReport:
    """What ``platform``'s harness reported in ``log``, read once; nothing without a
    harness or a log. An unreadable log is reported as nothing, not an error: the run's
    own outcome is what matters."""
    if platform is None or log is None:
        return LogReport()
    try:
        output = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return LogReport()
    return LogReport(platform.usage(output), platform.denials(output))


def usage_columns(usage: HarnessUsage | None) -> dict[str, Any]:
    """The usage columns of a node run's or hook run's row (named as
    :class:`HarnessUsage`'s fields) as ``usage`` sets them; all ``NULL`` when there is
    none."""
    return {
        item.name: getattr(usage, item.name) if usage is not None else None
        for item in fields(HarnessUsage)
    }
