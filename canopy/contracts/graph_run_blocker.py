"""A blocker: why a graph run stopped, typed, one class per kind the engine writes.

The graph run builds one (``workflows/blockers.py``, and the queue's settlement in
``activities/bookkeeping.py``), carries it in its payloads (:class:`RunPause`,
:class:`RunSettlement` of :mod:`canopy.contracts.graph_run`, where pydantic validates it)
and stores its JSON form (:func:`blocker_json`) on the graph. Every reader (``graph
info``, ``graph list``, the steering commands, the TUI) gets it back through
:func:`stored_blocker`, the one place that reads the stored JSON, and then matches on the
class. Stdlib dataclasses, so reading a graph loads no pydantic; the published schema
(``docs/graph-info.schema.json``) is generated from these classes.

The JSON form is what the store has always held, key for key: each class lists its
fields in the stored order, and names in ``OMITTED_WHEN_NONE`` the fields left out when
unknown (the others are stored even when ``null``). Reading is lenient, as it has always
been: a field a stored blocker lacks reads as not known, and fields no class names are
left to the stored JSON (which ``graph info --json`` shows as stored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal, get_args, overload


@dataclass(frozen=True)
class SpecRef:
    """A spec a blocker points at."""

    id: str
    name: str


@dataclass(frozen=True, kw_only=True)
class SpecFailed:
    """A run of bound specs ended at a failed spec (the run is ``failed``)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()
    kind: Literal["spec_failed"] = "spec_failed"
    message: str
    spec_id: str | None = None
    node: str | None = None
    """The node it failed at (stored ``null`` when not known)."""


@dataclass(frozen=True, kw_only=True)
class DirtyTree:
    """The guard between specs found the workdir dirty (the run is ``paused``)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("node",)
    kind: Literal["dirty_tree"] = "dirty_tree"
    message: str
    workdir: str | None = None
    dirty_paths: list[str] = field(default_factory=list)
    """The first few dirty paths."""
    dirty_count: int = 0
    """How many paths are dirty in all."""
    next_spec: SpecRef | None = None
    node: str | None = None
    """The node the next spec would start at (left out when not known)."""
    ways_out: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Paused:
    """``graph pause`` landed at a spec boundary (the run is ``paused``)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("node",)
    kind: Literal["paused"] = "paused"
    message: str
    next_spec: SpecRef | None = None
    node: str | None = None
    """The node the next spec would start at (left out when not known)."""
    ways_out: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Stopped:
    """``graph stop`` or a usage limit interrupted a node (the run is ``paused``)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()
    kind: Literal["stopped"] = "stopped"
    message: str
    next_spec: SpecRef | None = None
    node: str | None = None
    """The interrupted node (stored ``null`` when not known)."""
    ways_out: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class QueueFailed:
    """A drained queue run with members that did not complete (the run is ``failed``)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("node", "held_elsewhere")
    kind: Literal["queue_failed"] = "queue_failed"
    message: str
    failed_specs: list[str] = field(default_factory=list)
    """The members that did not complete, failed or not."""
    node: str | None = None
    """The node that ended the first failed member (left out when none failed)."""
    held_elsewhere: list[str] | None = None
    """Which members another active run holds, one line each (left out when none)."""


@dataclass(frozen=True, kw_only=True)
class Budget:
    """The run reached a limit of the graph's ``budget`` before a node launch (the run is
    ``paused``)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("node",)
    kind: Literal["budget"] = "budget"
    message: str
    scope: Literal["run", "spec"] = "run"
    """Whose limit: the run's, or the next spec's in this run."""
    unit: Literal["usd", "tokens"] = "usd"
    spent: float = 0
    """What the scope had spent, in ``unit``, as the budget counts it."""
    limit: float = 0
    """The limit it reached, in ``unit``."""
    unknown: int = 0
    """How many agent runs in the scope reported nothing in ``unit`` (counted as nothing:
    ``spent`` is a floor)."""
    next_spec: SpecRef | None = None
    node: str | None = None
    """The node that was not launched (left out when not known)."""
    ways_out: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class MergeConflict:
    """A run of lanes could not integrate a spec: its branch conflicts with the target
    (the run is ``paused``; docs/lanes.md)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("node",)
    kind: Literal["merge_conflict"] = "merge_conflict"
    message: str
    next_spec: SpecRef | None = None
    """The spec that was not integrated."""
    node: str | None = None
    """The node its walk ended at (left out when not known)."""
    branch: str | None = None
    """Its branch, which holds its work."""
    worktree: str | None = None
    """Its worktree, where a person may resolve the conflict."""
    target: str | None = None
    """The branch it was to be integrated into."""
    conflict_paths: list[str] = field(default_factory=list)
    """The first few conflicting paths."""
    conflict_count: int = 0
    """How many paths conflict in all."""
    ways_out: list[str] = field(default_factory=list)


Blocker = SpecFailed | DirtyTree | Paused | Stopped | QueueFailed | Budget | MergeConflict
"""Why a graph stopped: what a person reads, and (but for a failure) the ways out."""

_CLASSES: dict[str, type[Blocker]] = {cls.kind: cls for cls in get_args(Blocker)}
"""Each class by its ``kind`` (the default of its ``kind`` field)."""


@overload
def stored_blocker(data: Mapping[str, Any]) -> Blocker: ...
@overload
def stored_blocker(data: None) -> None: ...
@overload
def stored_blocker(data: Mapping[str, Any] | None) -> Blocker | None: ...
def stored_blocker(data: Mapping[str, Any] | None) -> Blocker | None:
    """A blocker from its stored JSON (or a JSON answer that carries one), typed; ``None``
    (no blocker) stays ``None``.

    Raises ``ValueError`` for a kind no version of the engine wrote.
    """
    if data is None:
        return None
    cls = _CLASSES.get(data.get("kind", ""))
    if cls is None:
        raise ValueError(f"not a stored blocker: {dict(data)!r}")
    values = {item.name: data[item.name] for item in fields(cls) if item.name in data}
    if values.get("next_spec") is not None:
        values["next_spec"] = SpecRef(**values["next_spec"])
    return cls(**values)


@overload
def blocker_json(blocker: Blocker) -> dict[str, Any]: ...
@overload
def blocker_json(blocker: Blocker | None) -> dict[str, Any] | None: ...
def blocker_json(blocker: Blocker | None) -> dict[str, Any] | None:
    """The JSON form the store keeps: every field in order, but for those the kind leaves
    out when unknown (``None``, no blocker, stays ``None``)."""
    if blocker is None:
        return None
    return {
        name: value
        for name, value in asdict(blocker).items()
        if value is not None or name not in blocker.OMITTED_WHEN_NONE
    }


def ways_out(blocker: Blocker) -> list[str]:
    """The commands that get the graph moving again (none after a failure: the run ended)."""
    match blocker:
        case DirtyTree() | Paused() | Stopped() | Budget() | MergeConflict():
            return blocker.ways_out
        case SpecFailed() | QueueFailed():
            return []
