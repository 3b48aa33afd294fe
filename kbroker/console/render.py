"""HTML building blocks for the console's pages: escaping, tables, the page frame, and the
text/JSON/hex decoding of record keys, values and headers.

Every string that comes from the cluster (topic names, keys, values, client ids) goes
through :func:`esc`; markup is only ever built here from literals.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from urllib.parse import quote

NAV = (("/", "Overview"), ("/brokers", "Brokers"), ("/topics", "Topics"), ("/groups", "Consumer groups"))


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def url(*parts: str) -> str:
    """A path from raw segments (topic and group names may hold '.', '_', '-', and more)."""
    return "/" + "/".join(quote(p, safe="") for p in parts)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], table_id: str = "",
          raw_cols: Sequence[int] = ()) -> str:
    """A table; cells are escaped except the columns in ``raw_cols`` (already markup)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f"<td>{c if i in raw_cols else esc(c)}</td>" for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="empty">none</td></tr>')
    tid = f' id="{esc(table_id)}"' if table_id else ""
    return f"<table{tid}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def link(href: str, text: object) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def page(title: str, body: str, active: str = "", cluster_line: str = "", flash: str = "",
         error: str = "") -> str:
    nav = "".join(
        f'<a href="{href}"{" class=active" if href == active else ""}>{esc(name)}</a>' for href, name in NAV)
    notes = ""
    if flash:
        notes += f'<p class="flash" id="flash">{esc(flash)}</p>'
    if error:
        notes += f'<p class="error" id="error">{esc(error)}</p>'
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>{esc(title)} · kbroker console</title>"
        '<link rel="stylesheet" href="/static/console.css">'
        '<script src="/static/console.js" defer></script></head><body>'
        f'<header><span class="brand">kbroker console</span><nav>{nav}</nav>'
        f'<span class="cluster">{esc(cluster_line)}</span></header>'
        f"<main><h1>{esc(title)}</h1>{notes}{body}</main></body></html>")


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def iso_ms(ms: int) -> str:
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def decode(data: bytes | None, fmt: str) -> tuple[str, str]:
    """(shown text, css class) of a key/value/header: ``fmt`` is auto, text, json or hex.
    auto: JSON when it parses as a JSON object or array, else UTF-8 text, else hex."""
    if data is None:
        return "null", "null"
    if fmt == "hex":
        return data.hex(" "), "hex"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex(" "), "hex"
    if fmt in ("auto", "json"):
        stripped = text.strip()
        if fmt == "json" or stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(text), indent=1, ensure_ascii=False), "json"
            except ValueError:
                if fmt == "json":
                    return text, "text invalid-json"
    return text, "text"
