"""The network-partition helper itself (tests/support/netns.py): nodes in their own
namespaces reach each other over the lab's bridge, a cut silently drops one node's traffic
with the peers named (an established connection stalls, a new one cannot be made) while
other peers still get through, a heal lets the stalled bytes through, and closing the lab
leaves no namespace and no interface in the root namespace."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.support import netns

pytestmark = [pytest.mark.timeout(300),
              *netns.pytest_marks()]

PORT = 7000
# An echo server: one thread per connection, echoing whatever arrives.
ECHO = """
import socket, sys, threading
def echo(c):
    while (data := c.recv(4096)):
        c.sendall(data)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen()
print("listening", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=echo, args=(c,), daemon=True).start()
"""


def root_links() -> list[str]:
    return sorted(line.split(":")[1].strip().split("@")[0]
                  for line in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.splitlines())


@pytest.fixture
def lab():
    before = root_links()
    lab = netns.NetworkLab(["a", "b", "c"]).start()
    server = subprocess.Popen([*lab.exec_prefix("b"), sys.executable, "-c", ECHO, lab.address("b"), str(PORT)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "listening"
        yield lab
    finally:
        server.kill()
        server.wait()
        lab.close()
    assert root_links() == before  # nothing was added to the root namespace, nothing is left
    assert not [ns for ns in netns.namespaces() if ns.startswith(lab.prefix)]


def connect(lab: netns.NetworkLab, node: str, timeout_s: float) -> socket.socket:
    return lab.run_in(node, lambda: socket.create_connection((lab.address("b"), PORT), timeout=timeout_s))


def echo_once(s: socket.socket, payload: bytes) -> bytes:
    s.sendall(payload)
    return s.recv(4096)


def test_nodes_reach_each_other_only_through_the_labs_namespaces(lab):
    assert lab.address("b") not in subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    with connect(lab, "a", 60) as s:
        assert echo_once(s, b"hello") == b"hello"
    ns_addrs = subprocess.run([*lab.exec_prefix("b"), "ip", "-o", "addr"], capture_output=True, text=True).stdout
    assert f"inet {lab.address('b')}/24" in ns_addrs


def test_a_cut_drops_traffic_with_the_named_peers_only_and_a_heal_restores_it(lab):
    established = connect(lab, "a", 60)
    established.settimeout(60)
    assert echo_once(established, b"before") == b"before"

    lab.cut("b", ["a"])
    assert f"-s {lab.address('a')}/32 -j DROP" in lab.rules("b")
    established.sendall(b"during")
    # Nothing can arrive while the cut holds: these waits can only end in a timeout.
    established.settimeout(3)
    with pytest.raises(TimeoutError):
        established.recv(4096)
    with pytest.raises(TimeoutError):
        connect(lab, "a", 3)
    with connect(lab, "c", 60) as other:  # c is not cut from b
        other.settimeout(60)
        assert echo_once(other, b"c-gets-through") == b"c-gets-through"

    lab.heal("b")
    assert lab.rules("b").strip() == "-N KBCUT"
    established.settimeout(60)  # TCP retransmits what the cut dropped
    assert established.recv(4096) == b"during"
    with connect(lab, "a", 60) as again:
        again.settimeout(60)
        assert echo_once(again, b"after") == b"after"
    established.close()


def test_namespaces_of_a_lab_whose_process_died_are_removed_by_the_next_lab():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = f"{netns.PREFIX}{dead}-x"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    assert stale in netns.namespaces()
    netns.remove_stale()
    assert stale not in netns.namespaces()
