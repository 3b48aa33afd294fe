"""A reassignment logs its progress: each partition as it starts moving and as it completes,
with how many partitions are still being reassigned."""

from __future__ import annotations

import logging

from tests.unit.cluster.test_controller_reassignment import expand, started


def test_a_reassignment_logs_its_start_and_completion_with_what_is_left(caplog):
    with caplog.at_level(logging.INFO, logger="kbroker.controller.reassignment"):
        c = started()
        expand(c, [1, 2, 3, 4])
    assert caplog.messages == [
        "Reassigning t-0 to List(2, 3, 4) (adding List(4), removing List(1)): 1 partition(s) being reassigned",
        "Reassignment of t-0 completed: replicas List(2, 3, 4); 0 partition(s) still being reassigned",
    ]
    assert c.controller.context.partitions_being_reassigned == set()
