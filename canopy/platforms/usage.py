"""What a harness reports a run consumed: tokens, cost, turns, duration and model.

Each CLI reports it in its own shape (Claude Code's final ``result``, Codex's
``turn.completed`` events, Gemini CLI's ``stats``); the adapters read those into one
:class:`~canopy.usagefmt.HarnessUsage` (defined below the platforms, since every layer
that shows usage reads it), so a ledger can sum runs of different harnesses, with the
helpers here. A field the harness does not report is ``None``, never a guessed zero.
"""

from __future__ import annotations

from typing import Any

from canopy.usagefmt import HarnessUsage as HarnessUsage  # re-exported: the adapters build it
from canopy.usagefmt import total as total


def count(mapping: object, *keys: str) -> int | None:
    """The first of ``keys`` in ``mapping`` holding a non-negative integer (bools are not)."""
    if not isinstance(mapping, dict):
        return None
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def amount(mapping: object, key: str) -> float | None:
    """``mapping[key]`` when it is a finite, non-negative number (a cost)."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value < float("inf") else None


def main_model(models: object, weight: str) -> str | None:
    """The model that did most of the work in a per-model breakdown (``{name: counts}``),
    by its ``weight`` count; ``None`` when the breakdown is absent or all zero."""
    if not isinstance(models, dict):
        return None
    weighed: list[tuple[int, str]] = [
        (count(counts, weight) or 0, name)
        for name, counts in models.items()
        if isinstance(name, str)
    ]
    best = max(weighed, default=(0, ""))
    return best[1] if best[0] > 0 else None


def events_of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events whose ``type`` is ``kind``, in order."""
    return [event for event in events if event.get("type") == kind]
