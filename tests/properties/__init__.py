"""The long property and exhaustive suites, mirroring the source: every message at every
version round-tripped and cross-checked with kafka-python, the request decoder fuzzed
(``wire/``), a compaction crashed at every step and byte (``log/``).  Minutes, not seconds:
kept out of ``tests/unit`` so that stays the quick run."""
