"""The generated message classes (wire/_generated/messages.py), under a stable name.

``from wire.messages import FetchRequest``; nested structs are attributes of their
message class: ``FetchResponse.PartitionData``.
"""

from wire._generated.messages import *  # noqa: F403
from wire._generated.messages import ALL_MESSAGES, ZERO_UUID  # noqa: F401
