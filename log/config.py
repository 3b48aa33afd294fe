"""LogConfig: the per-topic storage settings, with Kafka's topic-config names and defaults.

Names and defaults are those of Kafka 4.x ``LogConfig``/``TopicConfig``; the broker-level
synonyms (``log.segment.bytes`` ...) are listed in :data:`SERVER_SYNONYMS` so the broker can
build a topic's config as Kafka does: topic override, else server setting, else default.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

__all__ = ["CLEANER_DEFAULTS", "DEFAULTS", "INT_CONFIGS", "LONG_MAX", "SERVER_SYNONYMS", "CleanerConfig", "LogConfig",
           "ProducerStateManagerConfig"]

LONG_MAX = (1 << 63) - 1
DOUBLE_MAX = sys.float_info.max  # Java's Double.MAX_VALUE

# topic config name -> (attribute, default)
_SPEC: dict[str, tuple[str, object]] = {
    "segment.bytes": ("segment_bytes", 1024 * 1024 * 1024),
    "segment.ms": ("segment_ms", 7 * 24 * 60 * 60 * 1000),
    "segment.jitter.ms": ("segment_jitter_ms", 0),
    "segment.index.bytes": ("segment_index_bytes", 10 * 1024 * 1024),
    "index.interval.bytes": ("index_interval_bytes", 4096),
    "retention.ms": ("retention_ms", 7 * 24 * 60 * 60 * 1000),
    "retention.bytes": ("retention_bytes", -1),
    "flush.messages": ("flush_messages", LONG_MAX),
    "flush.ms": ("flush_ms", LONG_MAX),
    "file.delete.delay.ms": ("file_delete_delay_ms", 60000),
    "message.timestamp.type": ("message_timestamp_type", "CreateTime"),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", LONG_MAX),
    # Kafka 4.0 changed this default from Long.MAX to one hour (KIP-1028 / KAFKA-16368).
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", 3600000),
    "max.message.bytes": ("max_message_bytes", 1024 * 1024 + 12),
    "cleanup.policy": ("cleanup_policy", ("delete",)),
    "compression.type": ("compression_type", "producer"),
    "preallocate": ("preallocate", False),
    "min.insync.replicas": ("min_insync_replicas", 1),
    "delete.retention.ms": ("delete_retention_ms", 24 * 60 * 60 * 1000),
    # Compaction (the log cleaner): a record stays uncompacted at least min.compaction.lag.ms
    # and at most max.compaction.lag.ms; a log is cleaned once dirty bytes / total bytes
    # exceeds min.cleanable.dirty.ratio (a double in [0, 1]).
    "min.compaction.lag.ms": ("min_compaction_lag_ms", 0),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", LONG_MAX),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", 0.5),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", False),
    # KIP-390 codec levels, used when the broker (re)compresses (compression.type != producer).
    "compression.gzip.level": ("compression_gzip_level", -1),
    "compression.lz4.level": ("compression_lz4_level", 9),
    "compression.zstd.level": ("compression_zstd_level", 3),
    # Accepted and described as Kafka does, inert on a single node without tiered storage:
    # replication throttles name replicas of other brokers; local.retention.* only bound
    # the local part of a tiered log; remote.storage.enable=true is refused (see below).
    "leader.replication.throttled.replicas": ("leader_replication_throttled_replicas", ()),
    "follower.replication.throttled.replicas": ("follower_replication_throttled_replicas", ()),
    "remote.storage.enable": ("remote_storage_enable", False),
    "local.retention.ms": ("local_retention_ms", -2),
    "local.retention.bytes": ("local_retention_bytes", -2),
    "remote.log.copy.disable": ("remote_log_copy_disable", False),
    "remote.log.delete.on.disable": ("remote_log_delete_on_disable", False),
}

DEFAULTS: dict[str, object] = {name: default for name, (_, default) in _SPEC.items()}

# Kafka's LogConfig validators (ConfigDef atLeast / in) for the names above; segment.bytes is
# deliberately looser than Kafka 4's 1 MiB (small segments keep tests and benches fast).
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_AT_LEAST: dict[str, int] = {
    "segment.ms": 1, "segment.jitter.ms": 0, "index.interval.bytes": 0, "retention.ms": -1,
    "flush.messages": 1, "flush.ms": 0, "file.delete.delay.ms": 0,
    "message.timestamp.before.max.ms": 0, "message.timestamp.after.max.ms": 0,
    "max.message.bytes": 0, "min.insync.replicas": 1, "delete.retention.ms": 0,
    "min.compaction.lag.ms": 0, "max.compaction.lag.ms": 1,
    "local.retention.ms": -2, "local.retention.bytes": -2,
}
# Kafka's per-codec level ranges (GzipCompression, Lz4Compression, ZstdCompression).
_LEVELS: dict[str, tuple[int, int, tuple[int, ...]]] = {
    "compression.gzip.level": (1, 9, (-1,)),
    "compression.lz4.level": (1, 17, ()),
    "compression.zstd.level": (-131072, 22, ()),
}

# topic config -> broker config that supplies its default (Kafka's ServerTopicConfigSynonyms).
SERVER_SYNONYMS: dict[str, str] = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "max.message.bytes": "message.max.bytes",
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "preallocate": "log.preallocate",
    "min.insync.replicas": "min.insync.replicas",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "local.retention.ms": "log.local.retention.ms",
    "local.retention.bytes": "log.local.retention.bytes",
}


# The integer topic configs Kafka declares INT (32-bit); the other integer ones are LONG.
INT_CONFIGS = frozenset({
    "segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes",
    "min.insync.replicas", "compression.gzip.level", "compression.lz4.level",
    "compression.zstd.level"})
_INT_RANGES = {"INT": (-(1 << 31), (1 << 31) - 1), "LONG": (-(1 << 63), LONG_MAX)}
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt / Long.parseLong accept


def _coerce(default: object, value: object, name: str = "") -> object:
    """One value as Kafka's ConfigDef.parseType reads it (strings trimmed).  A value that is
    not of the config's type raises ValueError with the message of Kafka's ConfigException
    ("Invalid value abc for configuration retention.ms: Not a number of type LONG"), which
    AlterConfigs and CreateTopics hand back to the client with INVALID_CONFIG."""
    def invalid(why: str) -> ValueError:
        return ValueError(f"Invalid value {value} for configuration {name}: {why}")

    if isinstance(default, bool):
        if isinstance(value, str):
            v = value.strip().lower()
            if v not in ("true", "false"):
                raise invalid("Expected value to be either true or false")
            return v == "true"
        return bool(value)
    if isinstance(default, int):
        if not isinstance(value, str):
            return int(value)  # type: ignore[call-overload]
        kind = "INT" if name in INT_CONFIGS else "LONG"
        lo, hi = _INT_RANGES[kind]
        text = value.strip()
        # Python's int() would also take "1_000" and numbers past Java's range.
        if not _JAVA_INTEGER.fullmatch(text) or not lo <= int(text) <= hi:
            raise invalid(f"Not a number of type {kind}")
        return int(text)
    if isinstance(default, float):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise invalid("Not a number of type DOUBLE") from None
    if isinstance(default, tuple):
        if isinstance(value, str):
            return tuple(p.strip() for p in value.split(",") if p.strip())
        return tuple(value)  # type: ignore[arg-type]
    return str(value)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Immutable per-log settings.  Build with ``LogConfig()`` (defaults), ``LogConfig(segment_bytes=...)``
    or :meth:`from_properties` with Kafka names.  Invariants checked in ``__post_init__``:
    segment.index.bytes >= 8 (one offset-index entry); message.timestamp.type is CreateTime or
    LogAppendTime; cleanup.policy is a subset of {delete, compact}; compression.type is one of
    Kafka's; min.cleanable.dirty.ratio is in [0, 1]; min.compaction.lag.ms <=
    max.compaction.lag.ms; the other numbers respect Kafka's lower bounds (retention.ms >= -1,
    ...)."""

    segment_bytes: int = DEFAULTS["segment.bytes"]  # type: ignore[assignment]
    segment_ms: int = DEFAULTS["segment.ms"]  # type: ignore[assignment]
    segment_jitter_ms: int = 0
    segment_index_bytes: int = DEFAULTS["segment.index.bytes"]  # type: ignore[assignment]
    index_interval_bytes: int = 4096
    retention_ms: int = DEFAULTS["retention.ms"]  # type: ignore[assignment]
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 3600000
    max_message_bytes: int = 1024 * 1024 + 12
    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    preallocate: bool = False
    min_insync_replicas: int = 1
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    unclean_leader_election_enable: bool = False
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    overrides: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.segment_index_bytes < 8:
            raise ValueError("segment.index.bytes must be at least 8")
        if self.segment_bytes < 1:
            raise ValueError("segment.bytes must be positive")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError(f"invalid message.timestamp.type {self.message_timestamp_type!r}")
        if not set(self.cleanup_policy) <= {"delete", "compact"}:
            raise ValueError(f"invalid cleanup.policy {self.cleanup_policy!r}")
        if self.compression_type not in COMPRESSION_TYPES:
            raise ValueError(f"Invalid value {self.compression_type} for configuration compression.type: "
                             f"String must be one of: {', '.join(COMPRESSION_TYPES)}")
        for name, (lo, hi, extra) in _LEVELS.items():
            value = getattr(self, _SPEC[name][0])
            if not (lo <= value <= hi or value in extra):
                raise ValueError(f"Invalid value {value} for configuration {name}: Value must be "
                                 f"in [{lo},...,{hi}]" + (f" or {extra[0]}" if extra else ""))
        for name in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"):
            items = getattr(self, _SPEC[name][0])
            if items != ("*",) and not all(re.fullmatch(r"\d+:\d+", i) for i in items):
                raise ValueError(f"Invalid value {','.join(items)} for configuration {name}: "
                                 "must be the literal '*' or a list of replicas in the following "
                                 "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
        if self.remote_storage_enable:
            raise ValueError("Tiered Storage functionality is disabled in the broker. "
                             "Topic cannot be configured with remote log storage.")
        for name, minimum in _AT_LEAST.items():
            value = getattr(self, _SPEC[name][0])
            if value < minimum:
                raise ValueError(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")
        # ConfigDef.Range.between(0, 1) on a DOUBLE
        ratio = self.min_cleanable_dirty_ratio
        if not 0 <= ratio <= 1:
            bound = "at least 0" if ratio < 0 else "no more than 1"
            raise ValueError(f"Invalid value {ratio} for configuration min.cleanable.dirty.ratio: Value must be {bound}")
        # LogConfig.validateValues
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ValueError(f"conflict topic config setting min.compaction.lag.ms ({self.min_compaction_lag_ms}) > "
                             f"max.compaction.lag.ms ({self.max_compaction_lag_ms})")

    @classmethod
    def from_properties(
        cls, props: Mapping[str, object], base: LogConfig | None = None
    ) -> LogConfig:
        """Kafka topic-config names -> LogConfig.  Unknown names raise ``KeyError`` (the broker
        answers INVALID_CONFIG); values may be strings as in server.properties."""
        values = {f.name: getattr(base, f.name) for f in fields(cls)} if base else {}
        overrides = dict(base.overrides) if base else {}
        for name, raw in props.items():
            if name not in _SPEC:
                raise KeyError(name)
            attr, default = _SPEC[name]
            values[attr] = _coerce(default, raw, name)
            overrides[name] = str(raw)
        values["overrides"] = tuple(sorted(overrides.items()))
        return cls(**values)

    def to_properties(self) -> dict[str, object]:
        return {name: getattr(self, attr) for name, (attr, _) in _SPEC.items()}

    # Kafka's derived accessors
    @property
    def max_index_size(self) -> int:
        return self.segment_index_bytes

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def random_segment_jitter(self) -> int:
        """Kafka's ``randomSegmentJitter``: uniform in [0, min(jitter, segment.ms))."""
        if self.segment_jitter_ms <= 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))


