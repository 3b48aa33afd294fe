"""What one event decides: the fenced writes and the request batch, built as it goes.

Kafka's controller writes ZooKeeper synchronously inside an event and then sends; here a
:class:`Step` records each write (wrapped by ``fenced``) and updates the context as if it
succeeded (see ``context``), and the batch collects the requests until :meth:`Step.flush`.  ``Step.output()`` is the
event's :class:`ControllerOutput`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cluster import znodes
from cluster.controller.commands import ControllerOutput, ZkDeleteTree, ZkWrite
from cluster.controller.config import ControllerConfig
from cluster.controller.context import (
    ControllerContext,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)
from cluster.controller.fencing import fenced
from cluster.controller.request_batch import RequestBatch
from cluster.coordination import CoordinationError, Create, NodeExistsError, Op, SetData
from cluster.election import LeaderAndIsr

__all__ = ["Step"]


def encode_state(lic: LeaderIsrAndControllerEpoch) -> bytes:
    lai = lic.leader_and_isr
    return znodes.encode_partition_state(znodes.PartitionState(
        leader=lai.leader, leader_epoch=lai.leader_epoch, isr=lai.isr,
        controller_epoch=lic.controller_epoch, leader_recovery_state=lai.leader_recovery_state,
    ))


class Step:
    def __init__(self, ctx: ControllerContext, config: ControllerConfig,
                 next_write_id: Callable[[], int]) -> None:
        self.ctx = ctx
        self.config = config
        self.batch = RequestBatch(ctx, config.broker_id, config.inter_broker_listener)
        self.out = ControllerOutput()
        self._next_write_id = next_write_id
        self._partition_dirs: set[str] = set()

    # -- writes --------------------------------------------------------------------------

    def write(self, ops: Sequence[Op], tolerated: tuple[type[CoordinationError], ...] = ()) -> None:
        self.out.writes.append(
            ZkWrite(self._next_write_id(), tuple(fenced(self.ctx.epoch_zk_version, ops)), tolerated))

    def delete_tree(self, path: str) -> None:
        self.out.writes.append(ZkDeleteTree(self._next_write_id(), self.ctx.epoch_zk_version, path))

    def create_partition_state(self, tp: TopicPartition, lai: LeaderAndIsr) -> LeaderIsrAndControllerEpoch:
        """``createTopicPartitionStatesRaw``: the partition's znodes (if absent), then its state."""
        topic, partition = tp
        if topic not in self._partition_dirs:
            self._partition_dirs.add(topic)
            self.write([Create(znodes.partitions_path(topic))], (NodeExistsError,))
        self.write([Create(f"{znodes.partitions_path(topic)}/{partition}")], (NodeExistsError,))
        lic = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, lai.isr, lai.leader_recovery_state, 0),
            self.ctx.epoch)
        self.write([Create(znodes.partition_state_path(topic, partition), encode_state(lic))])
        self.ctx.leadership[tp] = lic
        return lic

    def update_partition_state(self, tp: TopicPartition, lai: LeaderAndIsr) -> LeaderIsrAndControllerEpoch:
        """``updateLeaderAndIsr``: a conditional set on the version we hold; the version is
        the new partition epoch."""
        expected = self.ctx.leadership[tp].leader_and_isr.partition_epoch
        lic = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, lai.isr, lai.leader_recovery_state,
                         expected + 1),
            self.ctx.epoch)
        self.write([SetData(znodes.partition_state_path(*tp), encode_state(lic), expected)])
        self.ctx.leadership[tp] = lic
        return lic

    # -- result --------------------------------------------------------------------------

    def flush(self) -> None:
        """``sendRequestsToBrokers``: what the batch holds becomes requests, in Kafka's order.

        Called where Kafka sends (the end of each state-machine call), so a broker sees the
        same sequence of requests - e.g. a bounced broker is not sent the StopReplica its
        failure produced, because it was not live when that batch went out.
        """
        self.out.requests.extend(self.batch.build())

    def output(self) -> ControllerOutput:
        self.flush()
        return self.out
