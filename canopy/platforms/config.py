"""The ``[platforms.*]`` and ``[agents]`` tables of ``<CANOPY_HOME>/config.toml``.

Read fresh on every lookup (it is a few lines of TOML), so an edit applies at the next
agent launch without restarting the worker. A file that does not parse or validate is
refused with one line naming the file, the table and the offending key.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from canopy.errors import Refused
from canopy.limits import DEFAULT_STALL_MINUTES, STALL_MINUTES, range_problem
from canopy.paths import canopy_home
from canopy.permissions import Permissions
from canopy.platforms.template import PLACEHOLDER, PLACEHOLDERS

CONFIG_FILE = "config.toml"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class PlatformSettings(BaseModel):
    """One ``[platforms.NAME]`` table, checked before any agent is launched with it.

    Built-in platforms take ``executable``, ``extra_args`` and ``permissions`` (the level
    their agents run at where the graph, node, member, hook or session does not say, see
    :mod:`canopy.permissions`); user-defined ones take
    ``argv`` and the optional ``resume_argv``, ``session_id_pattern``, ``limit_pattern``.
    Which set applies is the registry's call, since it knows the built-in names.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: tuple[str, ...] | None = None
    resume_argv: tuple[str, ...] | None = None
    session_id_pattern: str | None = None
    limit_pattern: str | None = None
    executable: str | tuple[str, ...] | None = None
    extra_args: tuple[str, ...] = ()
    permissions: Permissions | None = None

    @field_validator("argv", "resume_argv")
    @classmethod
    def _known_placeholders(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        """A non-empty template naming only known placeholders (without ``{prompt}`` the
        prompt goes on stdin)."""
        if value is None:
            return None
        if not value or not value[0]:
            raise ValueError("must start with the program to run")
        unknown = {name for item in value for name in PLACEHOLDER.findall(item)}
        unknown -= set(PLACEHOLDERS)
        if unknown:
            known = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
            raise ValueError(f"unknown placeholder {{{sorted(unknown)[0]}}} (known: {known})")
        return value

    @field_validator("resume_argv")
    @classmethod
    def _resumes_a_session(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        """A resume template that does not name the session would silently start afresh."""
        if value is not None and not any("{session_id}" in item for item in value):
            raise ValueError("must pass the session with a {session_id} element")
        return value

    @field_validator("session_id_pattern", "limit_pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        """A pattern that is a valid regular expression."""
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from error
        return value

    @field_validator("executable")
    @classmethod
    def _names_a_program(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        """A program path, or a non-empty argv prefix such as ``["python3", "agent.py"]``."""
        if value is not None and (not value or not value[0]):
            raise ValueError("must name a program")
        return value

    @model_validator(mode="after")
    def _session_group(self) -> PlatformSettings:
        """``session_id_pattern`` must capture the id in group 1."""
        if self.session_id_pattern is not None and re.compile(self.session_id_pattern).groups < 1:
            raise ValueError("session_id_pattern needs one group capturing the session id")
        return self

    def executable_argv(self) -> tuple[str, ...] | None:
        """``executable`` as an argv prefix."""
        if isinstance(self.executable, str):
            return (self.executable,)
        return self.executable


def config_path() -> Path:
    """Where the config file lives: ``<CANOPY_HOME>/config.toml``."""
    return canopy_home() / CONFIG_FILE


def _document(path: Path) -> dict[str, Any]:
    """The config file's tables; empty when there is no config file."""
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise Refused(f"config file {path} is not valid TOML: {error}") from error


AGENTS_KEYS = ("stall_minutes", "keep_awake")
"""The keys of the ``[agents]`` table."""


def _agents_table(path: Path) -> dict[str, Any]:
    """The ``[agents]`` table, empty when absent; refused when it is not a table or has a
    key Canopy does not know (a typo must not silently do nothing)."""
    agents = _document(path).get("agents", {})
    if not isinstance(agents, dict):
        raise Refused(f"config file {path}: 'agents' must be a table ([agents])")
    unknown = next((key for key in agents if key not in AGENTS_KEYS), None)
    if unknown is not None:
        known = ", ".join(AGENTS_KEYS)
        raise Refused(f"config file {path}: agents.{unknown}: unknown key (known: {known})")
    return agents


def load_stall_minutes() -> float:
    """``[agents] stall_minutes``: the default for agent nodes that do not set their own.

    60 minutes when the file does not say; ``0`` turns stall checks off.
    """
    path = config_path()
    value = _agents_table(path).get("stall_minutes", DEFAULT_STALL_MINUTES)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Refused(f"config file {path}: agents.stall_minutes: {value!r} is not a number")
    problem = range_problem(value, STALL_MINUTES)
    if problem is not None:
        raise Refused(f"config file {path}: agents.stall_minutes: {problem}")
    return float(value)


def load_keep_awake() -> bool:
    """``[agents] keep_awake``: whether a worker keeps its machine awake while a run is
    active on it (default true)."""
    path = config_path()
    value = _agents_table(path).get("keep_awake", True)
    if not isinstance(value, bool):
        raise Refused(f"config file {path}: agents.keep_awake: {value!r} is not true or false")
    return value


def load_platform_settings() -> dict[str, PlatformSettings]:
    """Every ``[platforms.NAME]`` table, validated; empty when there is no config file."""
    path = config_path()
    tables = _document(path).get("platforms", {})
    if not isinstance(tables, dict):
        raise Refused(f"config file {path}: 'platforms' must be a table of [platforms.NAME]")
    return {name: _settings(path, name, table) for name, table in tables.items()}


def platform_permissions(name: str) -> Permissions | None:
    """The ``permissions`` ``[platforms.NAME]`` sets, if it does (read fresh, as all of it)."""
    settings = load_platform_settings().get(name)
    return settings.permissions if settings is not None else None


def _settings(path: Path, name: str, table: Any) -> PlatformSettings:
    """One validated table, or a one-line refusal naming the key that is wrong."""
    if not _NAME.fullmatch(name):
        raise Refused(f"config file {path}: platform name {name!r} must be letters, digits, _.-")
    try:
        return PlatformSettings.model_validate(table)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in (name, *first["loc"]))
        message = first["msg"].removeprefix("Value error, ")
        raise Refused(f"config file {path}: platforms.{where}: {message}") from None
