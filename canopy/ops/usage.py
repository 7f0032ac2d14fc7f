"""The cost and usage ledger: what harnesses reported node runs and hook runs used, summed.

Every node run and agent hook run records what its harness reported (tokens, cost in USD,
turns, duration, model; ``NULL`` where it said nothing). This module sums those records:
by run and by spec for ``graph info`` (:func:`usage_by`). Portable SQL, stdlib only, so
the CLI's fast lane can sum them too. A sum over records that reported nothing is
``None`` (SQL's ``SUM``), never a made-up zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from canopy.store.queries import Row, Rows

USAGE_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "turns",
    "duration_ms",
)
"""The ledger's summable columns, on ``node_runs`` and ``hook_runs`` alike."""

_SUMS = ", ".join(f"SUM({column}) AS {column}" for column in USAGE_COUNTS)
_REPORTED = " OR ".join(f"{column} IS NOT NULL" for column in (*USAGE_COUNTS, "model"))
_RECORD = f"run_id, spec_id, platform, model, ended_at, {', '.join(USAGE_COUNTS)}"
LEDGER = (
    f"(SELECT r.graph_id, n.{_RECORD.replace(', ', ', n.')}"
    " FROM node_runs n JOIN runs r ON r.id = n.run_id"
    f" UNION ALL SELECT h.graph_id, h.{_RECORD.replace(', ', ', h.')} FROM hook_runs h)"
    " ledger"
)
"""Every node run and hook run with its graph and what it used: one table to sum over."""


def usage_by(rows: Rows, key: str, where: str, params: dict[str, Any]) -> dict[Any, Row]:
    """Ledger sums grouped by ``key`` (a ledger column) over the records ``where`` selects
    (only those that reported something): ``{key value: {runs, <counts>}}``, ``runs``
    counting the records summed."""
    found = rows(
        f"SELECT {key}, COUNT(*) AS runs, {_SUMS} FROM {LEDGER}"
        f" WHERE ({where}) AND ({_REPORTED}) GROUP BY {key}",
        params,
    )
    return {row.pop(key): row for row in found}
