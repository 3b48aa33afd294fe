"""The soak's nemesis: one fault at a time, each followed by the wait for the cluster to be
whole again (every broker registered, every partition, internal ones included, with a full
ISR), so that the next fault meets a healthy cluster and every fault is a fault the cluster
is meant to survive (never two brokers out of three).

A one-broker fault hits, in turn, the broker coordinating the consumer group, the one
coordinating a transactional producer, and one at random.

- ``kill9``: SIGKILL a broker, wait for its session to end and its partitions to get other
  leaders, restart it;
- ``pause``: SIGSTOP a broker past its ZooKeeper session (a zombie leader: its partitions get
  other leaders while it sleeps), then SIGCONT;
- ``partition``: cut a broker off from ZooKeeper and the other brokers (tests/support/netns.py;
  clients still reach it, so it is a zombie they keep talking to), wait for the failover,
  heal; needs the network lab;
- ``zk_restart``: SIGTERM ZooKeeper and start it again (its data dir kept);
- ``roll``: SIGTERM each broker in turn (a controlled shutdown), restart it and wait for
  full health before the next.

Every wait is a condition with a generous deadline (a slow machine makes a fault take
longer, never fail); a deadline passed is recorded on the fault, and the nemesis then heals
everything it can before going on.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.soak.environment import OFFSETS_TOPIC, TXN_STATE_TOPIC, SoakCluster
from tests.support import faults

KINDS = ("kill9", "pause", "partition", "zk_restart", "roll")
STEP_S = 120.0      # one wait within a fault (a session ending, a failover, a restart)
HEALTHY_S = 240.0   # the cluster whole again after a fault


@dataclass
class Fault:
    kind: str
    broker: int | None
    started_ms: int
    seconds: float = 0.0
    error: str | None = None          # a wait that timed out, or a fault that could not be made
    exit_codes: list[int] = field(default_factory=list)   # roll: each SIGTERMed broker's status


class Nemesis:
    def __init__(self, sc: SoakCluster, rng: random.Random, log: Callable[[str], None], *,
                 group: str, txn_ids: list[str]) -> None:
        self.sc = sc
        self.rng = rng
        self.log = log
        self.group, self.txn_ids = group, list(txn_ids)
        self.done: list[Fault] = []

    def kinds(self) -> tuple[str, ...]:
        """The faults this environment can make (no partition without the network lab)."""
        return tuple(k for k in KINDS if k != "partition" or self.sc.lab is not None)

    def victim(self) -> int:
        """Whom a one-broker fault hits, in turn: the group's coordinator, a transactional
        producer's coordinator (those failovers are what commits and transactions must
        survive), or a broker at random."""
        turn = sum(1 for f in self.done if f.broker is not None) % 3
        choice = -1
        try:
            if turn == 0:
                choice = self.sc.coordinator(OFFSETS_TOPIC, self.group)
            elif turn == 1:
                choice = self.sc.coordinator(TXN_STATE_TOPIC, self.rng.choice(self.txn_ids))
        except Exception:  # noqa: BLE001 - ZooKeeper unreachable for a moment: pick at random
            choice = -1
        return choice if choice in self.sc.c.brokers else self.rng.choice(sorted(self.sc.c.brokers))

    def run(self, kind: str) -> Fault:
        victim = None if kind in ("zk_restart", "roll") else self.victim()
        fault = Fault(kind, victim, time.time_ns() // 1_000_000)
        started = time.monotonic()
        self.log(f"fault {len(self.done) + 1}: {kind}" + (f" broker {victim}" if victim else ""))
        try:
            getattr(self, f"_{kind}")(fault)
            self.sc.wait_healthy(HEALTHY_S)
        except AssertionError as e:
            fault.error = str(e)
            self.log(f"fault {kind}: {e}; healing everything")
            self.heal_all()
        fault.seconds = time.monotonic() - started
        self.done.append(fault)
        self.log(f"fault {kind} done in {fault.seconds:.1f} s" + (f" (ERROR {fault.error[:200]})" if fault.error else ""))
        return fault

    def heal_all(self) -> None:
        """Undo whatever may be left: thaw, heal the cuts, start what is stopped; then wait
        for health (an AssertionError if even that does not come)."""
        for broker_id, b in self.sc.c.brokers.items():
            faults.resume(b)
            if self.sc.lab is not None:
                with contextlib.suppress(Exception):
                    self.sc.lab.heal(f"b{broker_id}")
        zk = self.sc.zk
        if zk is not None and (zk.proc is None or zk.proc.poll() is not None):
            zk.start()
        for b in self.sc.c.brokers.values():
            if not b.alive():
                faults.restart(b)
        self.sc.wait_healthy(HEALTHY_S)

    # -- the faults ------------------------------------------------------------------------

    def _kill9(self, fault: Fault) -> None:
        assert fault.broker is not None
        b = self.sc.c.brokers[fault.broker]
        led = self.sc.led_by(fault.broker)
        faults.kill9(b)
        try:
            self.sc.wait_unregistered(fault.broker, STEP_S)
            self.sc.wait_leadership_moved(fault.broker, led, STEP_S)
        finally:
            faults.restart(b)

    def _pause(self, fault: Fault) -> None:
        assert fault.broker is not None
        b = self.sc.c.brokers[fault.broker]
        led = self.sc.led_by(fault.broker)
        with faults.Paused(b):
            # frozen beyond its session: ZooKeeper ends it, the controller moves its partitions
            self.sc.wait_unregistered(fault.broker, STEP_S)
            self.sc.wait_leadership_moved(fault.broker, led, STEP_S)
        self.sc.wait_registered({fault.broker}, STEP_S)

    def _partition(self, fault: Fault) -> None:
        assert fault.broker is not None and self.sc.lab is not None
        node = f"b{fault.broker}"
        led = self.sc.led_by(fault.broker)
        self.sc.lab.cut(node, ["zk", *[f"b{o}" for o in self.sc.c.brokers if o != fault.broker]])
        try:
            self.sc.wait_unregistered(fault.broker, STEP_S)
            self.sc.wait_leadership_moved(fault.broker, led, STEP_S)
        finally:
            self.sc.lab.heal(node)
        self.sc.wait_registered({fault.broker}, STEP_S)

    def _zk_restart(self, fault: Fault) -> None:
        assert self.sc.zk is not None
        self.sc.zk.restart()
        self.sc.wait_registered(set(self.sc.c.brokers), STEP_S)

    def _roll(self, fault: Fault) -> None:
        for broker_id, b in self.sc.c.brokers.items():
            fault.exit_codes.append(faults.terminate(b))
            if fault.exit_codes[-1] != 0:
                self.log(f"roll: broker {broker_id} exited {fault.exit_codes[-1]} on SIGTERM")
            faults.restart(b)
            self.sc.wait_healthy(HEALTHY_S)


def counts(done: list[Fault]) -> dict[str, int]:
    out = {k: 0 for k in KINDS}
    for f in done:
        out[f.kind] += 1
    return out
