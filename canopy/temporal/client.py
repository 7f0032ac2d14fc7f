"""Where Temporal is and how Canopy talks to it: address, namespace, task queues, client.

Settings are read on every call (not at import) so tests and the daemon see the current
environment. temporalio is imported only inside :func:`connect`: store-only CLI commands
import this module for its constants and must not pay for (or depend on) the SDK.
"""

import os
import socket
from typing import TYPE_CHECKING

from canopy.errors import Refused
from canopy.temporal import devserver

if TYPE_CHECKING:
    from temporalio.client import Client

DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"

MAIN_TASK_QUEUE = "canopy"
"""Shared queue: workflows plus store bookkeeping activities (any worker may serve)."""

AGENTS_TASK_QUEUE_PREFIX = "canopy-agents@"
"""Per-host queue prefix: agent, command, hook and git activities run where the workdir is."""


def this_host() -> str:
    """This machine's name, as agents task queues and sessions record it."""
    return socket.gethostname()


def agents_task_queue(host: str | None = None) -> str:
    """The agents task queue of ``host`` (default: this machine)."""
    return AGENTS_TASK_QUEUE_PREFIX + (host or this_host())


def address() -> str:
    """``TEMPORAL_ADDRESS``, else the running embedded server's address, else the default."""
    configured = os.environ.get("TEMPORAL_ADDRESS")
    if configured:
        return configured
    return devserver.recorded_address() or DEFAULT_ADDRESS


def namespace() -> str:
    """``TEMPORAL_NAMESPACE``, else ``default``."""
    return os.environ.get("TEMPORAL_NAMESPACE") or DEFAULT_NAMESPACE


async def connect() -> "Client":
    """A client using the pydantic data converter (DESIGN §2), or a clear refusal."""
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.service import RPCError

    target, space = address(), namespace()
    try:
        return await Client.connect(target, namespace=space, data_converter=pydantic_data_converter)
    except (RuntimeError, RPCError) as error:
        raise Refused(
            f"cannot reach Temporal at {target} (namespace {space}): start it with "
            f"`canopy server start` or `canopy up`, or set TEMPORAL_ADDRESS ({error})"
        ) from error
