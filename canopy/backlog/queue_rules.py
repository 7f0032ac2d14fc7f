"""Pure queue-ordering rules: where grouped adds land, what splits a group, reorders.

No storage here: operations load the members, ask these functions for the new order,
and write it back, so the rules are unit-tested without a database.
"""

from dataclasses import dataclass

from canopy.errors import Refused


@dataclass(frozen=True)
class Member:
    """A queue member as the ordering rules see it."""

    spec_id: str
    group: str | None
    pending: bool


def index_after_group(members: list[Member], group: str) -> int | None:
    """The index just after ``group``'s last pending member, or ``None`` if it has none."""
    last = None
    for index, member in enumerate(members):
        if member.group == group and member.pending:
            last = index
    return None if last is None else last + 1


def grouped_add_index(members: list[Member], group: str | None) -> int:
    """Where an added spec lands: after its group's last pending member, else at the end."""
    if group is not None:
        after_group = index_after_group(members, group)
        if after_group is not None:
            return after_group
    return len(members)


@dataclass(frozen=True)
class Split:
    """A group whose pending members are not contiguous (0-based indexes)."""

    group: str
    pending_at: list[int]
    intruders_at: list[int]

    def describe(self) -> str:
        """The 1-based wording ``queue list`` users see."""
        return (
            f"group {self.group!r} has pending members at positions "
            f"{_positions(self.pending_at)} split by positions {_positions(self.intruders_at)}"
        )


def group_splits(order: list[Member]) -> list[Split]:
    """Every group whose pending members are not contiguous in ``order``.

    Only members of the same group may stand between a group's first and last pending
    member; anything else would run between two specs meant to share a warm session.
    """
    splits = []
    groups = dict.fromkeys(m.group for m in order if m.group is not None and m.pending)
    for group in groups:
        pending_at = [i for i, m in enumerate(order) if m.group == group and m.pending]
        intruders = [i for i in range(pending_at[0], pending_at[-1] + 1) if order[i].group != group]
        if intruders:
            splits.append(Split(group, pending_at, intruders))
    return splits


def reordered(current: list[Member], proposed: list[str]) -> list[Member]:
    """``current`` in the order of ``proposed`` (full spec ids), or a refusal.

    ``proposed`` must name every current member exactly once, and must not split any
    group's pending members; the refusal names missing, extra and duplicate ids, or the
    positions that would split a group.
    """
    by_id = {member.spec_id: member for member in current}
    seen = set(proposed)
    duplicates = [spec_id for spec_id in seen if proposed.count(spec_id) > 1]
    extra = [spec_id for spec_id in dict.fromkeys(proposed) if spec_id not in by_id]
    missing = [spec_id for spec_id in by_id if spec_id not in seen]
    problems = [
        f"{label} {', '.join(dict.fromkeys(ids))}"
        for label, ids in (("missing", missing), ("extra", extra), ("duplicate", duplicates))
        if ids
    ]
    if problems:
        raise Refused(
            f"queue reorder refused: {'; '.join(problems)}"
            " (the new order must list every current member exactly once)"
        )
    order = [by_id[spec_id] for spec_id in proposed]
    splits = group_splits(order)
    if splits:
        reasons = "; ".join(split.describe() for split in splits)
        raise Refused(f"queue reorder refused: {reasons}")
    return order


def regrouped(members: list[Member], spec_id: str, group: str | None) -> list[Member]:
    """The order after setting (or clearing, ``None``) one member's group.

    Setting moves the member right after its new group's last pending member. A member
    that would otherwise be left splitting its old group moves right after that group's
    last pending member instead; otherwise it stays where it is.
    """
    index = next(i for i, m in enumerate(members) if m.spec_id == spec_id)
    old = members[index]
    moved = Member(spec_id=spec_id, group=group, pending=old.pending)
    rest = members[:index] + members[index + 1 :]
    target = index_after_group(rest, group) if group is not None else None
    if target is None and old.group is not None and old.group != group:
        stays = [*rest[:index], moved, *rest[index:]]
        if any(split.group == old.group for split in group_splits(stays)):
            target = index_after_group(rest, old.group)
    if target is None:
        target = index
    return [*rest[:target], moved, *rest[target:]]


def _positions(indexes: list[int]) -> str:
    return ", ".join(str(i + 1) for i in indexes)
