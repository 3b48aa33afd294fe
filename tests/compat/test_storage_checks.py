"""``kbroker serve`` refuses storage it cannot vouch for: one error line naming the dir and
what to do, exit status 1, no traceback, nothing formatted or recreated over the data.  And
the leader epoch is stored as Kafka stores it: ``leader-epoch-checkpoint`` per partition,
``partitionLeaderEpoch`` in every batch a consumer fetches, both kept across restarts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer

from tests.support.broker_process import ROOT, BrokerProcess, free_port

from .test_restarts import create_topic


def serve(data_dir, **overrides: str) -> subprocess.CompletedProcess[str]:
    """Run ``kbroker serve`` expecting it to stop at start-up (60 s is far beyond that)."""
    props = {"listeners": f"PLAINTEXT://127.0.0.1:{free_port()}", "log.dirs": str(data_dir), **overrides}
    cmd = [sys.executable, "-m", "kbroker", "serve"]
    for k, v in props.items():
        cmd += ["--override", f"{k}={v}"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """The one ERROR line of a refused start, after checking the exit and the absence of a
    traceback."""
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if " ERROR " in line]
    assert len(errors) == 1, out
    return errors[0]


def test_a_partition_directory_lost_while_the_broker_was_down_stops_start_up(tmp_path):
    data = tmp_path / "data"
    b = BrokerProcess(data).start()
    create_topic(b.bootstrap, "orders", 2)
    p = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(10):
        p.produce("orders", value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    assert b.stop() == 0
    shutil.rmtree(data / "orders-1")

    line = refusal(serve(data))
    assert (f"cannot start: Partition directories missing from log dir {data}: orders-1 "
            f"(listed in {data}/recovery-point-offset-checkpoint, so they existed).") in line
    assert "restore the directories" in line
    assert not (data / "orders-1").exists()


def test_another_nodes_log_dir_stops_start_up_in_kafkas_words(tmp_path):
    data = tmp_path / "data"
    BrokerProcess(data).start().stop()
    line = refusal(serve(data, **{"node.id": "2"}))
    assert (f"cannot start: Stored node id 1 doesn't match previous node id 2 in {data}/meta.properties. "
            "If you moved your data, make sure your configured node id matches.") in line


def test_a_foreign_cluster_id_among_the_log_dirs_stops_start_up(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    BrokerProcess(a).start().stop()
    BrokerProcess(b).start().stop()  # formatted by another start: another cluster id
    cluster_a = dict(line.split("=", 1) for line in (a / "meta.properties").read_text().splitlines()
                     if "=" in line)["cluster.id"]
    line = refusal(serve(f"{a},{b}"))
    assert f"cannot start: Invalid cluster.id in: {b}/meta.properties. Expected {cluster_a}, but read " in line


def test_a_non_empty_log_dir_without_meta_properties_is_not_formatted_over(tmp_path):
    data = tmp_path / "data"
    BrokerProcess(data).start().stop()
    (data / "meta.properties").unlink()
    line = refusal(serve(data))
    assert f"cannot start: No `meta.properties` found in {data}, which is not empty" in line
    assert not (data / "meta.properties").exists()


def test_a_log_dir_that_cannot_be_created_stops_start_up(tmp_path):
    (tmp_path / "file").write_text("in the way")
    line = refusal(serve(tmp_path / "file" / "data"))
    assert f"cannot start: Failed to create data directory {tmp_path}/file/data" in line


def consume_all(bootstrap: str, topic: str, count: int) -> list:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "storage-checks", "enable.auto.commit": False})
    got = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 60
        while len(got) < count:
            assert time.monotonic() < deadline, f"read {len(got)} of {count}"
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                got.append(m)
    finally:
        c.close()
    return got


@pytest.mark.parametrize("clean", [True, False], ids=["clean-stop", "kill-9"])
def test_the_leader_epoch_checkpoint_is_written_at_creation_and_survives_a_restart(tmp_path, clean):
    data = tmp_path / "data"
    b = BrokerProcess(data).start()
    try:
        create_topic(b.bootstrap, "epochs", 1)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for i in range(20):
            p.produce("epochs", value=b"v%d" % i, partition=0)
        assert p.flush(30) == 0
        # Kafka's makeLeader assigns epoch 0 from offset 0 for a new partition
        assert (data / "epochs-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
        assert [m.leader_epoch() for m in consume_all(b.bootstrap, "epochs", 20)] == [0] * 20
        b.restart(clean=clean)
        assert (data / "epochs-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
        got = consume_all(b.bootstrap, "epochs", 20)
        assert [(m.offset(), m.leader_epoch()) for m in got] == [(i, 0) for i in range(20)]
    finally:
        b.stop()
