"""TLS for SSL and SASL_SSL listeners: the server SSLContext from Kafka's ssl.* settings, and
the principal of a client certificate (Kafka's DefaultSslEngineFactory, SslPrincipalMapper).

Keystore (this broker's key and certificate chain):

* ``ssl.keystore.type=PEM``: ``ssl.keystore.location`` names a PEM file holding the private key
  (encrypted with ``ssl.key.password``, or not) and the chain; or the PEM text itself is given in
  ``ssl.keystore.key`` and ``ssl.keystore.certificate.chain``.
* ``ssl.keystore.type=PKCS12``: ``ssl.keystore.location`` with ``ssl.keystore.password``; it is
  converted to PEM with the ``openssl`` command at start-up (password passed in the
  environment, the PEM in a private temporary file removed once loaded).
* JKS (Kafka's default type) cannot be read without Java: start-up fails and says so.

Truststore (the CAs client certificates must chain to): PEM file or ``ssl.truststore.certificates``
text; PKCS12 file (certificates only).  ``ssl.client.auth``: none (no certificate asked),
requested (asked, optional), required (a handshake without one fails).
``ssl.enabled.protocols`` bounds the TLS versions (TLSv1.2, TLSv1.3); ``ssl.cipher.suites``
(OpenSSL names) limits the TLS 1.2 suites.

Principal: the certificate's subject as Java's X500Principal.getName() writes it (RFC 2253: the
RDNs from the most specific, ``CN=client,OU=eng,O=acme,C=US``), mapped by
``ssl.principal.mapping.rules`` (``DEFAULT`` keeps it whole; ``RULE:<regex>/<replacement>/[LU]``
rewrites a name the regex matches whole, ``$1`` style groups, L/U lower/upper-cases; no rule
matching fails the connection as Kafka does).  No certificate: ``User:ANONYMOUS``.
"""

from __future__ import annotations

import logging
import os
import re
import ssl
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbroker.configs.config import ConfigError

log = logging.getLogger("kbroker.tls")

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
              "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}


def server_context(setting: Callable[[str], Any]) -> ssl.SSLContext:
    """The SSLContext of one listener; ``setting(key)`` reads its (listener-prefixed) config."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(ctx, setting("ssl.enabled.protocols"))
    suites = setting("ssl.cipher.suites")
    if suites:
        try:
            ctx.set_ciphers(":".join(suites))
        except ssl.SSLError as e:
            raise ConfigError(f"Invalid value {','.join(suites)} for configuration ssl.cipher.suites: {e}") from None
    _load_keystore(ctx, setting)
    _load_truststore(ctx, setting)
    auth = setting("ssl.client.auth")
    ctx.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL}.get(auth, ssl.CERT_NONE)
    return ctx


def client_context(setting: Callable[[str], Any]) -> ssl.SSLContext:
    """The SSLContext this broker uses as a client of another broker's listener (inter-broker
    traffic): the listener's truststore, its keystore when it has one (for mTLS), host name
    checked when ``ssl.endpoint.identification.algorithm`` is https (Kafka's default)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(ctx, setting("ssl.enabled.protocols"))
    ctx.check_hostname = (setting("ssl.endpoint.identification.algorithm") or "").lower() == "https"
    _load_truststore(ctx, setting)
    if setting("ssl.keystore.location") or setting("ssl.keystore.key"):
        _load_keystore(ctx, setting)
    return ctx


def _protocols(ctx: ssl.SSLContext, enabled: list[str]) -> None:
    versions = []
    for name in enabled:
        if name not in _PROTOCOLS:
            raise ConfigError(f"Invalid value {','.join(enabled)} for configuration ssl.enabled.protocols: "
                              f"unknown protocol {name}")
        versions.append(_PROTOCOLS[name])
    if not versions:
        raise ConfigError("Invalid value for configuration ssl.enabled.protocols: no protocol")
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)


