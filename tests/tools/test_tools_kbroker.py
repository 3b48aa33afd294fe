"""Every ``kbroker`` tool against a real kbroker process: what it prints, what it changes,
and the exit status a script sees (0 done, 1 refused with a message on stderr, 2 usage)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from kbroker.tools.console_producer import partition_for_key
from tests.tools.helpers import kbroker, wait_until

pytestmark = pytest.mark.compat

TOOLS = ["topics", "consumer-groups", "configs", "get-offsets", "dump-log", "console-producer",
         "console-consumer", "acls", "console", "serve"]


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_has_help(tool):
    r = kbroker(tool, "--help")
    assert r.rc == 0 and ("Usage:" in r.out or "usage:" in r.out), r


def test_a_usage_error_exits_2_and_names_the_problem(broker):
    r = kbroker("topics", "--bootstrap-server", broker.bootstrap, "--list", "--describe")
    assert r.rc == 2 and "exactly one action" in r.err
    r = kbroker("topics", "--list")
    assert r.rc == 2 and "--bootstrap-server" in r.err


def test_an_unreachable_cluster_exits_1_with_a_message():
    r = kbroker("topics", "--bootstrap-server", "127.0.0.1:1", "--list")
    assert r.rc == 1 and "cannot connect to any bootstrap server" in r.err


def test_topics_create_alter_describe_delete(broker):
    b = broker.bootstrap
    r = kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "life", "--partitions", "1")
    assert (r.rc, r.out) == (0, "Created topic life.\n")
    r = kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "life")
    assert r.rc == 1 and r.err == "Error while executing topic command : Topic 'life' already exists.\n"
    assert kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "life", "--if-not-exists").rc == 0
    assert kbroker("topics", "--bootstrap-server", b, "--alter", "--topic", "life", "--partitions", "3").rc == 0
    r = kbroker("topics", "--bootstrap-server", b, "--describe", "--topic", "life")
    lines = r.out.splitlines()
    # the topic id as Kafka's TopicCommand prints it: Uuid.toString, 22 URL-safe base64 characters
    assert re.fullmatch(r"Topic: life\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: ",
                        lines[0]), lines[0]
    assert [line.split("\t")[2] for line in lines[1:]] == ["Partition: 0", "Partition: 1", "Partition: 2"]
    assert kbroker("topics", "--bootstrap-server", b, "--delete", "--topic", "life").rc == 0
    wait_until(lambda: "life" not in kbroker("topics", "--bootstrap-server", b, "--list").out.split(),
               "the deleted topic to leave the list")
    r = kbroker("topics", "--bootstrap-server", b, "--describe", "--topic", "life")
    assert r.rc == 1 and "Topic 'life' does not exist as expected" in r.err
    assert kbroker("topics", "--bootstrap-server", b, "--delete", "--topic", "life", "--if-exists").rc == 0


def test_configs_alter_then_describe_shows_the_dynamic_config(broker):
    b = broker.bootstrap
    kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "conf", "--partitions", "1")
    r = kbroker("configs", "--bootstrap-server", b, "--alter", "--entity-type", "topics", "--entity-name", "conf",
                "--add-config", "retention.ms=1234,cleanup.policy=[compact,delete]")
    assert (r.rc, r.out) == (0, "Completed updating config for topic conf.\n"), r
    r = kbroker("configs", "--bootstrap-server", b, "--describe", "--entity-type", "topics", "--entity-name", "conf")
    lines = r.out.splitlines()
    assert lines[0] == "Dynamic configs for topic conf are:"
    assert lines[1].startswith("  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete")
    assert lines[2].startswith("  retention.ms=1234 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1234")
    kbroker("configs", "--bootstrap-server", b, "--alter", "--entity-type", "topics", "--entity-name", "conf",
            "--delete-config", "cleanup.policy,retention.ms")
    r = kbroker("configs", "--bootstrap-server", b, "--describe", "--topic", "conf", "--entity-type", "topics")
    assert r.out == "Dynamic configs for topic conf are:\n"
    r = kbroker("configs", "--bootstrap-server", b, "--alter", "--entity-type", "brokers", "--entity-default",
                "--add-config", "log.retention.ms=604800001")
    assert r.out == "Completed updating default config for brokers in the cluster.\n", r
    r = kbroker("configs", "--bootstrap-server", b, "--describe", "--entity-type", "brokers", "--entity-default")
    assert r.out.splitlines()[1].startswith(
        "  log.retention.ms=604800001 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=604800001"), r.out
    kbroker("configs", "--bootstrap-server", b, "--alter", "--entity-type", "brokers", "--entity-default",
            "--delete-config", "log.retention.ms")
    r = kbroker("configs", "--bootstrap-server", b, "--alter", "--entity-type", "topics", "--entity-name", "conf",
                "--add-config", "retention.ms=abc")
    assert r.rc == 1 and r.err.startswith("Error: "), r


def _produce(b: str, topic: str, text: str, *props: str) -> None:
    args = [arg for p in props for arg in ("--property", p)]
    r = kbroker("console-producer", "--bootstrap-server", b, "--topic", topic, *args, stdin=text)
    assert r.rc == 0, r


def test_console_producer_and_consumer_round_trip_keys_headers_and_nulls(broker):
    b = broker.bootstrap
    kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "lines", "--partitions", "3")
    _produce(b, "lines", "h1:a,h2:b\tk1\tfirst\nNO\tk2\tNULL\n\tNULL\tthird\n",
             "parse.key=true", "parse.headers=true", "null.marker=NULL")
    r = kbroker("console-consumer", "--bootstrap-server", b, "--topic", "lines", "--from-beginning",
                "--max-messages", "3", "--property", "print.key=true", "--property", "print.headers=true",
                "--property", "print.partition=true")
    assert r.rc == 0 and r.err.endswith("Processed a total of 3 messages\n"), r
    got = sorted(r.out.splitlines())
    p1, p2 = partition_for_key(b"k1", 3), partition_for_key(b"k2", 3)
    assert f"Partition:{p1}\th1:a,h2:b\tk1\tfirst" in got   # Kafka's partition for key k1
    assert f"Partition:{p2}\tNO:null\tk2\tnull" in got        # a null value prints null.literal
    assert any(line.endswith("\tNO_HEADERS\tnull\tthird") for line in got)


def test_console_consumer_with_a_group_commits_what_it_read(broker):
    b = broker.bootstrap
    kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "grouped", "--partitions", "1")
    _produce(b, "grouped", "".join(f"m{i}\n" for i in range(10)))
    r = kbroker("console-consumer", "--bootstrap-server", b, "--topic", "grouped", "--group", "readers",
                "--from-beginning", "--max-messages", "4")
    assert r.out == "m0\nm1\nm2\nm3\n", r
    r = kbroker("consumer-groups", "--bootstrap-server", b, "--describe", "--group", "readers")
    assert r.out.splitlines()[2].split() == ["readers", "grouped", "0", "4", "10", "6", "-", "-", "-"]
    r = kbroker("console-consumer", "--bootstrap-server", b, "--topic", "grouped", "--group", "readers",
                "--timeout-ms", "1500")
    assert r.out == "".join(f"m{i}\n" for i in range(4, 10)), r


def test_consumer_groups_reset_execute_shift_datetime_and_delete(broker):
    b = broker.bootstrap
    kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "resets", "--partitions", "1")
    _produce(b, "resets", "".join(f"r{i}\n" for i in range(8)))
    base = ["consumer-groups", "--bootstrap-server", b, "--group", "resetter"]
    r = kbroker(*base, "--reset-offsets", "--topic", "resets", "--to-latest", "--execute")
    assert r.rc == 0 and r.out.splitlines()[-1].split() == ["resetter", "resets", "0", "8"], r
    r = kbroker(*base, "--reset-offsets", "--topic", "resets", "--shift-by", "-5", "--execute")
    assert r.out.splitlines()[-1].split() == ["resetter", "resets", "0", "3"]
    r = kbroker(*base, "--reset-offsets", "--all-topics", "--shift-by", "-100", "--dry-run")
    assert r.out.splitlines()[-1].split() == ["resetter", "resets", "0", "0"]  # clamped to earliest
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    r = kbroker(*base, "--reset-offsets", "--all-topics", "--to-datetime", future, "--execute")
    assert r.out.splitlines()[-1].split() == ["resetter", "resets", "0", "8"]  # nothing after: latest
    r = kbroker(*base, "--reset-offsets", "--all-topics", "--to-datetime", "2000-01-01T00:00:00.000Z", "--execute")
    assert r.out.splitlines()[-1].split() == ["resetter", "resets", "0", "0"]
    r = kbroker(*base, "--describe")
    assert r.out.splitlines()[2].split()[3:6] == ["0", "8", "8"]
    r = kbroker(*base, "--delete")
    assert (r.rc, r.out) == (0, "Deletion of requested consumer groups ('resetter') was successful.\n")
    r = kbroker(*base, "--describe")
    assert r.rc == 1 and r.out == "\nError: Consumer group 'resetter' does not exist.\n"


def test_get_offsets_by_time(broker):
    b = broker.bootstrap
    kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "timed", "--partitions", "1")
    _produce(b, "timed", "a\nb\nc\n")
    base = ["get-offsets", "--bootstrap-server", b, "--topic", "timed"]
    assert kbroker(*base).out == "timed:0:3\n"
    assert kbroker(*base, "--time", "earliest").out == "timed:0:0\n"
    assert kbroker(*base, "--time", "0").out == "timed:0:0\n"
    assert kbroker(*base, "--time", "max-timestamp").out.startswith("timed:0:")
    assert kbroker(*base, "--time", "9999999999999").out == ""  # no record that late: left out
    r = kbroker(*base, "--time", "yesterday")
    assert r.rc == 1 and "Malformed time argument yesterday" in r.err


def test_dump_log_reads_the_brokers_segments(broker):
    b = broker.bootstrap
    kbroker("topics", "--bootstrap-server", b, "--create", "--topic", "dumped", "--partitions", "1")
    _produce(b, "dumped", "k\tv1\nk\tv2\n", "parse.key=true")
    seg = broker.data_dir / "dumped-0" / "00000000000000000000"
    r = kbroker("dump-log", "--files", f"{seg}.log", "--print-data-log")
    lines = r.out.splitlines()
    assert lines[:2] == [f"Dumping {seg}.log", "Log starting offset: 0"]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 ")
    assert lines[2].endswith(" magic: 2 compresscodec: none crc: " + lines[2].split("crc: ")[1].split()[0] + " isvalid: true")
    assert lines[3].startswith("| offset: 0 CreateTime: ") and lines[3].endswith(
        " keySize: 1 valueSize: 2 sequence: -1 headerKeys: [] key: k payload: v1")
    r = kbroker("dump-log", "--files", f"{seg}.index,{seg}.timeindex", "--index-sanity-check")
    assert r.out.splitlines()[1] == f"{seg}.index passed sanity check." and r.rc == 0
    kbroker("console-consumer", "--bootstrap-server", b, "--topic", "dumped", "--group", "dumper",
            "--from-beginning", "--max-messages", "1")
    logs = [p for p in broker.data_dir.glob("__consumer_offsets-*/00000000000000000000.log") if p.stat().st_size]
    out = kbroker("dump-log", "--offsets-decoder", "--files", ",".join(map(str, logs))).out
    assert 'key: {"type":"1","data":{"group":"dumper","topic":"dumped","partition":0}} payload: {"version":"' in out
    assert '"offset":1,' in out
    r = kbroker("dump-log", "--files", str(broker.data_dir / "00000000000000000077.log"))
    assert r.rc == 1 and "No such file or directory" in r.err
    r = kbroker("dump-log", "--files", str(broker.data_dir / "nope.log"))
    assert (r.rc, r.err) == (1, 'Error: For input string: "nope"\n')
