"""The soak (tests/soak/__init__.py), bounded for ``make test``: one kill -9, one SIGSTOP past
the ZooKeeper session and one rolling restart of the three brokers, under the whole
workload (idempotent and transactional producers, a consumer group committing
asynchronously, the high-watermark sampler), then every check of the full soak.

About a minute here; the faults are a fixed list rather than a duration and every wait is
a condition with a generous deadline, so a busy machine makes it slower (and acknowledge
less), never fail.  The timeout is for a run that is stuck.
"""

from __future__ import annotations

import pytest

from tests.soak.report import details, table
from tests.soak.runner import run_soak
from tests.support.requirements_helper import needs_tool
from tests.support.zookeeper_process import JARS

pytestmark = [pytest.mark.timeout(1200),
              needs_tool(any(JARS.glob("zookeeper-*.jar")),
                         "ZooKeeper jars missing: run `make zookeeper-jars` (make test does)")]


def test_what_the_cluster_acknowledges_survives_a_kill_a_freeze_and_a_roll_exactly_once_and_in_order(tmp_path):
    result = run_soak(tmp_path, plan=["kill9", "pause", "roll"], seed=28)
    report = table(result) + "\n" + details(result)
    print(report)
    assert [f.kind for f in result.faults] == ["kill9", "pause", "roll"], report
    assert result.findings.acked_idempotent > 0 and result.findings.commits_acked > 0, report
    assert result.ok, report
