"""Ports for test brokers that must be known before the broker starts (a listener list with
several ports, a cluster whose brokers are registered by port), and the broker's own word
that one of them was taken after all.

A port found free is free only until someone binds it; a broker process needs a second or
more to import and bind.  The usual trick (bind port 0, read the port, close) hands out a
port of the kernel's *ephemeral range* (``net.ipv4.ip_local_port_range``, 32768-60999 by
default), the very range every outgoing connection on the machine takes its source port
from, so a busy machine's clients can take it in that window.  ``free_port`` instead picks
at random below the ephemeral range (10000 up to its start), where the kernel never
assigns a port by itself: only another test picking the same random port at the same
moment can collide, and ``bind_conflict`` recognises that in the broker's output so the
caller can start again on a new port.

Test processes running side by side in one pytest-xdist run (``make test`` runs its workers
so) never pick the same port: worker ``gw<i>`` of ``n`` takes only ports ``p`` with
``p % n == i`` (``worker_slice``), so a port one worker chose, even one a stopped broker or
ZooKeeper gives up for a moment before restarting on it, is never another worker's choice.
The processes a worker starts inherit its environment, and so its slice.
"""

from __future__ import annotations

import os
import random
import re
import socket

_LOWEST = 10000                       # below: well-known services (ZooKeeper 2181, Kafka 9092, ...)
_DEFAULT_EPHEMERAL = (32768, 60999)   # Linux's default ip_local_port_range
_handed_out: set[int] = set()         # never the same port twice in one process
_random = random.SystemRandom()       # processes started at once do not share a seed

# kbroker's line when a listener cannot bind: "cannot start: [Errno 98] error while
# attempting to bind on address ('127.0.0.1', 40123): address already in use"
_KBROKER_BIND_FAILED = re.compile(r"bind on address \('[^']*', (\d+)\): address already in use", re.IGNORECASE)


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL


def worker_slice() -> tuple[int, int]:
    """``(index, count)``: this process takes ports ``p`` with ``p % count == index``; a
    pytest-xdist worker ``gw<index>`` of ``count`` (its environment says which), else (0, 1)."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit():
        index, n = int(worker[2:]), int(count)
        if 0 <= index < n:
            return index, n
    return 0, 1


def free_port(host: str = "127.0.0.1") -> int:
    """A port of ``host`` that nothing listens on now and that the kernel will not hand to
    an outgoing connection: chosen at random outside the ephemeral range, among this
    process's slice of the ports (``worker_slice``)."""
    low, high = _ephemeral_range()
    ranges = [r for r in ((_LOWEST, low), (high + 1, 65536)) if r[1] - r[0] >= 1000]
    index, count = worker_slice()
    for _ in range(200):
        if not ranges:
            break
        start, stop = _random.choice(ranges)
        # the first port of [start, stop) in this worker's slice, then every count-th one
        first = start + (index - start) % count
        port = _random.randrange(first, stop, count)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket() as s:   # no room outside the ephemeral range: the kernel's choice
        s.bind((host, 0))
        port = s.getsockname()[1]
    _handed_out.add(port)
    return port


def handed_out(port: int) -> bool:
    """Whether ``free_port`` of this process chose ``port`` (so a caller may choose another)."""
    return port in _handed_out


def bind_conflict(output: str) -> int | None:
    """The port a kbroker process could not bind because it was taken ("address already in
    use"), from its output; None when it says no such thing."""
    m = _KBROKER_BIND_FAILED.search(output)
    return int(m.group(1)) if m else None
