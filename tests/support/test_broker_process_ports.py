"""The test brokers' ports (tests/support/broker_process.py, kbroker/testing/free_ports.py): a port
taken by someone else between its choice and the broker's bind does not fail the start
(seen once in CI as "broker did not start"); the broker starts again on a new port, or,
on a restart, on its own port once it is free again."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kbroker.testing.free_ports import bind_conflict, free_port
from tests.compat.test_bad_input import Raw, metadata_request
from tests.support.broker_process import BrokerProcess
from wire.messages import MetadataResponse

DEADLINE_S = 60.0


def occupy(port: int) -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def answers_metadata(port: int) -> bool:
    raw = Raw(port)
    try:
        raw.request(metadata_request(), 12, 5)
        corr, resp = raw.response(MetadataResponse, 12, DEADLINE_S)
        return corr == 5 and resp.brokers[0].port == port
    finally:
        raw.close()


def test_free_ports_are_outside_the_ephemeral_range_and_never_handed_out_twice():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = (int(x) for x in f.read().split())
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(not low <= p <= high for p in ports)


def test_the_broker_saying_address_already_in_use_names_the_port_taken(tmp_path):
    b = BrokerProcess(tmp_path / "data", port=free_port())
    with occupy(b.port):
        with pytest.raises(RuntimeError, match="broker did not start"):
            b.start()   # a port the caller chose is not changed: the bind failure is reported
    assert bind_conflict(b.log_text()) == b.port


def test_a_chosen_port_taken_before_the_broker_binds_it_is_replaced_and_the_broker_starts(tmp_path):
    b = BrokerProcess(tmp_path / "data")
    taken = b.port
    with occupy(taken):
        b.start()
    try:
        assert b.port != taken
        assert b.overrides["listeners"] == f"PLAINTEXT://127.0.0.1:{b.port}"
        assert f"port {taken} was taken before the broker bound it; starting again on {b.port}" in b.log_text()
        assert answers_metadata(b.port)
    finally:
        b.stop()


def test_a_second_listeners_port_kept_on_the_object_is_replaced_when_taken(tmp_path):
    b = BrokerProcess(tmp_path / "data")
    b.other_port = taken = free_port()   # type: ignore[attr-defined]  (as tests keep them)
    b.overrides.update({"listeners": f"PLAINTEXT://127.0.0.1:{b.port},OTHER://127.0.0.1:{taken}",
                        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"})
    with occupy(taken):
        b.start()
    try:
        new = b.other_port   # type: ignore[attr-defined]
        assert new != taken
        assert b.overrides["listeners"] == f"PLAINTEXT://127.0.0.1:{b.port},OTHER://127.0.0.1:{new}"
        assert answers_metadata(b.port)
        socket.create_connection(("127.0.0.1", new), timeout=DEADLINE_S).close()   # OTHER listens there
    finally:
        b.stop()


def test_a_restart_waits_for_its_own_port_when_someone_holds_it(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    port = b.port
    b.stop()
    holder = occupy(port)
    # let the restart's first bind fail, then free the port: the broker comes back on it
    released = threading.Event()

    def release_after_a_failed_bind() -> None:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not any("address already in use" in line for line in b.output):
            time.sleep(0.05)
        holder.close()
        released.set()

    threading.Thread(target=release_after_a_failed_bind, daemon=True).start()
    try:
        b.start()   # what restart() does after its own wait, with the port still held
        assert released.wait(DEADLINE_S)
        assert b.port == port and answers_metadata(port)
    finally:
        holder.close()
        b.stop()
