"""The pure ordering rules of queues (reference: "Spec queues", "Context groups")."""

import pytest

from canopy.backlog.queue_rules import Member, group_splits, grouped_add_index, regrouped, reordered
from canopy.errors import Refused


def m(spec_id: str, group: str | None = None, pending: bool = True) -> Member:
    return Member(spec_id=spec_id, group=group, pending=pending)


def ids(members: list[Member]) -> list[str]:
    return [member.spec_id for member in members]


def test_ungrouped_add_appends() -> None:
    assert grouped_add_index([m("a", "g"), m("b")], None) == 2


def test_grouped_add_lands_after_last_pending_member_of_the_group() -> None:
    members = [m("a", "g"), m("b", "g"), m("c"), m("d", "g", pending=False)]
    assert grouped_add_index(members, "g") == 2


def test_grouped_add_ignores_finished_members_of_the_group() -> None:
    members = [m("a", "g", pending=False), m("b")]
    assert grouped_add_index(members, "g") == 2


def test_grouped_add_for_a_new_group_appends() -> None:
    assert grouped_add_index([m("a", "x")], "g") == 1


def test_reorder_full_replacement() -> None:
    members = [m("a"), m("b"), m("c")]
    assert ids(reordered(members, ["c", "a", "b"])) == ["c", "a", "b"]


@pytest.mark.parametrize(
    ("proposed", "named"),
    [
        (["a", "b"], "missing c"),
        (["a", "b", "c", "z"], "extra z"),
        (["a", "b", "c", "a"], "duplicate a"),
    ],
)
def test_reorder_refuses_anything_but_exactly_the_members(proposed: list[str], named: str) -> None:
    with pytest.raises(Refused, match=named):
        reordered([m("a"), m("b"), m("c")], proposed)


def test_reorder_names_every_problem_at_once() -> None:
    with pytest.raises(Refused) as refusal:
        reordered([m("a"), m("b"), m("c")], ["a", "a", "z"])
    assert "missing b, c" in str(refusal.value)
    assert "extra z" in str(refusal.value)
    assert "duplicate a" in str(refusal.value)


def test_reorder_refuses_splitting_a_groups_pending_members_and_reports_positions() -> None:
    members = [m("a", "g"), m("b", "g"), m("c")]
    with pytest.raises(Refused) as refusal:
        reordered(members, ["a", "c", "b"])
    message = str(refusal.value)
    assert "group 'g'" in message
    assert "pending members at positions 1, 3" in message
    assert "split by positions 2" in message


def test_reorder_may_move_a_whole_group() -> None:
    members = [m("a", "g"), m("b", "g"), m("c")]
    assert ids(reordered(members, ["c", "a", "b"])) == ["c", "a", "b"]


def test_finished_group_members_do_not_count_as_split() -> None:
    members = [m("a", "g", pending=False), m("b", "g"), m("c")]
    assert ids(reordered(members, ["a", "c", "b"])) == ["a", "c", "b"]


def test_group_splits_lists_each_split_group() -> None:
    order = [m("a", "g"), m("x", "h"), m("b", "g"), m("y", "h")]
    assert [split.group for split in group_splits(order)] == ["g", "h"]


def test_set_group_moves_member_after_groups_last_pending_member() -> None:
    members = [m("a", "g"), m("b", "g"), m("c"), m("d")]
    assert ids(regrouped(members, "d", "g")) == ["a", "b", "d", "c"]


def test_set_group_of_a_new_group_keeps_place() -> None:
    members = [m("a"), m("b"), m("c")]
    result = regrouped(members, "b", "g")
    assert ids(result) == ["a", "b", "c"]
    assert result[1].group == "g"


def test_clear_group_in_the_middle_of_its_block_moves_out_of_the_way() -> None:
    members = [m("a", "g"), m("b", "g"), m("c", "g"), m("d")]
    result = regrouped(members, "b", None)
    assert ids(result) == ["a", "c", "b", "d"]
    assert group_splits(result) == []


def test_clear_group_at_the_edge_keeps_place() -> None:
    members = [m("a", "g"), m("b", "g"), m("c")]
    result = regrouped(members, "b", None)
    assert ids(result) == ["a", "b", "c"]
    assert result[1].group is None
