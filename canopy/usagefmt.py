"""What a harness reported used: the one value type for it, and its wording for people.

:class:`UsageCounts` (tokens, cost, turns, duration) is what the usage ledger sums, and
:class:`HarnessUsage` adds the model a harness names: the adapters read each CLI's report
into it, node and hook results carry it, the run keeps its running total in it, and
``graph info``'s records are built on it. A field the harness does not report is
``None``, never a guessed zero. The CLI's tables and the platform adapters' log views
(``canopy graph logs``) word usage alike, so both take it from here, below every layer
that shows it. Stdlib only and cheap to import: ``graph info`` draws its tables with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Self


@dataclass(frozen=True)
class UsageCounts:
    """The summable part of what a harness reported: tokens, cost, turns and duration.

    ``input_tokens`` excludes the cached input the harness reports apart
    (``cache_read_tokens``; ``cache_write_tokens`` for Claude's cache creation), as each
    CLI's own counts do; ``cost_usd`` is only set when the harness prices the run. These
    are also the usage ledger's columns, on ``node_runs`` and ``hook_runs`` alike.
    """

    __pydantic_config__: ClassVar[dict[str, Any]] = {
        "json_schema_serialization_defaults_required": True
    }
    """For the published schema of ``graph info``'s records built on it: every field is
    always in the JSON (``null`` when not reported), defaults or not."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    turns: int | None = None
    duration_ms: int | None = None

    @classmethod
    def picked(cls, row: Mapping[str, Any]) -> Self:
        """The counts of a stored row or JSON answer that carries them by their names
        (a name it lacks is not reported)."""
        return cls(**{item.name: row.get(item.name) for item in fields(cls)})

    def tokens(self) -> tuple[int | None, int | None, int | None, int | None]:
        """The four token counts: input, output, cache read, cache write."""
        return (
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
        )


USAGE_COUNTS = tuple(item.name for item in fields(UsageCounts))
"""The names of :class:`UsageCounts`' fields: the ledger's summable columns."""


@dataclass(frozen=True)
class HarnessUsage(UsageCounts):
    """Tokens, cost, turns, duration and model of one harness run, as the harness says."""

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


def total(values: list[int | None]) -> int | None:
    """The sum of the reported values; ``None`` when none was reported."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def used_text(usage: UsageCounts) -> str:
    """``1.2k in · 340 out · 5k cache read · $0.25``: what a harness reported used, in
    one table cell or log line; what it did not report is left out (blank when it reported
    nothing)."""
    parts = [
        f"{count_text(count)} {what}"
        for count, what in zip(
            usage.tokens(), ("in", "out", "cache read", "cache write"), strict=True
        )
        if count is not None
    ]
    if usage.cost_usd is not None:
        parts.append(cost_text(usage.cost_usd))
    return " · ".join(parts)


def count_text(count: int) -> str:
    """``950``, ``1.2k``, ``3.4M``: a token count at a glance."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def cost_text(cost_usd: float) -> str:
    """``$12.40``, or ``$0.0031`` for less than a dollar, whose cents would hide it."""
    return f"${cost_usd:.2f}" if cost_usd >= 1 else f"${cost_usd:.4f}"
