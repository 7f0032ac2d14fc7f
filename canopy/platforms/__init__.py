"""Platform adapters: how to launch each agent harness and read what it prints.

Import from here: :func:`get_platform`, :func:`platform_names`, :class:`Platform`,
:class:`Invocation`, :class:`UsageLimit`, :class:`LimitWait`, :class:`HarnessUsage`,
:class:`HarnessConversation`, :func:`clamp_reset`, :func:`limit_wait` and
:func:`load_stall_minutes`. See ``docs/platforms.md``.
"""

from canopy.platforms.base import (
    HarnessConversation,
    Invocation,
    LimitWait,
    Platform,
    UsageLimit,
    clamp_reset,
    limit_wait,
)
from canopy.platforms.config import load_stall_minutes
from canopy.platforms.registry import get_platform, platform_names
from canopy.platforms.usage import HarnessUsage

__all__ = [
    "HarnessConversation",
    "HarnessUsage",
    "Invocation",
    "LimitWait",
    "Platform",
    "UsageLimit",
    "clamp_reset",
    "get_platform",
    "limit_wait",
    "load_stall_minutes",
    "platform_names",
]
