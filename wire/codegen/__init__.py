"""Generator for wire/_generated: Kafka's JSON message schemas -> committed Python.

Run as ``python -m wire.codegen --schemas ../shared/kafka-protocol`` (``make gen``);
``--check`` compares instead of writing (``make gen-check``).  Two files come out:

* ``schema_table.py``: facts only (API keys, names, field names and types, version
  ranges, nullable/tagged/flexible versions, defaults, map keys), as plain literals.
  The schemas' ``about`` texts are not copied.
* ``messages.py``: one slotted dataclass per message and per nested struct (nested
  structs are attributes of their message class: ``FetchResponse.PartitionData``).

This package reads files; it is a build tool and nothing imports it at run time.
"""
