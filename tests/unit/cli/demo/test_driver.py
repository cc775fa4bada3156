"""The demo names the node that took over after its leader kill (a pure decision over the nodes' /v1/cluster views)."""

from __future__ import annotations

from halfmq.cli.demo.driver import new_leader


def view(node_id: str, role: str, term: int) -> dict[str, object]:
    return {"node_id": node_id, "role": role, "term": term}


def test_a_node_leading_a_later_term_is_the_new_leader() -> None:
    assert new_leader([view("n2", "follower", 3), view("n3", "leader", 4)], killed="n1", term=3) == ("n3", 4)


def test_no_one_has_taken_over_while_the_others_still_follow_or_elect() -> None:
    assert new_leader([view("n2", "follower", 3), view("n3", "candidate", 3)], killed="n1", term=3) is None


def test_a_node_still_claiming_the_killed_leader_s_term_is_not_a_failover() -> None:
    assert new_leader([view("n2", "leader", 3)], killed="n1", term=3) is None


def test_the_killed_node_back_as_leader_is_not_a_new_leader() -> None:
    assert new_leader([view("n1", "leader", 5)], killed="n1", term=3) is None


def test_views_without_a_term_are_read_as_term_zero() -> None:
    assert new_leader([{"node_id": "n2", "role": "leader"}], killed="n1", term=0) is None


def test_the_demo_pays_nine_orders_in_ten_chosen_by_their_ids() -> None:
    from halfmq.cli.demo.driver import pays

    ids = [f"{i:08x}" + "0" * 24 for i in range(0, 10_000, 7)]
    share = sum(pays(order_id) for order_id in ids) / len(ids)
    assert 0.85 < share < 0.95 and pays(ids[1]) == pays(ids[1])
