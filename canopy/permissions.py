"""What an unattended agent may do: the permission levels, and which setting wins.

An agent CLI left to its defaults asks before it edits a file or runs a command; with no
one to answer, it is refused and (worse) often exits 0, so a queue "completes" with
nothing done. Canopy therefore always tells a built-in CLI what it may do, at one of these
levels (docs/platforms.md maps each to each CLI's flags):

- ``workspace`` (the default): edit files and run commands in the workdir, sandboxed to
  it where the CLI can sandbox;
- ``full``: no restrictions and no sandbox (for disposable containers and VMs);
- ``read-only``: read and answer, never write or run (review and planning nodes);
- ``cli``: pass nothing; the CLI's own settings decide.

The level is set in ``config.toml`` per platform, and per graph, node, ensemble member,
agent hook and session; the nearest setting wins (:func:`nearest`).
"""

from typing import Literal, get_args

Permissions = Literal["workspace", "full", "read-only", "cli"]
PERMISSION_LEVELS: tuple[Permissions, ...] = get_args(Permissions)
DEFAULT_PERMISSIONS: Permissions = "workspace"

OnDenial = Literal["warn", "fail"]
ON_DENIAL_CHOICES: tuple[OnDenial, ...] = get_args(OnDenial)
"""What a node run whose agent was refused something counts as: still its exit's outcome
(``warn``, the default: the denials are recorded and shown) or a failure (``fail``)."""


def checked_permissions(value: str | None) -> Permissions | None:
    """A level a user typed (``None``: not set), or a one-line refusal listing the levels."""
    if value is None:
        return None
    level = stored_permissions(value)
    if level is None:
        from canopy.errors import Refused

        raise Refused(f"unknown permissions {value!r}; one of {', '.join(PERMISSION_LEVELS)}")
    return level


def stored_permissions(value: object) -> Permissions | None:
    """A level as a store column or a stored JSON field holds it: ``None`` when unset,
    and for anything that is not a level (a row written by hand, say) the nearer or
    farther setting decides, as if unset."""
    return next((level for level in PERMISSION_LEVELS if level == value), None)


def nearest(*levels: Permissions | None) -> Permissions:
    """The first level set, nearest first (member, node, graph, platform), else the default."""
    return next((level for level in levels if level is not None), DEFAULT_PERMISSIONS)
