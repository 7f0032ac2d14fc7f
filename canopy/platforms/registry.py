"""Platform lookup by name: the built-in adapters plus those in the config file.

``claude``, ``codex`` and ``gemini`` are built in; a ``[platforms.<built-in>]`` table may
only point them at another ``executable``, add ``extra_args`` or set the ``permissions``
level their agents run at (:func:`~canopy.platforms.config.platform_permissions`).
``demo`` is Claude's adapter launching :mod:`canopy.platforms.demo_agent` with this
interpreter, so ``make demo`` needs no API key; it takes no settings. Any other name in
the config file is a user-defined :class:`~canopy.platforms.template.TemplatePlatform`.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, replace

from canopy.errors import Refused
from canopy.platforms.base import Platform
from canopy.platforms.claude import ClaudePlatform
from canopy.platforms.codex import CodexPlatform
from canopy.platforms.config import PlatformSettings, config_path, load_platform_settings
from canopy.platforms.gemini import GeminiPlatform
from canopy.platforms.template import TemplatePlatform

_BUILT_IN: dict[str, type[ClaudePlatform | CodexPlatform | GeminiPlatform]] = {
    "claude": ClaudePlatform,
    "codex": CodexPlatform,
    "gemini": GeminiPlatform,
}
DEMO = "demo"
_TEMPLATE_KEYS = ("argv", "resume_argv", "session_id_pattern", "limit_pattern")
_BUILT_IN_KEYS = ("executable", "extra_args", "permissions")


def platform_names() -> list[str]:
    """Built-in names in a fixed order, then the config file's own, sorted."""
    built_in = [*_BUILT_IN, DEMO]
    configured = sorted(name for name in load_platform_settings() if name not in built_in)
    return [*built_in, *configured]


def get_platform(name: str) -> Platform:
    """The adapter called ``name``; an unknown name is refused with the known ones."""
    settings = load_platform_settings()
    if name == DEMO:
        _refuse_keys(name, settings.get(name), (*_TEMPLATE_KEYS, *_BUILT_IN_KEYS))
        return _demo()
    if name in _BUILT_IN:
        return _built_in(name, settings.get(name))
    if name in settings:
        return _template(name, settings[name])
    known = ", ".join(platform_names())
    raise Refused(f"unknown platform {name!r}; known platforms: {known}")


def launch_program(platform: Platform) -> str:
    """The program a launch of ``platform`` runs: the first element of its argv."""
    invocation = platform.build_invocation(
        "", model=None, effort=None, resume_session_id=None, permissions="cli"
    )
    return invocation.argv[0]


def missing_program(name: str) -> str | None:
    """Why platform ``name`` cannot launch on this machine, with the fix (``None``: its
    program is found). An unknown platform or a bad config table is refused as such."""
    program = launch_program(get_platform(name))
    if shutil.which(program) is not None:
        return None
    return (
        f"{program} is not installed (not on PATH); fix: install it, or set "
        f"[platforms.{name}] executable in config.toml"
    )


@dataclass(frozen=True)
class DemoPlatform(ClaudePlatform):
    """Claude's adapter on the bundled demo agent: the same argv and output, but nothing
    for ``canopy doctor`` to check (no version, no sign-in), and nothing it may run to
    check one: the demo agent does its work whatever it is given."""

    def cli_checks(self) -> None:
        """Nothing to check: the demo agent is part of Canopy."""
        return None


def _demo() -> Platform:
    """Claude's adapter running the bundled demo agent with this very interpreter."""
    executable = (sys.executable, "-m", "canopy.platforms.demo_agent")
    return DemoPlatform(name=DEMO, executable=executable)


def _built_in(name: str, settings: PlatformSettings | None) -> Platform:
    """A built-in adapter, with the config file's executable and extra args if any."""
    platform = _BUILT_IN[name]()
    if settings is None:
        return platform
    _refuse_keys(name, settings, _TEMPLATE_KEYS)
    executable = settings.executable_argv() or platform.executable
    return replace(platform, executable=executable, extra_args=settings.extra_args)


def _template(name: str, settings: PlatformSettings) -> Platform:
    """A user-defined platform; it must say how to launch it."""
    _refuse_keys(name, settings, _BUILT_IN_KEYS)
    if settings.argv is None:
        raise Refused(f"config file {config_path()}: platforms.{name}: needs an argv")
    return TemplatePlatform(
        name=name,
        argv=settings.argv,
        resume_argv=settings.resume_argv,
        session_id_pattern=_compiled(settings.session_id_pattern),
        limit_pattern=_compiled(settings.limit_pattern),
    )


def _refuse_keys(name: str, settings: PlatformSettings | None, keys: tuple[str, ...]) -> None:
    """Refuse a table that sets keys this kind of platform does not take."""
    if settings is None:
        return
    wrong = [key for key in keys if key in settings.model_fields_set]
    if wrong:
        kind = "the built-in" if name in (*_BUILT_IN, DEMO) else "the user-defined"
        raise Refused(
            f"config file {config_path()}: platforms.{name}: {wrong[0]!r} is not a setting "
            f"of {kind} platform {name!r}"
        )


def _compiled(pattern: str | None) -> re.Pattern[str] | None:
    """The compiled pattern (already validated by the config model)."""
    return re.compile(pattern) if pattern is not None else None
