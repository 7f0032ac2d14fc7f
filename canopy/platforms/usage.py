"""What a harness reports a run consumed: tokens, cost, turns, duration and model.

Each CLI reports it in its own shape (Claude Code's final ``result``, Codex's
``turn.completed`` events, Gemini CLI's ``stats``); the adapters read those into one
:class:`HarnessUsage`, so a ledger can sum runs of different harnesses. A field the
harness does not report is ``None``, never a guessed zero.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class HarnessUsage:
    """Tokens, cost, turns, duration and model of one harness run, as the harness says.

    ``input_tokens`` excludes the cached input the harness reports apart
    (``cache_read_tokens``; ``cache_write_tokens`` for Claude's cache creation), as each
    CLI's own counts do; ``cost_usd`` is only set when the harness prices the run.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    turns: int | None = None
    duration_ms: int | None = None
    model: str | None = None

    @property
    def empty(self) -> bool:
        """Whether the harness reported nothing at all."""
        return all(getattr(self, item.name) is None for item in fields(self))

    def plus(self, other: HarnessUsage | None) -> HarnessUsage:
        """Both runs' usage together (a running total): each count summed over the runs
        that reported it, still ``None`` when neither did; the model kept only when both
        name the same one (or one names none)."""
        if other is None:
            return self
        cost = [value for value in (self.cost_usd, other.cost_usd) if value is not None]
        models = {model for model in (self.model, other.model) if model is not None}
        return HarnessUsage(
            input_tokens=total([self.input_tokens, other.input_tokens]),
            output_tokens=total([self.output_tokens, other.output_tokens]),
            cache_read_tokens=total([self.cache_read_tokens, other.cache_read_tokens]),
            cache_write_tokens=total([self.cache_write_tokens, other.cache_write_tokens]),
            cost_usd=sum(cost) if cost else None,
            turns=total([self.turns, other.turns]),
            duration_ms=total([self.duration_ms, other.duration_ms]),
            model=models.pop() if len(models) == 1 else None,
        )


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


def total(values: list[int | None]) -> int | None:
    """The sum of the reported values; ``None`` when none was reported."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


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