# Broker config name -> (CleanerConfig attribute, Kafka's default), Kafka's CleanerConfig.
# (log.cleaner.io.buffer.load.factor really is Kafka's name for the dedupe map load factor.)
_CLEANER_SPEC: dict[str, tuple[str, object]] = {
    "log.cleaner.threads": ("num_threads", 1),
    "log.cleaner.dedupe.buffer.size": ("dedupe_buffer_size", 128 * 1024 * 1024),
    "log.cleaner.io.buffer.load.factor": ("dedupe_buffer_load_factor", 0.9),
    "log.cleaner.io.buffer.size": ("io_buffer_size", 512 * 1024),
    "message.max.bytes": ("max_message_size", 1024 * 1024 + 12),
    "log.cleaner.io.max.bytes.per.second": ("max_io_bytes_per_second", DOUBLE_MAX),
    "log.cleaner.backoff.ms": ("backoff_ms", 15 * 1000),
    "log.cleaner.enable": ("enable_cleaner", True),
}
CLEANER_DEFAULTS: dict[str, object] = {name: default for name, (_, default) in _CLEANER_SPEC.items()}


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The log cleaner's broker-level settings (Kafka's ``CleanerConfig``).

    ``dedupe_buffer_size`` bytes are shared by ``num_threads`` cleaners: each offset map gets
    ``dedupe_buffer_size / num_threads`` and is filled to ``dedupe_buffer_load_factor`` of its
    slots; ``io_buffer_size / num_threads / 2`` is each cleaner's read chunk; all cleaners
    together read+write at most ``max_io_bytes_per_second``; with nothing to clean the
    driver waits ``backoff_ms``.  ``hash_algorithm`` names the digest the offset map keys on
    (hashlib name)."""

    num_threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024
    max_message_size: int = 1024 * 1024 + 12
    max_io_bytes_per_second: float = DOUBLE_MAX
    backoff_ms: int = 15 * 1000
    enable_cleaner: bool = True
    hash_algorithm: str = "md5"

    def __post_init__(self) -> None:
        for name, minimum in (("log.cleaner.threads", 0), ("log.cleaner.io.buffer.size", 0),
                              ("log.cleaner.backoff.ms", 0)):
            value = getattr(self, _CLEANER_SPEC[name][0])
            if value < minimum:
                raise ValueError(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> CleanerConfig:
        """Kafka broker-config names (``log.cleaner.*``, ``message.max.bytes``) -> CleanerConfig;
        other names are ignored (they belong to the rest of the broker config)."""
        values = {}
        for name, raw in props.items():
            if name in _CLEANER_SPEC and raw is not None:
                attr, default = _CLEANER_SPEC[name]
                values[attr] = _coerce(default, raw)
        return cls(**values)

    @property
    def dedupe_buffer_per_thread(self) -> int:
        """Kafka: ``min(dedupeBufferSize / numThreads, Integer.MAX_VALUE)``."""
        return min(self.dedupe_buffer_size // max(self.num_threads, 1), (1 << 31) - 1)

    @property
    def io_buffer_per_thread(self) -> int:
        """Each cleaner's read (and write) buffer: ``ioBufferSize / numThreads / 2``."""
        return max(self.io_buffer_size // max(self.num_threads, 1) // 2, 1)


@dataclass(frozen=True, slots=True)
class ProducerStateManagerConfig:
    """``producer.id.expiration.ms`` (default 1 day): idle producer ids are forgotten."""

    producer_id_expiration_ms: int = 86400000
