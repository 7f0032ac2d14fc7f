"""Where Temporal is and how Canopy talks to it: connection settings, task queues, client.

Connection settings are the ``temporal`` CLI's own (``temporalio.envconfig``: the
``TEMPORAL_PROFILE`` profile of ``temporal.toml``, overridden by ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS_*``…), so a cluster the
``temporal`` CLI reaches, Temporal Cloud included, needs no Canopy-specific setting. They
are read on every call (not at import) so tests and the daemon see the current
environment. temporalio is imported only inside the functions that connect: store-only CLI
commands import this module for its constants and must not pay for (or depend on) the SDK.
"""

import os
import socket
from typing import TYPE_CHECKING, Any, Literal

from canopy.errors import Refused
from canopy.limits import HOST_MAX_LENGTH, clean_path_safe_name
from canopy.search_attributes import SEARCH_ATTRIBUTE_STATUS
from canopy.temporal import devserver

if TYPE_CHECKING:
    from temporalio.client import Client
    from temporalio.envconfig import ClientConnectConfig

DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"

MAIN_TASK_QUEUE = "canopy"
"""Shared queue: workflows plus store bookkeeping activities (any worker may serve)."""

AGENTS_TASK_QUEUE_PREFIX = "canopy-agents@"
"""Per-host queue prefix: agent, command, hook and git activities run where the workdir is."""

HOST_VARIABLE = "CANOPY_HOST"


def this_host() -> str:
    """This machine's name, as agents task queues and sessions record it: ``CANOPY_HOST``,
    else the host name. The override exists because the host name is not always the name
    others use for the machine: a container gets a random one on every start, which would
    strand the sessions and runs recorded under the previous name."""
    configured = os.environ.get(HOST_VARIABLE, "")
    if not configured.strip():
        return socket.gethostname()
    return check_host(configured, HOST_VARIABLE)


def check_host(host: str, what: str = "host") -> str:
    """``host`` stripped, or the one-line refusal: one line, no control characters, and
    file-name safe, since it is part of a task queue name and of shell hints."""
    return clean_path_safe_name(host, what, HOST_MAX_LENGTH)


def agents_task_queue(host: str | None = None) -> str:
    """The agents task queue of ``host`` (default: this machine)."""
    return AGENTS_TASK_QUEUE_PREFIX + (host or this_host())


def configured_address() -> str | None:
    """The address the connection settings name, or ``None`` when they name none (then
    Canopy uses the embedded dev server, which ``canopy up`` and ``down`` manage)."""
    return _settings().get("target_host")


def address_source() -> str:
    """Which setting named :func:`configured_address`, as the user would look for it:
    ``TEMPORAL_ADDRESS`` (it overrides any profile), else ``temporal.toml profile NAME``."""
    from temporalio.envconfig import ClientConfigProfile

    if ClientConfigProfile.load(disable_file=True).address:
        return "TEMPORAL_ADDRESS"
    return f"temporal.toml profile {os.environ.get('TEMPORAL_PROFILE') or 'default'}"


def address() -> str:
    """The address :func:`connect` uses."""
    return _connect_config()["target_host"]


def connection_env() -> dict[str, str]:
    """The ``TEMPORAL_ADDRESS`` and ``TEMPORAL_NAMESPACE`` that point the ``temporal`` CLI
    where Canopy connects now: this data dir's own server unless settings say otherwise."""
    config = _connect_config()
    return {"TEMPORAL_ADDRESS": config["target_host"], "TEMPORAL_NAMESPACE": config["namespace"]}


def _settings() -> "ClientConnectConfig":
    """The settings as the ``temporal`` CLI reads them, or the one-line refusal when they
    cannot be read (a missing profile, a bad ``temporal.toml``, an unreadable certificate).
    An empty address is left out, as an empty ``TEMPORAL_ADDRESS`` always was here."""
    from temporalio.envconfig import ClientConfigProfile

    try:
        return ClientConfigProfile.load().to_client_connect_config()  # reads TLS files too
    except (RuntimeError, OSError) as error:  # the SDK's ConfigError is a RuntimeError
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise Refused(f"cannot read the Temporal connection settings: {reason}") from error


def _connect_config() -> "ClientConnectConfig":
    """:func:`_settings` with Canopy's defaults for what they leave unset: the address of
    the data dir's own embedded server, running or not (:func:`devserver.home_address`),
    and namespace ``default``."""
    config = _settings()
    config.setdefault("target_host", devserver.home_address())
    config["namespace"] = config.get("namespace") or DEFAULT_NAMESPACE
    return config


async def connect() -> "Client":
    """A client using the pydantic data converter, or a clear refusal."""
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.service import RPCError

    config = _connect_config()
    try:
        return await Client.connect(**config, data_converter=pydantic_data_converter)
    except (RuntimeError, RPCError) as error:
        raise Refused(
            f"cannot reach Temporal at {config['target_host']} (namespace "
            f"{config['namespace']}): start it with `canopy server start` or `canopy up`, "
            f"or set TEMPORAL_ADDRESS or a temporal.toml profile ({error})"
        ) from error


async def graph_run_active_on(client: "Client", host: str) -> bool:
    """Whether a graph run on ``host`` is moving or waiting out a usage limit (not paused,
    which waits for a person): its workflow is open on the host's agents task queue, with
    ``CanopyStatus`` ``running`` or ``usage_limit``. On a server without Canopy's search
    attributes, any open run there counts."""
    from temporalio.service import RPCError

    open_here = f"TaskQueue = '{agents_task_queue(host)}' AND ExecutionStatus = 'Running'"
    moving = f"{SEARCH_ATTRIBUTE_STATUS} IN ('running', 'usage_limit')"
    try:
        found = await client.count_workflows(f"{open_here} AND {moving}")
    except RPCError:
        found = await client.count_workflows(open_here)
    return found.count > 0


async def task_queue_pollers(
    client: "Client", task_queue: str, tasks: Literal["workflow", "activity"]
) -> list[Any]:
    """The pollers the server lists for ``task_queue``'s ``tasks`` (each with its
    ``identity`` and ``last_access_time``): who serves a queue, asked without starting
    anything on it."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    kind = (
        TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
        if tasks == "workflow"
        else TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
    )
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
        )
    )
    return list(response.pollers)
