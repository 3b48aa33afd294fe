"""Per-topic config overrides, persisted across restarts.

Kafka keeps topic configs in its metadata log; a single-node kbroker keeps them in one
JSON file in the first log dir, ``kbroker-topic-configs.json``:
``{"topic": {"retention.ms": "1000", ...}, ...}`` (only overrides; defaults come from
the broker config).  Written to a temp file, fsynced and renamed, so a crash leaves the
old or the new file, never half of one.  A change applies in memory at once; the file is
written by its own writer thread (json_file.py), and ``durable()`` is the future a request
handler awaits before answering.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from dataclasses import replace

from kbroker.configs.json_file import JsonFileWriter, read_json
from log.config import LogConfig

FILE_NAME = "kbroker-topic-configs.json"


class TopicConfigStore:
    def __init__(self, log_dir: str, defaults: LogConfig):
        self.path = os.path.join(log_dir, FILE_NAME)
        self.defaults = defaults
        data = read_json(self.path, {})
        self.overrides: dict[str, dict[str, str]] = {
            t: {k: str(v) for k, v in c.items()} for t, c in data.items()}
        self._writer = JsonFileWriter(self.path)

    def overrides_of(self, topic: str) -> dict[str, str]:
        return dict(self.overrides.get(topic, {}))

    def config_for(self, topic: str) -> LogConfig:
        over = self.overrides.get(topic)
        if not over:
            return self.defaults
        return LogConfig.from_properties(over, base=replace(self.defaults, overrides=()))

    @staticmethod
    def validate(configs: dict[str, str], defaults: LogConfig) -> LogConfig:
        """The LogConfig these overrides give; KeyError (unknown name) or ValueError."""
        return LogConfig.from_properties(configs, base=replace(defaults, overrides=()))

    def set(self, topic: str, configs: dict[str, str]) -> Future[None]:
        """Replace ``topic``'s overrides now; the future is done once the file holds them."""
        if configs:
            self.overrides[topic] = dict(configs)
        else:
            self.overrides.pop(topic, None)
        return self._writer.write(self.overrides)

    def remove(self, topic: str) -> Future[None]:
        if self.overrides.pop(topic, None) is not None:
            return self._writer.write(self.overrides)
        return self._writer.durable()

    def durable(self) -> Future[None]:
        """Done once every change made so far is in the file."""
        return self._writer.durable()

    def close(self) -> None:
        """Finish the queued writes (shutdown)."""
        self._writer.close()
