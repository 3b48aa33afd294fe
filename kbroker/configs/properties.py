"""Java ``.properties`` files, the format of Kafka's server.properties, read with the
``javaproperties`` library (java.util.Properties.load's rules: ``#``/``!`` comments, backslash
line continuations, ``=``/``:``/whitespace separators, ``\\t \\n \\r \\f \\uXXXX`` escapes).

Where Java refuses a file, so does this: a malformed ``\\uXXXX`` escape raises
:class:`MalformedPropertiesError`, as Java's ``IllegalArgumentException: Malformed \\uxxxx
encoding`` stops Kafka's start.
"""

from __future__ import annotations

import javaproperties

__all__ = ["MalformedPropertiesError", "parse_properties"]

# a ValueError whose message names the bad escape ("Invalid \\u escape sequence: \\u00zz")
MalformedPropertiesError = javaproperties.InvalidUEscapeError


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of ``text`` (a later duplicate key wins, as in Java)."""
    return javaproperties.loads(text)
