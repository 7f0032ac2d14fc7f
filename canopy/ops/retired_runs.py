"""Runs of the retired graph-run workflow type that are still open on the Temporal server.

``GraphRun`` was the first graph-run workflow type. ``GraphRunV2`` replaced it, and no
worker of this version runs it, so a run of it still open moves no further: every
workflow task it gets fails. ``canopy up`` and ``canopy doctor`` ask the server for such
runs and say, in one line, how to finish each: on the Canopy version that started it, or
by terminating its workflow and resetting its graph (docs/operations.md, "Upgrading
Canopy while runs are in flight"). temporalio is imported only inside the functions that
talk to Temporal.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from canopy.errors import Refused
from canopy.search_attributes import SEARCH_ATTRIBUTE_GRAPH_ID
from canopy.temporal import client as temporal_client
from canopy.temporal import devserver

if TYPE_CHECKING:
    from temporalio.client import Client

RETIRED_GRAPH_RUN_WORKFLOW = "GraphRun"
"""The retired type's name, which no workflow of this version takes."""
OPEN_RETIRED_RUNS = f"WorkflowType='{RETIRED_GRAPH_RUN_WORKFLOW}' AND ExecutionStatus='Running'"
"""The visibility query for them (the one ``temporal workflow list --query`` takes)."""
GRAPH_WORKFLOW_PREFIX = "canopy-"
"""A graph run's workflow id is ``canopy-<graph id>`` (the graph's id when the run lacks
the ``CanopyGraphId`` search attribute)."""
CONNECT_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class RetiredRun:
    """One open run of the retired type: its workflow and the graph it runs."""

    workflow_id: str
    graph_id: str


async def open_retired_runs(client: Client) -> list[RetiredRun]:
    """Every open run of the retired type in the client's namespace."""
    from temporalio.common import SearchAttributeKey

    graph_key = SearchAttributeKey.for_keyword(SEARCH_ATTRIBUTE_GRAPH_ID)
    return [
        RetiredRun(
            execution.id,
            execution.typed_search_attributes.get(graph_key)
            or execution.id.removeprefix(GRAPH_WORKFLOW_PREFIX),
        )
        async for execution in client.list_workflows(OPEN_RETIRED_RUNS)
    ]


def retired_runs_line(runs: list[RetiredRun], address: str, namespace: str) -> str | None:
    """The one line saying that ``runs`` are open and how to finish them; ``None`` when
    there are none. The command ends each run's workflow and then resets its graph (the
    graph idle, its specs pending), one run after the other: the reset must find the
    workflow ended, or it would only signal a run that never moves."""
    if not runs:
        return None
    one = len(runs) == 1
    count = "1 run" if one else f"{len(runs)} runs"
    them, their = ("it", "its graph") if one else ("them", "their graphs")
    connection = f"--address {shlex.quote(address)} --namespace {shlex.quote(namespace)}"
    reason = shlex.quote(f"retired workflow type {RETIRED_GRAPH_RUN_WORKFLOW}")
    steps = [
        f"temporal workflow terminate --workflow-id {shlex.quote(run.workflow_id)} "
        f"--reason {reason} {connection} && canopy graph reset {shlex.quote(run.graph_id)}"
        for run in runs
    ]
    return (
        f"{count} of the retired workflow type {RETIRED_GRAPH_RUN_WORKFLOW} "
        f"{'is' if one else 'are'} still open on {address} (namespace {namespace}), and no "
        f"worker of this Canopy runs {them}: finish {them} on the Canopy version that "
        f"started {them}, or end {them} and reset {their}: {' && '.join(steps)}"
    )


async def retired_runs_warning(client: Client) -> str | None:
    """:func:`retired_runs_line` for the server ``client`` talks to; ``None`` also when
    the server cannot list workflows."""
    from temporalio.service import RPCError

    try:
        runs = await open_retired_runs(client)
    except RPCError:
        return None
    return retired_runs_line(runs, client.service_client.config.target_host, client.namespace)


async def check() -> str | None:
    """:func:`retired_runs_warning` on the server Canopy connects to, when it answers
    within :data:`CONNECT_TIMEOUT_SECONDS`; ``None`` otherwise."""
    try:
        client = await asyncio.wait_for(temporal_client.connect(), CONNECT_TIMEOUT_SECONDS)
    except (Refused, TimeoutError):
        return None
    return await retired_runs_warning(client)


def check_if_serving() -> str | None:
    """:func:`check`, but only where a server should be up: one the connection settings
    name, or this data dir's embedded server while it runs. A stopped embedded server is
    not looked for (its address may be another data dir's server by now), and the check
    never starts one."""
    from canopy.ops.control import run_blocking

    try:
        configured = temporal_client.configured_address() is not None
    except Refused:
        return None
    if not configured and not devserver.status()["running"]:
        return None
    return run_blocking(check())
