"""Test certificates made with the ``openssl`` command (``make certs`` writes them to certs/).

``make_certs(dir)`` writes, all PEM unless said otherwise (keys unencrypted, RSA 2048,
valid 10 days):

* ``ca.crt`` / ``ca.key``: the test CA; ``other-ca.crt``: an unrelated CA;
* ``broker.pem`` (key + certificate, SAN localhost/127.0.0.1, signed by the CA), ``broker.crt``,
  ``broker.key``, and ``broker.p12`` (PKCS12, password ``broker-pass``), ``ca.p12`` (the CA
  certificate as a PKCS12 truststore, password ``trust-pass``);
* ``client.crt`` / ``client.key``: subject ``CN=client,OU=eng,O=kbroker,C=US``, signed by the CA;
* ``rogue.crt`` / ``rogue.key``: the same subject signed by the other CA.
"""

from __future__ import annotations

import os
import subprocess
import sys

CLIENT_DN = "CN=client,OU=eng,O=kbroker,C=US"


def _run(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(name: str, cn: str, cwd: str) -> None:
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt",
         "-days", "10", "-subj", f"/CN={cn}", cwd=cwd)


def _signed(name: str, subj: str, ca: str, cwd: str, san: str | None = None) -> None:
    _run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
         "-subj", subj, cwd=cwd)
    ext = []
    if san:
        with open(os.path.join(cwd, f"{name}.ext"), "w") as f:
            f.write(f"subjectAltName={san}\n")
        ext = ["-extfile", f"{name}.ext"]
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
         "-CAcreateserial", "-out", f"{name}.crt", "-days", "10", *ext, cwd=cwd)


def make_certs(directory: str) -> str:
    os.makedirs(directory, exist_ok=True)
    d = directory
    _ca("ca", "kbroker-test-ca", d)
    _ca("other-ca", "someone-else-ca", d)
    _signed("broker", "/CN=localhost/O=kbroker", "ca", d, san="DNS:localhost,IP:127.0.0.1")
    _signed("client", "/C=US/O=kbroker/OU=eng/CN=client", "ca", d)
    _signed("rogue", "/C=US/O=kbroker/OU=eng/CN=client", "other-ca", d)
    with open(os.path.join(d, "broker.pem"), "w") as out:
        for part in ("broker.key", "broker.crt"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    _run("pkcs12", "-export", "-in", "broker.crt", "-inkey", "broker.key", "-out", "broker.p12",
         "-passout", "pass:broker-pass", cwd=d)
    _run("pkcs12", "-export", "-nokeys", "-in", "ca.crt", "-out", "ca.p12", "-passout", "pass:trust-pass", cwd=d)
    return d


if __name__ == "__main__":
    print(make_certs(sys.argv[1] if len(sys.argv) > 1 else "certs"))
