"""Network partitions on one machine with Linux network namespaces (CLUSTER-NOTES §3 (a)).

``NetworkLab(["zk", "b1", "b2", "b3", "client"])`` creates, for this test only:

- a hub namespace ``kbt<pid>-hub`` holding a bridge ``br0`` (no address: it only switches);
- per node a namespace ``kbt<pid>-<node>`` with ``lo`` up and an ``eth0`` whose veth peer
  ``v<i>`` is enslaved to the hub's bridge; node i gets ``10.77.0.<10+i>/24``.

Everything is created with ``ip -n <ns>``/``ip netns exec`` inside those namespaces: the
root namespace gets no interface and no address, and every server a test runs listens
inside a node's namespace (start it with ``lab.exec_prefix(node)``).  A test process joins a
node's network with ``lab.run_in(node, fn)``: ``fn`` runs on a thread that entered the
namespace (setns(2)), so the sockets and the threads it creates (a KazooClient's, a
librdkafka client's) live there.

``cut(node, peers)`` adds DROP rules for the peers' addresses to a chain ``KBCUT`` hooked in
the node's INPUT and OUTPUT (iptables inside the node's namespace: both directions, SYNs
and established connections alike, so a cut is a silent partition, not a reset);
``heal(node)`` flushes the chain.  ``close()`` deletes every namespace (and with them the
veths and rules) and is registered with atexit, so a failed or interrupted test leaves
nothing behind; a lab also deletes namespaces left by a process that no longer exists.

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN), ``ip`` (iproute2) and ``iptables``
(``make deps-system``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

SUBNET = "10.77.0"
PREFIX = "kbt"
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def not_root() -> str | None:
    """Why this process may not create namespaces (a platform matter, not a missing tool)."""
    return "network namespaces need root" if os.geteuid() != 0 else None


def missing_tool() -> str | None:
    """The tool (``ip``, ``iptables``: `make deps-system` installs both) that is missing."""
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (make deps-system)"
    return None


def available() -> str | None:
    """Why network namespaces cannot be used here, or None when they can."""
    return not_root() or missing_tool()


def pytest_marks() -> list:
    """A network-partition test module's marks: a plain skip without root; a missing ``ip``
    or ``iptables`` skips too, but fails under CI=true (tests/support/requirements_helper.py)."""
    import pytest

    from tests.support.requirements_helper import needs_tool

    return [pytest.mark.skipif(not_root() is not None, reason=str(not_root())),
            needs_tool(missing_tool() is None, str(missing_tool()))]


def _run(*cmd: str) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def namespaces() -> list[str]:
    return [line.split()[0] for line in _run("ip", "netns", "list").splitlines() if line.strip()]


def remove_stale() -> None:
    """Delete namespaces of earlier labs whose process is gone (a killed test run)."""
    for ns in namespaces():
        m = re.fullmatch(rf"{PREFIX}(\d+)-.*", ns)
        if m and not os.path.exists(f"/proc/{m[1]}"):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=60)


class NetworkLab:
    def __init__(self, nodes: list[str]) -> None:
        self.prefix = f"{PREFIX}{os.getpid()}"
        self.nodes = list(nodes)
        self.hub = f"{self.prefix}-hub"
        self.addresses = {n: f"{SUBNET}.{10 + i}" for i, n in enumerate(self.nodes)}
        self._created: list[str] = []
        self._closed = False

    def ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def address(self, node: str) -> str:
        return self.addresses[node]

    def start(self) -> NetworkLab:
        remove_stale()
        atexit.register(self.close)
        try:
            self._add_ns(self.hub)
            _run("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.hub, "link", "set", "br0", "up")
            for i, node in enumerate(self.nodes):
                ns = self.ns(node)
                self._add_ns(ns)
                _run("ip", "-n", self.hub, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0",
                     "netns", ns)
                _run("ip", "-n", self.hub, "link", "set", f"v{i}", "master", "br0")
                _run("ip", "-n", self.hub, "link", "set", f"v{i}", "up")
                _run("ip", "-n", ns, "addr", "add", f"{self.addresses[node]}/24", "dev", "eth0")
                _run("ip", "-n", ns, "link", "set", "eth0", "up")
                _run("ip", "-n", ns, "link", "set", "lo", "up")
                self._iptables(node, "-N", "KBCUT")
                self._iptables(node, "-I", "INPUT", "-j", "KBCUT")
                self._iptables(node, "-I", "OUTPUT", "-j", "KBCUT")
        except BaseException:
            self.close()
            raise
        return self

    def _add_ns(self, ns: str) -> None:
        _run("ip", "netns", "add", ns)
        self._created.append(ns)

    def _iptables(self, node: str, *args: str) -> None:
        _run("ip", "netns", "exec", self.ns(node), "iptables", "-w", "10", *args)

    def exec_prefix(self, node: str) -> list[str]:
        """Prepend to a command to run it inside ``node``'s namespace."""
        return ["ip", "netns", "exec", self.ns(node)]

    def cut(self, node: str, peers: list[str]) -> None:
        """Drop everything between ``node`` and each of ``peers`` (both directions)."""
        for peer in peers:
            addr = self.addresses[peer]
            self._iptables(node, "-A", "KBCUT", "-s", addr, "-j", "DROP")
            self._iptables(node, "-A", "KBCUT", "-d", addr, "-j", "DROP")

    def heal(self, node: str) -> None:
        self._iptables(node, "-F", "KBCUT")

    def rules(self, node: str) -> str:
        return _run("ip", "netns", "exec", self.ns(node), "iptables", "-w", "10", "-S", "KBCUT")

    def run_in(self, node: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` on a thread inside ``node``'s namespace; its result (or exception)."""
        result: dict[str, object] = {}

        def target() -> None:
            try:
                fd = os.open(f"/run/netns/{self.ns(node)}", os.O_RDONLY)
                try:
                    if _libc.setns(fd, _CLONE_NEWNET) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, f"setns into {self.ns(node)}: {os.strerror(err)}")
                finally:
                    os.close(fd)
                result["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
                result["error"] = e

        t = threading.Thread(target=target, name=f"netns-{node}", daemon=True)
        t.start()
        t.join()
        if "error" in result:
            raise result["error"]  # type: ignore[misc]
        return result["value"]  # type: ignore[return-value]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for ns in reversed(self._created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=60)
        self._created.clear()
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    def __enter__(self) -> NetworkLab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
