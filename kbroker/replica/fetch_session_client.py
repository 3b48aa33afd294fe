"""The client side of KIP-227 fetch sessions, for kbroker's replica fetcher (Kafka's
FetchSessionHandler, clients/src/main/java/org/apache/kafka/clients/FetchSessionHandler.java).

One handler per fetcher connection.  The first request is full with epoch 0 (the leader
makes a session and answers its id; id 0 = no session, and every request stays full).
Then each request is incremental: it names only the partitions added or whose fetch
parameters changed since the last request (fetch offset, log start offset, current leader
epoch, last fetched epoch, max bytes), and forgets those no longer fetched; the answer
names only partitions with something new.  A session error (FETCH_SESSION_ID_NOT_FOUND,
INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR) or a failed request starts over
with a full request: (id, 0) closes the old session and asks for a new one, as
FetchSessionHandler's nextCloseExistingAttemptNew; after NOT_FOUND the id is dropped.
"""

from __future__ import annotations

from typing import Any

from kbroker.replica.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from wire.error_codes import ErrorCode

TopicPartition = tuple[str, int]


def _params(fp: Any) -> tuple[int, int, int, int, int]:
    return (fp.fetch_offset, fp.log_start_offset, fp.current_leader_epoch, fp.last_fetched_epoch,
            fp.partition_max_bytes)


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH   # the epoch the next request carries (0: full)
        # what the leader's session holds (as of the last answered request): tp -> params
        self._session: dict[TopicPartition, tuple[int, int, int, int, int]] = {}
        self.incremental_requests = 0   # for tests and logs

    def build(self, wanted: dict[TopicPartition, Any]) -> tuple[int, int, dict[TopicPartition, Any],
                                                                  list[TopicPartition]]:
        """(session_id, epoch, partitions to name, partitions to forget) for a request that
        fetches ``wanted`` (tp -> FetchRequest.FetchPartition)."""
        if self.session_id == INVALID_SESSION_ID or self.epoch == INITIAL_EPOCH:
            return self.session_id, INITIAL_EPOCH, wanted, []
        session = self._session
        named = {tp: fp for tp, fp in wanted.items() if session.get(tp) != _params(fp)}
        forgotten = [tp for tp in session if tp not in wanted]
        return self.session_id, self.epoch, named, forgotten

    def answered(self, wanted: dict[TopicPartition, Any], full: bool, error_code: int, session_id: int) -> bool:
        """Note the answer to a request built from ``wanted``; False on a session error
        (the caller backs off; the next request is full)."""
        if error_code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                          ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR):
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.reset()
            return False
        if error_code != ErrorCode.NONE:
            self.reset()
            return False
        if full:
            self.session_id = session_id
            self.epoch = next_epoch(INITIAL_EPOCH) if session_id != INVALID_SESSION_ID else INITIAL_EPOCH
        else:
            self.incremental_requests += 1
            self.epoch = next_epoch(self.epoch)
        self._session = {tp: _params(fp) for tp, fp in wanted.items()}
        return True

    def reset(self) -> None:
        """A failed request (no answer, or an error): the next one is full, closing the
        session it names."""
        self.epoch = INITIAL_EPOCH
        self._session = {}
