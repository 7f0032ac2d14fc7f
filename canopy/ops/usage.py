"""The cost and usage ledger: what harnesses reported node runs and hook runs used, summed.

Every node run and agent hook run records what its harness reported (tokens, cost in USD,
turns, duration, model; ``NULL`` where it said nothing). This module sums those records:
by run and by spec for ``graph info`` (:func:`usage_by`), and by platform and model over a
time window for ``canopy usage`` (:func:`usage_report`). Portable SQL, stdlib only, so
``canopy usage`` starts fast. A sum over records that reported nothing
is ``None`` (SQL's ``SUM``), never a made-up zero.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from canopy.budget import Spent
from canopy.errors import Refused
from canopy.limits import USAGE_SINCE_DAYS
from canopy.store.queries import resolve_id
from canopy.timefmt import to_iso, utcnow
from canopy.usagefmt import USAGE_COUNTS

if TYPE_CHECKING:
    from datetime import datetime

    from canopy.store.engine import Store
    from canopy.store.queries import Row, Rows

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

_SINCE = re.compile(r"([0-9]{1,9})([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def since_cutoff(since: str, now: datetime) -> datetime:
    """The time ``since`` (``24h``, ``7d``, ``30m``, ``90s``, ``2w``) reaches back to from
    ``now``; refused, in one line, for anything else or for more than 100 years."""
    found = _SINCE.fullmatch(since.strip())
    if found is None:
        raise Refused(f"--since: expected a duration like 24h, 7d, 30m or 2w, got {since!r}")
    seconds = int(found.group(1)) * _UNIT_SECONDS[found.group(2)]
    if seconds > USAGE_SINCE_DAYS.high * 86_400:
        bound = USAGE_SINCE_DAYS.describe()
        raise Refused(f"--since: {since.strip()} reaches back too far; it must be {bound}")
    return now - timedelta(seconds=seconds)


def usage_by(rows: Rows, key: str, where: str, params: dict[str, Any]) -> dict[Any, Row]:
    """Ledger sums grouped by ``key`` (a ledger column) over the records ``where`` selects
    (only those that reported something): ``{key value: {runs, <counts>}}``, ``runs``
    counting the records summed."""
    found = rows(
        f"SELECT {key}, COUNT(*) AS runs, {_SUMS} FROM {LEDGER}"
        f" WHERE ({where}) AND ({_REPORTED}) GROUP BY {key}",
        params,
    )
    return {row.pop(key): _rounded(row) for row in found}


_NO_TOKENS = " AND ".join(
    f"{column} IS NULL" for column in ("input_tokens", "output_tokens", "cache_write_tokens")
)
_BUDGET_SUMS = (
    "SUM(cost_usd) AS usd, SUM(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)"
    " + COALESCE(cache_write_tokens, 0)) AS tokens,"
    " SUM(CASE WHEN platform IS NOT NULL AND cost_usd IS NULL THEN 1 ELSE 0 END) AS no_cost,"
    f" SUM(CASE WHEN platform IS NOT NULL AND {_NO_TOKENS} THEN 1 ELSE 0 END) AS no_tokens"
)
"""What a budget counts (:mod:`canopy.budget`): cost, the tokens it counts, and the agent
runs (a platform, so a harness) that reported no cost or none of those tokens."""


def budget_spent(rows: Rows, run_id: str, spec_id: str | None = None) -> Spent:
    """What run ``run_id`` has spent as its budget counts it (its node runs and hook runs
    that have ended), or only for ``spec_id`` in it."""
    where = "run_id = :run_id AND ended_at IS NOT NULL"
    if spec_id is not None:
        where += " AND spec_id = :spec_id"
    params = {"run_id": run_id, "spec_id": spec_id}
    (found,) = rows(f"SELECT {_BUDGET_SUMS} FROM {LEDGER} WHERE {where}", params)
    return Spent(
        usd=round(float(found["usd"] or 0), COST_DECIMALS),
        tokens=int(found["tokens"] or 0),
        no_cost=int(found["no_cost"] or 0),
        no_tokens=int(found["no_tokens"] or 0),
    )


COST_DECIMALS = 6
"""A summed cost is rounded to a millionth of a dollar: floats summed in SQL carry
binary noise (``0.30000000000000004``) that is not money."""


def _rounded(row: Row) -> Row:
    """``row`` with its summed ``cost_usd`` rounded to :data:`COST_DECIMALS`."""
    if row["cost_usd"] is not None:
        row["cost_usd"] = round(row["cost_usd"], COST_DECIMALS)
    return row


def usage_report(
    store: Store, since: str | None = None, graph: str | None = None
) -> dict[str, Any]:
    """``canopy usage``: what the ledger's records used, by platform and model, with the
    total; only records ended within ``since`` (a duration) and of ``graph`` (a name, id
    or unique id prefix) when given. Records that reported nothing are left out."""
    cutoff = since_cutoff(since, utcnow()) if since is not None else None
    with store.transaction() as rows:
        graph_id = resolve_id(rows, "graph", graph) if graph is not None else None
        conditions = ["1 = 1"]
        params: dict[str, Any] = {}
        if cutoff is not None:
            conditions.append("ended_at >= :since")
            params["since"] = cutoff
        if graph_id is not None:
            conditions.append("graph_id = :graph_id")
            params["graph_id"] = graph_id
        where = " AND ".join(conditions)
        found = rows(
            f"SELECT platform, model, COUNT(*) AS runs, {_SUMS} FROM {LEDGER}"
            f" WHERE ({where}) AND ({_REPORTED}) GROUP BY platform, model",
            params,
        )
        (total,) = rows(
            f"SELECT COUNT(*) AS runs, {_SUMS} FROM {LEDGER} WHERE ({where}) AND ({_REPORTED})",
            params,
        )
    found.sort(key=lambda row: (row["platform"] or "", row["model"] or ""))
    return {
        "since": to_iso(cutoff),
        "graph_id": graph_id,
        "by_platform_and_model": [_rounded(row) for row in found],
        "total": _rounded(total),
    }
