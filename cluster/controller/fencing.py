"""The controller's ZooKeeper writes and their fencing (first part of ``KafkaController``).

Election (``KafkaZkClient.registerControllerAndIncrementControllerEpoch``): one multi that
creates the ephemeral ``/controller`` and sets ``/controller_epoch`` to epoch + 1 guarded by
the epoch znode's version; NodeExists or BadVersion means another broker won.  The new
epoch znode version is the controller's fencing token: every later controller write is a
multi that starts with ``check(/controller_epoch, token)``
(``wrapRequestWithControllerEpochCheck``), so a deposed controller - whose token is stale
once another broker has bumped the epoch - changes nothing.

``cluster.controller.kafka_controller`` wraps every write it returns with :func:`fenced`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cluster import znodes
from cluster.coordination import Check, Create, Op, SetData

__all__ = ["ControllerElection", "election_ops", "fenced"]


@dataclass(frozen=True, slots=True)
class ControllerElection:
    """What a broker read before trying to become controller."""

    epoch: int  # the current /controller_epoch value (0 if absent)
    epoch_zk_version: int  # its znode version; -1 if the znode does not exist yet

    @property
    def new_epoch(self) -> int:
        return self.epoch + 1

    @property
    def new_epoch_zk_version(self) -> int:
        """The fencing token after a successful election (0 when the epoch znode is created)."""
        return self.epoch_zk_version + 1


def election_ops(broker_id: int, timestamp_ms: int, seen: ControllerElection) -> list[Op]:
    """The multi that makes ``broker_id`` controller with epoch ``seen.new_epoch``."""
    controller = Create(znodes.CONTROLLER_PATH, znodes.encode_controller(broker_id, timestamp_ms),
                        ephemeral=True)
    epoch = znodes.encode_controller_epoch(seen.new_epoch)
    if seen.epoch_zk_version < 0:
        # First controller ever: create the epoch znode in the same transaction.
        return [controller, Create(znodes.CONTROLLER_EPOCH_PATH, epoch)]
    return [controller, SetData(znodes.CONTROLLER_EPOCH_PATH, epoch, seen.epoch_zk_version)]


def fenced(epoch_zk_version: int, ops: Sequence[Op]) -> list[Op]:
    """``ops`` as one multi that fails unless ``/controller_epoch`` is still at our version."""
    return [Check(znodes.CONTROLLER_EPOCH_PATH, epoch_zk_version), *ops]
