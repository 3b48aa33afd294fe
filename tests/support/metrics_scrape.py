"""Reading a broker's Prometheus ``/metrics`` (``kbroker.metrics.port``) in tests."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape_text(port: int) -> str:
    """The body of ``/metrics`` on 127.0.0.1:``port`` (a 200 with Prometheus' text type)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        return resp.read().decode()


def scrape_unlabelled(port: int) -> dict[str, float]:
    """The unlabelled samples of ``/metrics``: {name: value}."""
    return {s.name: s.value for f in text_string_to_metric_families(scrape_text(port))
            for s in f.samples if not s.labels}


def scrape_labelled(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``: {(name, sorted labels): value}."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(scrape_text(port)) for s in f.samples}
