"""A graph's budget: what a run (and each spec in it) may spend, what it has spent, and
whether it has reached it.

The setting is stored as the graph wrote it (``{"run": {"usd": 5, "tokens": 2000000},
"spec": {"usd": 1}}``); the run reads it afresh, with what the usage ledger says the run
and the upcoming spec have spent, before every node launch (:class:`BudgetState`, carried
by the read-ahead the run makes anyway). :func:`reached` says which limit, if any, is
reached; :func:`remaining_usd` is what a CLI with its own spending cap may spend on the
node about to launch. ``graph info`` shows the same numbers from the same ledger.

What counts: the cost in USD the harnesses reported, and their input, output and cache
write tokens (cache reads are the same context read again each turn, priced at a tenth:
counted, they would make a token budget measure the length of a conversation rather than
the work done). An agent run whose harness reported no cost (Codex and Gemini CLI price
nothing) or no tokens counts as nothing towards that limit, and is counted apart as
unknown, so a person reading the blocker or ``graph info`` knows the figure is a floor.
Command nodes and command hooks have no harness: what they spend is not seen at all.

Stdlib only: the workflow checks budgets deterministically with these functions, and
``graph info`` reads them without pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from canopy.usagefmt import cost_text

Scope = Literal["run", "spec"]
Unit = Literal["usd", "tokens"]
SCOPES: tuple[Scope, ...] = ("run", "spec")
UNITS: tuple[Unit, ...] = ("usd", "tokens")


@dataclass(frozen=True)
class Limits:
    """The most one scope may spend: in USD, in tokens, or both (``None``: no limit)."""

    usd: float | None = None
    tokens: int | None = None


@dataclass(frozen=True)
class Spent:
    """What one scope has spent, as the budget counts it, and how many agent runs in it
    reported no cost (``no_cost``) or no tokens (``no_tokens``): counted as nothing."""

    usd: float = 0.0
    tokens: int = 0
    no_cost: int = 0
    no_tokens: int = 0

    def of(self, unit: Unit) -> float:
        """The amount spent in ``unit``."""
        return self.usd if unit == "usd" else self.tokens

    def unknown(self, unit: Unit) -> int:
        """How many agent runs reported nothing in ``unit``."""
        return self.no_cost if unit == "usd" else self.no_tokens


@dataclass(frozen=True)
class BudgetState:
    """A graph's budget as stored now, with what the run and the upcoming spec spent."""

    run: Limits | None = None
    spec: Limits | None = None
    run_spent: Spent = Spent()
    spec_spent: Spent = Spent()

    def scope(self, scope: Scope) -> tuple[Limits | None, Spent]:
        """The limits and the spending of ``scope``."""
        return (self.run, self.run_spent) if scope == "run" else (self.spec, self.spec_spent)


@dataclass(frozen=True)
class Reached:
    """A limit reached: its scope and unit, what was spent, the limit, and how many agent
    runs reported nothing in that unit."""

    scope: Scope
    unit: Unit
    spent: float
    limit: float
    unknown: int


def stored_limits(data: Mapping[str, Any] | None) -> Limits | None:
    """One scope's limits from the stored JSON (``None``: that scope has none)."""
    if not data:
        return None
    return Limits(usd=data.get("usd"), tokens=data.get("tokens"))


def budget_limits(stored: Mapping[str, Any] | None) -> tuple[Limits | None, Limits | None]:
    """The run's and each spec's limits from a graph's stored ``budget``."""
    if not stored:
        return None, None
    return stored_limits(stored.get("run")), stored_limits(stored.get("spec"))


def reached(state: BudgetState | None) -> Reached | None:
    """The first limit ``state`` has reached (spent at or above it): the run's before the
    spec's, USD before tokens; ``None`` when the run may launch its next node."""
    if state is None:
        return None
    for scope in SCOPES:
        limits, spent = state.scope(scope)
        if limits is None:
            continue
        for unit in UNITS:
            limit = limits.usd if unit == "usd" else limits.tokens
            if limit is not None and spent.of(unit) >= limit:
                return Reached(scope, unit, spent.of(unit), limit, spent.unknown(unit))
    return None


def remaining_usd(state: BudgetState | None) -> float | None:
    """What the next node may still spend in USD: the least left of the run's and the
    spec's USD limits (``None``: no USD limit applies)."""
    if state is None:
        return None
    left = [
        limits.usd - spent.usd
        for limits, spent in (state.scope(scope) for scope in SCOPES)
        if limits is not None and limits.usd is not None
    ]
    return max(min(left), 0.0) if left else None


def amount_text(amount: float, unit: Unit) -> str:
    """``$5.12`` (:func:`~canopy.usagefmt.cost_text`; nothing spent is ``$0.00``) or
    ``1,200,000 tokens``."""
    if unit == "usd":
        return cost_text(amount) if amount else "$0.00"
    return f"{int(amount):,} tokens"


def limits_text(limits: Limits) -> str:
    """``$5.00 · 2,000,000 tokens``: one scope's limits."""
    parts = [amount_text(limits.usd, "usd")] if limits.usd is not None else []
    if limits.tokens is not None:
        parts.append(amount_text(limits.tokens, "tokens"))
    return " · ".join(parts)


def unknown_text(count: int, unit: Unit) -> str:
    """``; 2 agent runs reported no cost (counted as nothing)``, or nothing."""
    if not count:
        return ""
    what = "cost" if unit == "usd" else "tokens"
    runs = "run" if count == 1 else "runs"
    return f"; {count} agent {runs} reported no {what} (counted as nothing)"


def standing_text(stored: Mapping[str, Any], spent: Spent | None) -> str:
    """``run $5.00 · 1,000,000 tokens, per spec $1.00; the latest run spent $1.20 · 2,400
    tokens``, with how many agent runs reported no cost or tokens: ``graph info``'s line."""
    run, per_spec = budget_limits(stored)
    scopes = (("run", run), ("per spec", per_spec))
    text = ", ".join(f"{name} {limits_text(limits)}" for name, limits in scopes if limits)
    if spent is None:
        return text
    used = f"{amount_text(spent.usd, 'usd')} · {amount_text(spent.tokens, 'tokens')}"
    unknown = unknown_text(spent.no_cost, "usd") + unknown_text(spent.no_tokens, "tokens")
    return f"{text}; the latest run spent {used}{unknown}"
