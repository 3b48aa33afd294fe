"""Generator for wire/_generated: Kafka's JSON message schemas -> committed Python.

Run as ``python -m wire.codegen`` (``make gen``); ``--check`` compares instead of writing
(``make gen-check``).  The input is in the repository: ``schemas/`` holds Kafka 4.4.0's
schema files unmodified, ``schemas-3.9/`` the ZooKeeper-era inter-broker APIs Kafka 4
removed (Kafka 3.9's files), and ``kept.py`` the old versions of other APIs Kafka 4 dropped
and kbroker still serves, each with the byte layout it always had.  Two files come out:

* ``schema_table.py``: facts only (API keys, names, field names and types, version
  ranges, nullable/tagged/flexible versions, defaults, map keys), as plain literals.
  The schemas' ``about`` texts are not copied.
* ``messages.py``: one slotted dataclass per message and per nested struct (nested
  structs are attributes of their message class: ``FetchResponse.PartitionData``).

This package reads files; it is a build tool and nothing imports it at run time.
"""
