"""The codec's own exceptions.  Nothing in wire/ lets IndexError or struct.error escape."""


class WireError(Exception):
    """Base class of every error raised by wire/."""


class DecodeError(WireError):
    """Input bytes are malformed or truncated (or a length field lies about what follows)."""


class EncodeError(WireError):
    """A message cannot be written in the requested version (e.g. null where not nullable)."""


class UnsupportedVersionError(WireError):
    """The (api, version) pair is outside the schema's validVersions."""


class CorruptRecordError(DecodeError):
    """A record batch failed validation: bad CRC, length, magic or record framing."""
