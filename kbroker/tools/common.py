"""What every protocol tool shares: the connection options and the error-to-exit-status rule."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from kbroker.tools.client import Client, ToolError, load_command_config
from wire.java_hash import java_string_hash as signed_java_string_hash

__all__ = ["connection_options", "connect", "fail", "java_hash_order", "java_string_hash_order",
           "java_string_hash",
           "topic_partition_hash", "ToolError"]


def connection_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--bootstrap-server`` (required) and ``--command-config``, as Kafka's tools take them."""
    f = click.option("--command-config", "command_config", type=click.Path(exists=True, dir_okay=False),
                     help="Property file with client configs (security.protocol=PLAINTEXT only).")(f)
    f = click.option("--bootstrap-server", "bootstrap_server", required=True, metavar="HOST:PORT[,...]",
                     help="REQUIRED: the Kafka server(s) to connect to.")(f)
    return f


def connect(bootstrap_server: str, command_config: str | None) -> Client:
    return Client(bootstrap_server, load_command_config(command_config))


def fail(prefix: str = "Error: ") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Turn a ToolError (or a lost connection) into ``<prefix><message>`` on stderr, exit 1."""
    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return f(*args, **kwargs)
            except (ToolError, OSError) as e:
                click.echo(f"{prefix}{e}", err=True)
                sys.exit(1)
        return run
    return wrap


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (wire/java_hash.py) as an unsigned 32-bit value."""
    return signed_java_string_hash(s) & 0xFFFFFFFF


def java_hash_order(keys: list[Any], hash_code: Callable[[Any], int], initial_capacity: int = 16) -> list[Any]:
    """The iteration order of a java.util.HashMap filled with ``keys`` in order, given the
    keys' Java ``hashCode`` (see :func:`java_string_hash_order`)."""
    n = 1
    while n < initial_capacity:  # HashMap.tableSizeFor
        n *= 2
    while len(keys) > n * 3 // 4:
        n *= 2
    def bucket(k: Any) -> int:
        h = hash_code(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (n - 1)
    order = {k: i for i, k in enumerate(keys)}
    return sorted(keys, key=lambda k: (bucket(k), order[k]))


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode()."""
    return (31 * (31 + tp[1]) + java_string_hash(tp[0])) & 0xFFFFFFFF


def java_string_hash_order(keys: list[str], initial_capacity: int = 16) -> list[str]:
    """The iteration order of a java.util.HashMap<String, ?> filled with ``keys`` in order.

    Kafka's admin ``Config`` keeps entries in a HashMap, so kafka-topics.sh prints a topic's
    ``Configs:`` in hash order (and its topics in the order of a HashMap sized for them); to
    print the same lines we replay it: table size ``initial_capacity`` (rounded up to a power
    of two) doubling
    when size exceeds 0.75 of it, bucket = (h ^ (h >>> 16)) & (size - 1), insertion order
    within a bucket (a resize keeps the relative order of entries that share a new bucket).
    """
    return java_hash_order(keys, java_string_hash, initial_capacity)
