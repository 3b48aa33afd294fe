"""Facts about the machine and the software a benchmark ran with, for its report: a ratio
means little without knowing on what it was measured."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _mem_total() -> str:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    return "unknown"


def _disk(path: Path) -> str:
    """Filesystem, device and whether it is rotational, for the directory data is written to."""
    out = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", str(path)],
                         capture_output=True, text=True).stdout.split()
    source, fstype = (out + ["?", "?"])[:2]
    kind = ""
    dev = Path(source).name
    rot = Path(f"/sys/block/{dev}/queue/rotational")
    if rot.exists():
        kind = ", rotational" if rot.read_text().strip() == "1" else ", non-rotational"
    total = shutil.disk_usage(path).total / 1e9
    return f"{source} ({fstype}{kind}), {total:.0f} GB, data dirs under {path}"


def _git_commit() -> str:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def facts(data_root: Path, kafka_version: str, java_version: str) -> dict[str, str]:
    import confluent_kafka

    return {
        "CPU": f"{_cpu_model()}, {os.cpu_count()} cores",
        "memory": _mem_total(),
        "disk": _disk(data_root),
        "OS": f"{platform.system()} {platform.release()}",
        "Python": sys.version.split()[0],
        "kbroker": f"git {_git_commit()}",
        "Apache Kafka": kafka_version,
        "Java": java_version,
        "confluent-kafka / librdkafka": f"{confluent_kafka.version()[0]} / {confluent_kafka.libversion()[0]}",
    }
