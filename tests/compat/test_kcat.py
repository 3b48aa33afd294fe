"""kcat (Debian's package, built on its own librdkafka) against a real broker process:
produce a file of lines, consume it back identically, keys with -K, metadata with -L and
offsets-for-times with -Q.

kcat must be on PATH: ``make test`` installs it (target ``deps-system``).  A missing kcat
fails these tests rather than skipping them, so a run without it cannot look green.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

TIMEOUT_S = 60


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.fail("kcat is not on PATH: `make test` installs it (make deps-system: apt-get install -y kcat)")
    return path


def run(*args: str, stdin: str | None = None) -> str:
    r = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert r.returncode == 0, f"{args} exited {r.returncode}:\n{r.stderr}"
    return r.stdout


def lines_file(tmp_path, lines: list[str]):
    f = tmp_path / "lines.txt"
    f.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return f


# kcat -P skips empty lines (it sends an empty message for them only with -Z), so the files
# below have none.
LINES = [f"line {i}: " + "x" * (i % 50) for i in range(3_000)] + ["tab\tinside", "ünïcödé ✓", " lead and trail "]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_kcat_produces_a_file_of_lines_and_consumes_them_back_identically(broker, kcat, tmp_path, codec):
    topic = f"lines-{codec}"
    f = lines_file(tmp_path, LINES)
    run(kcat, "-P", "-b", broker.bootstrap, "-t", topic, "-z", codec, "-l", str(f))
    out = run(kcat, "-C", "-b", broker.bootstrap, "-t", topic, "-e", "-o", "beginning", "-q")
    assert out == f.read_text(encoding="utf-8")
    # offsets are contiguous from 0 in the single auto-created partition
    out = run(kcat, "-C", "-b", broker.bootstrap, "-t", topic, "-e", "-o", "beginning", "-q",
              "-f", "%p %o %s\n")
    assert out.splitlines() == [f"0 {i} {line}" for i, line in enumerate(LINES)]


def test_kcat_keys_split_with_dash_k_come_back_as_keys(broker, kcat, tmp_path):
    lines = [f"key-{i % 17}:value {i}" for i in range(500)] + ["only-key:", ":no key", "k:v:with:colons"]
    f = lines_file(tmp_path, lines)
    run(kcat, "-P", "-b", broker.bootstrap, "-t", "keyed", "-K", ":", "-l", str(f))
    out = run(kcat, "-C", "-b", broker.bootstrap, "-t", "keyed", "-e", "-o", "beginning", "-q", "-K", ":")
    assert out.splitlines() == lines
    # kcat sends an empty key part as an empty (length 0, not null) key; %K prints the length
    out = run(kcat, "-C", "-b", broker.bootstrap, "-t", "keyed", "-e", "-o", "-3", "-q", "-f", "%K|%k|%S|%s\n")
    assert out.splitlines() == ["8|only-key|0|", "0||6|no key", "1|k|13|v:with:colons"]


def test_kcat_lists_the_topics_and_this_broker_as_controller(broker, kcat, tmp_path):
    f = lines_file(tmp_path, ["one", "two"])
    run(kcat, "-P", "-b", broker.bootstrap, "-t", "listed-a", "-l", str(f))
    run(kcat, "-P", "-b", broker.bootstrap, "-t", "listed-b", "-l", str(f))
    md = json.loads(run(kcat, "-L", "-J", "-b", broker.bootstrap))
    assert md["controllerid"] == 1
    assert md["brokers"] == [{"id": 1, "name": broker.bootstrap}]
    assert sorted(md["topics"], key=lambda t: t["topic"]) == [
        {"topic": name, "partitions": [{"partition": 0, "leader": 1, "replicas": [{"id": 1}], "isrs": [{"id": 1}]}]}
        for name in ("listed-a", "listed-b")]
    text = run(kcat, "-L", "-b", broker.bootstrap)
    assert f"  broker 1 at {broker.bootstrap} (controller)\n" in text
    assert ' 2 topics:\n' in text
    assert '  topic "listed-a" with 1 partitions:\n    partition 0, leader 1, replicas: 1, isrs: 1\n' in text


def test_kcat_query_mode_finds_the_first_offset_at_or_after_a_timestamp(broker_factory, kcat, tmp_path):
    b = broker_factory(**{"num.partitions": "1"})
    f = lines_file(tmp_path, [f"r{i}" for i in range(10)])
    run(kcat, "-P", "-b", b.bootstrap, "-t", "timed", "-l", str(f))
    out = run(kcat, "-C", "-b", b.bootstrap, "-t", "timed", "-e", "-o", "beginning", "-q", "-f", "%o %T\n")
    stamps = [int(line.split()[1]) for line in out.splitlines()]
    assert len(stamps) == 10
    before, last = stamps[0] - 1, stamps[-1]

    def query(ts: int) -> str:
        return run(kcat, "-Q", "-b", b.bootstrap, "-t", f"timed:0:{ts}").strip()

    assert query(before) == "timed [0] offset 0"
    assert query(last) == f"timed [0] offset {stamps.index(last)}"
    assert query(last + 1) == "timed [0] offset -1"
