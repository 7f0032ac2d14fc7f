"""Event-keyed hooks: the event vocabulary and the helpers around the model.

The pydantic :data:`~canopy.graphs.hookmodels.Hook` checks one hook on its own; what is here
is the part that is not one hook's business:

* the legacy top-level ``on_completed`` object, folded into ``hooks.on_completed`` before
  validation so it is checked (and stored) like any other hook — nothing a user of the
  old shape configured is lost;
* resolving each ``spec_ids`` entry (a full id or a unique prefix) to the full id, against
  the candidates :mod:`canopy.ops.graphs` reads from the store. The firing side compares
  full ids only, so a prefix must never reach the store;
* which events a run that is already active can still fire, for ``graph_edit``'s answer.

Only stdlib and other import-light modules are used, so the workflow side may import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from canopy.errors import Refused
from canopy.store.queries import normalized_prefix

HookEvent = Literal["on_completed", "on_failed", "on_blocked", "on_spec_completed"]
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)
"""The events a graph's hooks are keyed by."""

SPEC_EVENTS: tuple[str, ...] = ("on_spec_completed", "on_failed")
"""The per-spec events: only their hooks may name ``spec_ids``."""

LEGACY_FIELD = "on_completed"
"""The old single-hook field, still accepted at the top level of a definition."""

_REFUSED = "graph definition refused"
"""How every definition refusal starts, the store-checked ones here included."""


def fold_legacy_on_completed(data: Any) -> Any:
    """``data`` with a top-level ``on_completed`` hook appended to ``hooks.on_completed``.

    Appending (not replacing) is what keeps an old client's call from silently dropping
    hooks registered since. Anything but an object is refused: ``null`` used to clear the
    single hook, and pretending to honour that would leave the hooks in place unnoticed.
    """
    if not isinstance(data, Mapping) or LEGACY_FIELD not in data:
        return data
    folded = dict(data)
    legacy = folded.pop(LEGACY_FIELD)
    if not isinstance(legacy, Mapping):
        raise ValueError(
            f"{LEGACY_FIELD}: the legacy shape is one hook config object, appended to "
            'hooks.on_completed; to replace or clear those hooks use "hooks": '
            '{"on_completed": [...]}'
        )
    hooks = folded.get("hooks", {})
    existing = hooks.get(LEGACY_FIELD, []) if isinstance(hooks, Mapping) else None
    if not isinstance(existing, list):
        return folded  # the hooks field's own check refuses the malformed value
    folded["hooks"] = {**hooks, LEGACY_FIELD: [*existing, dict(legacy)]}
    return folded


def edited_events(changes: Mapping[str, Any]) -> list[str]:
    """The events a ``graph_edit`` change set touches (``hooks`` keys, legacy field)."""
    hooks = changes.get("hooks")
    events = (
        [event for event in hooks if event in HOOK_EVENTS] if isinstance(hooks, Mapping) else []
    )
    if LEGACY_FIELD in changes and LEGACY_FIELD not in events:
        events.append(LEGACY_FIELD)
    return events


def resolve_spec_ids(
    hooks: Mapping[str, list[dict[str, Any]]], events: Iterable[str], candidates: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """``hooks`` with each ``spec_ids`` entry of ``events`` replaced by the full id it names.

    ``candidates`` are the specs a hook may name (the graph's bound specs and its active
    run's queue members). Hooks of other events are returned untouched: they were resolved
    when stored, and re-resolving them after the bound specs or the run changed would
    refuse an unrelated edit. Refuses unknown, ambiguous and repeated entries.
    """
    wanted = set(events)
    return {
        event: [
            _with_full_ids(hook, event, index, candidates) if event in wanted else hook
            for index, hook in enumerate(event_hooks)
        ]
        for event, event_hooks in hooks.items()
    }


def _with_full_ids(
    hook: dict[str, Any], event: str, index: int, candidates: Sequence[str]
) -> dict[str, Any]:
    entries = hook.get("spec_ids")
    if entries is None:
        return hook
    where = f"hooks.{event}[{index}].spec_ids"
    matches = {entry: _matches(entry, candidates) for entry in entries}
    unknown = [entry for entry, found in matches.items() if not found]
    if unknown:
        names = ", ".join(repr(entry) for entry in unknown)
        raise Refused(
            f"{_REFUSED}: {where}: unknown spec{'s' if len(unknown) > 1 else ''} {names}; "
            "spec_ids name specs bound to the graph or members of its active run's queue"
        )
    for entry, found in matches.items():
        if len(found) > 1:
            raise Refused(
                f"{_REFUSED}: {where}: ambiguous spec id {entry!r}: matches {', '.join(found)}"
            )
    full_ids = [matches[entry][0] for entry in entries]
    repeated = next((spec_id for spec_id in full_ids if full_ids.count(spec_id) > 1), None)
    if repeated is not None:
        raise Refused(f"{_REFUSED}: {where}: spec {repeated} is listed twice")
    return {**hook, "spec_ids": full_ids}


def _matches(entry: str, candidates: Sequence[str]) -> list[str]:
    """The candidates ``entry`` names: itself when it is a full id, else by prefix.

    Prefixes read as everywhere else (:func:`normalized_prefix`: case-insensitive, the
    ``spec-`` may be left out); text that cannot be part of an id matches nothing.
    """
    if entry in candidates:
        return [entry]
    try:
        prefix = normalized_prefix("spec", entry)
    except Refused:
        return []
    found = sorted({spec_id for spec_id in candidates if spec_id.startswith(prefix)})
    return [prefix] if prefix in found else found


def remaining_events(specs_left: int) -> list[str]:
    """The events an active run can still fire, in the order it would reach them.

    ``on_spec_completed`` only while some spec is still to complete; ``on_blocked`` at any
    later pause; the terminal event is not known yet, so both ``on_completed`` and
    ``on_failed`` are named.
    """
    per_spec = ["on_spec_completed"] if specs_left > 0 else []
    return [*per_spec, "on_blocked", "on_completed", "on_failed"]


def remaining_events_note(run_id: str, events: Sequence[str], specs_left: int) -> str:
    """One line saying where an edit of hooks during a run takes effect (and where not)."""
    plural = "s" if specs_left != 1 else ""
    return (
        f"the active run {run_id} fires these hooks at its remaining events: "
        f"{', '.join(events)} ({specs_left} spec{plural} still to complete; "
        "events that already fired do not fire again)"
    )
