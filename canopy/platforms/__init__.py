"""Platform adapters: how to launch each agent harness and read what it prints.

Import from here: :func:`get_platform`, :func:`platform_names`, :class:`Platform`,
:class:`Invocation`, :class:`UsageLimit`, :class:`RetryNotice`, :class:`LimitWait`,
:class:`HarnessUsage`, :class:`HarnessConversation`, :func:`clamp_reset`,
:func:`limit_wait`, :data:`LONG_RETRY_WAIT`, :func:`platform_permissions` and
:func:`load_stall_minutes`. See ``docs/platforms.md``.
"""

from canopy.platforms.base import (
    LONG_RETRY_WAIT,
    CliChecks,
    HarnessConversation,
    Invocation,
    LimitWait,
    Platform,
    RetryNotice,
    UsageLimit,
    clamp_reset,
    limit_wait,
)
from canopy.platforms.config import load_stall_minutes, platform_permissions
from canopy.platforms.registry import get_platform, missing_program, platform_names
from canopy.platforms.usage import HarnessUsage

__all__ = [
    "LONG_RETRY_WAIT",
    "CliChecks",
    "HarnessConversation",
    "HarnessUsage",
    "Invocation",
    "LimitWait",
    "Platform",
    "RetryNotice",
    "UsageLimit",
    "clamp_reset",
    "get_platform",
    "limit_wait",
    "load_stall_minutes",
    "missing_program",
    "platform_names",
    "platform_permissions",
]
