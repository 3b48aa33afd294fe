"""Moved to tests/support/security_certs.py (issue 29).  This name stays only for bench/,
whose modules still import it; remove it once they import tests.support.security_certs."""

from tests.support.security_certs import make_certs

__all__ = ["make_certs"]