def _private_pem_file(text: str) -> str:
    fd, path = tempfile.mkstemp(prefix="kbroker-key-", suffix=".pem")   # mode 0600
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def _pkcs12_to_pem(path: str, password: str | None, what: str, certs_only: bool) -> str:
    env = {**os.environ, "KBROKER_P12_PASS": password or ""}
    base = ["openssl", "pkcs12", "-in", path, "-passin", "env:KBROKER_P12_PASS"]
    base += ["-nokeys"] if certs_only else ["-nodes"]
    last = ""
    for extra in ([], ["-legacy"]):
        try:
            done = subprocess.run(base + extra, env=env, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ConfigError(f"cannot read the PKCS12 {what} {path}: {e}") from None
        if done.returncode == 0:
            return done.stdout
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "openssl failed"
    raise ConfigError(f"cannot read the PKCS12 {what} {path} (wrong password?): {last}")


def _load_keystore(ctx: ssl.SSLContext, setting: Callable[[str], Any]) -> None:
    kind = (setting("ssl.keystore.type") or "JKS").upper()
    location = setting("ssl.keystore.location")
    key_password = setting("ssl.key.password")
    chain, key = setting("ssl.keystore.certificate.chain"), setting("ssl.keystore.key")
    try:
        if kind == "PEM" and chain and key:
            path = _private_pem_file(key.strip() + "\n" + chain.strip() + "\n")
            try:
                ctx.load_cert_chain(path, password=key_password)
            finally:
                os.unlink(path)
        elif kind == "PEM" and location:
            ctx.load_cert_chain(location, password=key_password)
        elif kind == "PKCS12" and location:
            path = _private_pem_file(_pkcs12_to_pem(location, setting("ssl.keystore.password"), "keystore",
                                                    certs_only=False))
            try:
                ctx.load_cert_chain(path)
            finally:
                os.unlink(path)
        elif kind == "JKS" and location:
            raise ConfigError(f"ssl.keystore.location {location}: JKS keystores cannot be read by kbroker; "
                              "use ssl.keystore.type=PEM or PKCS12")
        else:
            raise ConfigError("an SSL listener needs a keystore: ssl.keystore.location (PEM or PKCS12) or "
                              "ssl.keystore.certificate.chain with ssl.keystore.key (PEM)")
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"cannot load the SSL keystore ({kind} {location or 'inline'}): {e}") from None


def _load_truststore(ctx: ssl.SSLContext, setting: Callable[[str], Any]) -> None:
    kind = (setting("ssl.truststore.type") or "JKS").upper()
    location = setting("ssl.truststore.location")
    inline = setting("ssl.truststore.certificates")
    try:
        if inline:
            ctx.load_verify_locations(cadata=inline)
        elif location and kind == "PKCS12":
            ctx.load_verify_locations(cadata=_pkcs12_to_pem(location, setting("ssl.truststore.password"),
                                                            "truststore", certs_only=True))
        elif location and kind == "JKS":
            raise ConfigError(f"ssl.truststore.location {location}: JKS truststores cannot be read by "
                              "kbroker; use ssl.truststore.type=PEM or PKCS12")
        elif location:
            ctx.load_verify_locations(cafile=location)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"cannot load the SSL truststore ({kind} {location or 'inline'}): {e}") from None


# ---------------------------------------------------------------- principals
_SHORT = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O",
          "localityName": "L", "stateOrProvinceName": "ST", "countryName": "C",
          "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}
# Java prints attributes without an RFC 2253 keyword by OID (its value as #<hex DER> there;
# kbroker writes the text value, a known difference)
_OIDS = {"emailAddress": "1.2.840.113549.1.9.1", "serialNumber": "2.5.4.5", "title": "2.5.4.12",
         "givenName": "2.5.4.42", "surname": "2.5.4.4"}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def rfc2253_name(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """``ssl.getpeercert()['subject']`` (RDNs in certificate order) as X500Principal.getName()."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_SHORT.get(k) or _OIDS.get(k) or k}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None   # None: DEFAULT
    replacement: str
    case: str


_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:[^/\\]|\\.)*)/((?:[^/\\]|\\.)*)/([LU]?))\s*(?:,|$)")


class PrincipalMapper:
    """ssl.principal.mapping.rules (Kafka's SslPrincipalMapper)."""

    def __init__(self, rules: list[_Rule]) -> None:
        self.rules = rules

    @classmethod
    def parse(cls, text: str | None) -> PrincipalMapper:
        text = (text or "DEFAULT").strip()
        rules, pos = [], 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ConfigError(f"Invalid value {text} for configuration ssl.principal.mapping.rules: "
                                  f"invalid rule: {text[pos:]}")
            if m.group(1):
                rules.append(_Rule(None, "", ""))
            else:
                replacement = re.sub(r"\$(\d+)", r"\\g<\1>", m.group(3))
                rules.append(_Rule(re.compile(m.group(2)), replacement, m.group(4)))
            pos = m.end()
        return cls(rules or [_Rule(None, "", "")])

    def name(self, dn: str) -> str:
        for rule in self.rules:
            if rule.pattern is None:
                return dn
            m = rule.pattern.fullmatch(dn)
            if m is None:
                continue
            out = m.expand(rule.replacement)
            return out.lower() if rule.case == "L" else out.upper() if rule.case == "U" else out
        raise ValueError(f"No rules apply to {dn}, rules {[r.pattern for r in self.rules]}")


def peer_principal(transport: Any, mapper: PrincipalMapper | None) -> str:
    """``User:<mapped subject>`` of the client's certificate, ``User:ANONYMOUS`` without one."""
    sslobj = transport.get_extra_info("ssl_object")
    cert = sslobj.getpeercert() if sslobj is not None else None
    if not cert or "subject" not in cert:
        return "User:ANONYMOUS"
    dn = rfc2253_name(cert["subject"])
    return "User:" + (mapper.name(dn) if mapper is not None else dn)
