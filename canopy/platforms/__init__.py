"""Platform adapters: how to launch each agent harness and read what it prints.

Import from here: :func:`get_platform`, :func:`platform_names`, :class:`Platform`,
:class:`Invocation`, :class:`UsageLimit`, :class:`HarnessConversation` and :func:`clamp_reset`. See
``docs/platforms.md``.
"""

from canopy.platforms.base import (
    HarnessConversation,
    Invocation,
    Platform,
    UsageLimit,
    clamp_reset,
)
from canopy.platforms.registry import get_platform, platform_names

__all__ = [
    "HarnessConversation",
    "Invocation",
    "Platform",
    "UsageLimit",
    "clamp_reset",
    "get_platform",
    "platform_names",
]
