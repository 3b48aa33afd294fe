import os

import pytest

from log.checkpoint import CleanShutdownFile, MetaProperties, OffsetCheckpointFile


def test_offset_checkpoint_is_written_in_kafkas_text_format(tmp_path):
    f = OffsetCheckpointFile(str(tmp_path / "recovery-point-offset-checkpoint"))
    f.write({("my-topic", 0): 1234, ("other", 3): 0})
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n2\nmy-topic 0 1234\nother 3 0\n"
    assert not os.path.exists(str(tmp_path / "recovery-point-offset-checkpoint.tmp"))


def test_offset_checkpoint_reads_a_file_kafka_wrote(tmp_path):
    p = tmp_path / "log-start-offset-checkpoint"
    p.write_text("0\n3\n__consumer_offsets 12 0\ntopic-with-dashes 7   99\nt 1 5\n")
    assert OffsetCheckpointFile(str(p)).read() == {("__consumer_offsets", 12): 0, ("topic-with-dashes", 7): 99, ("t", 1): 5}


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "x\n"])
def test_a_malformed_checkpoint_is_rejected(tmp_path, text):
    p = tmp_path / "cp"
    p.write_text(text)
    with pytest.raises(OSError):
        OffsetCheckpointFile(str(p)).read()


def test_an_empty_checkpoint_file_reads_as_no_entries(tmp_path):
    assert OffsetCheckpointFile(str(tmp_path / "cp")).read() == {}


def test_meta_properties_round_trip_and_read_kafkas_v1_file(tmp_path):
    MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qk", "fGg3yZ1ZRNWwS2aQ1aEJ5A").write(str(tmp_path))
    text = (tmp_path / "meta.properties").read_text()
    assert "node.id=1\n" in text and "cluster.id=MkU3OEVBNTcwNTJENDM2Qk\n" in text and "version=1\n" in text
    assert MetaProperties.read(str(tmp_path)) == MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qk", "fGg3yZ1ZRNWwS2aQ1aEJ5A")
    (tmp_path / "meta.properties").write_text("#\n#Thu Jan 01 00:00:00 UTC 2025\ncluster.id=abc\nnode.id=3\nversion=1\n")
    assert MetaProperties.read(str(tmp_path)) == MetaProperties(3, "abc")


def test_clean_shutdown_marker_is_kafkas_json_file(tmp_path):
    m = CleanShutdownFile(str(tmp_path))
    assert not m.exists()
    m.write(7)
    assert (tmp_path / ".kafka_cleanshutdown").read_text() == '{"version": "0", "brokerEpoch": "7"}'
    m.delete()
    assert not m.exists()
