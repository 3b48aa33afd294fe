"""The console's pages and actions (aiohttp handlers), each reading the cluster through
kbroker/console/client.py when it is requested.

GET  /                          overview: cluster, controller, counts, live throughput chart
GET  /brokers                   brokers, the controller, partitions led, bytes held
GET  /topics                    topics with partitions, replication, under-replicated, size;
                                a form to create one (POST /topics)
GET  /topics/{t}                partitions (leader, replicas, ISR, offsets, size), configs with
                                an edit form (POST /topics/{t}/config), delete (POST /topics/{t}/delete)
GET  /topics/{t}/messages       records by partition and offset or timestamp, decoded as
                                auto/text/json/hex (?partition=&offset=&timestamp=&limit=&format=)
GET  /groups                    groups of both types (classic; consumer, KIP-848) with type, state,
                                group epoch, members and total lag; every group's members with
                                client id, host, member epoch and assigned partitions
GET  /groups/{g}                members (with a consumer group's member epochs and target
                                assignments) and, per partition, committed offset, end offset,
                                lag, owner
GET  /api/throughput[?topic=]   records/s per topic as JSON, for the charts

A POST answers with a redirect (303) carrying a flash message or an error, so a reload
does not repeat it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from kbroker.console.client import EARLIEST, LATEST, ConsoleClient, GroupInfo, KafkaError
from kbroker.console.render import decode, esc, human_bytes, iso_ms, link, page, table, url
from kbroker.console.throughput import ThroughputSampler

CLIENT = web.AppKey("client", ConsoleClient)
SAMPLER = web.AppKey("sampler", ThroughputSampler)
MAX_LIMIT = 500
_CONFIG_SOURCES = {0: "unknown", 1: "topic", 2: "dynamic broker", 3: "dynamic default broker",
                   4: "static broker", 5: "default", 6: "dynamic broker logger"}


def _client(request: web.Request) -> ConsoleClient:
    return request.app[CLIENT]


def _html(body: str) -> web.Response:
    return web.Response(text=body, content_type="text/html")


def _notes(request: web.Request) -> dict[str, str]:
    return {"flash": request.query.get("flash", ""), "error": request.query.get("error", "")}


def _redirect(path: str, **params: str) -> web.HTTPSeeOther:
    return web.HTTPSeeOther(path + ("?" + urlencode(params) if params else ""))


async def _cluster_line(client: ConsoleClient) -> str:
    c = client.cluster
    return "" if c is None else f"cluster {c.cluster_id} · {len(c.brokers)} broker(s) · controller {c.controller_id}"


def _chart(topic: str | None = None) -> str:
    src = "/api/throughput" + ("?" + urlencode({"topic": topic}) if topic else "")
    return (f'<section><h2>Throughput (records/s)</h2><canvas class="chart" id="throughput" '
            f'width="900" height="220" data-src="{esc(src)}"></canvas>'
            '<div class="legend" id="throughput-legend"></div></section>')


# ------------------------------------------------------------------ overview and brokers
async def overview(request: web.Request) -> web.Response:
    client = _client(request)
    cluster = await client.metadata()
    groups = await client.list_groups()
    user_topics = [t for t in cluster.topics if t not in cluster.internal]
    parts = [p for ps in cluster.topics.values() for p in ps]
    under = sum(1 for p in parts if len(p.isr) < len(p.replicas))
    offline = sum(1 for p in parts if p.leader < 0)
    rows = [("Cluster id", cluster.cluster_id), ("Controller", cluster.controller_id),
            ("Brokers", len(cluster.brokers)), ("Topics", len(user_topics)),
            ("Partitions", len(parts)), ("Under-replicated partitions", under),
            ("Offline partitions", offline), ("Consumer groups", len(groups))]
    body = f'<section class="cards">{table(["", ""], rows, "summary")}</section>' + _chart()
    return _html(page("Overview", body, "/", await _cluster_line(client), **_notes(request)))


async def brokers(request: web.Request) -> web.Response:
    client = _client(request)
    cluster = await client.metadata()
    sizes = await client.log_dir_sizes()
    led: dict[int, int] = {}
    replicas: dict[int, int] = {}
    for ps in cluster.topics.values():
        for p in ps:
            led[p.leader] = led.get(p.leader, 0) + 1
            for r in p.replicas:
                replicas[r] = replicas.get(r, 0) + 1
    held: dict[int, int] = {}
    for ps in cluster.topics.values():
        for p in ps:
            if p.leader >= 0 and (p.topic, p.partition) in sizes:
                held[p.leader] = held.get(p.leader, 0) + sizes[(p.topic, p.partition)]
    rows = []
    for bid, (host, port, rack) in sorted(cluster.brokers.items()):
        role = "controller" if bid == cluster.controller_id else ""
        rows.append((bid, host, port, rack or "-", role, led.get(bid, 0), replicas.get(bid, 0),
                     human_bytes(held.get(bid, 0))))
    body = table(["Id", "Host", "Port", "Rack", "Role", "Leader of", "Replicas", "Leader bytes"], rows, "brokers")
    return _html(page("Brokers", body, "/brokers", await _cluster_line(client), **_notes(request)))


# ------------------------------------------------------------------ topics
async def topics(request: web.Request) -> web.Response:
    client = _client(request)
    cluster = await client.metadata()
    sizes = await client.log_dir_sizes()
    tps = [(t, p.partition) for t, ps in cluster.topics.items() for p in ps]
    ends, starts = await asyncio.gather(client.list_offsets(tps, LATEST), client.list_offsets(tps, EARLIEST))
    rows = []
    for name, ps in sorted(cluster.topics.items()):
        under = sum(1 for p in ps if len(p.isr) < len(p.replicas))
        size = sum(sizes.get((name, p.partition), 0) for p in ps)
        records = sum(ends.get((name, p.partition), 0) - starts.get((name, p.partition), 0) for p in ps)
        rf = max((len(p.replicas) for p in ps), default=0)
        rows.append((link(url("topics", name), name) + (' <span class="tag">internal</span>'
                                                          if name in cluster.internal else ""),
                     len(ps), rf, under, records, human_bytes(size)))
    form = (
        '<section><h2>Create a topic</h2><form method="post" action="/topics" id="create-topic">'
        '<label>Name <input name="name" required pattern="[a-zA-Z0-9._-]+"></label>'
        '<label>Partitions <input name="partitions" type="number" min="1" value="1"></label>'
        '<label>Replication factor <input name="replication_factor" type="number" min="1" value="1"></label>'
        '<label class="wide">Configs (key=value per line) <textarea name="configs" rows="2"></textarea></label>'
        '<button type="submit">Create</button></form></section>')
    body = table(["Topic", "Partitions", "Replication", "Under-replicated", "Records", "Size"], rows,
                 "topics", raw_cols=(0,)) + form
    return _html(page("Topics", body, "/topics", await _cluster_line(client), **_notes(request)))


async def create_topic(request: web.Request) -> web.Response:
    form = await request.post()
    name = str(form.get("name", "")).strip()
    try:
        configs = {}
        for line in str(form.get("configs", "")).splitlines():
            if line.strip():
                k, sep, v = line.partition("=")
                if not sep:
                    raise ValueError(f"config line {line!r} is not key=value")
                configs[k.strip()] = v.strip()
        await _client(request).create_topic(name, int(str(form.get("partitions") or 1)),
                                            int(str(form.get("replication_factor") or 1)), configs)
    except (KafkaError, ValueError) as e:
        raise _redirect("/topics", error=f"Could not create {name}: {e}") from None
    raise _redirect(url("topics", name), flash=f"Created topic {name}")


async def topic(request: web.Request) -> web.Response:
    client = _client(request)
    name = request.match_info["topic"]
    cluster = await client.metadata()
    ps = cluster.topics.get(name)
    if ps is None:
        raise web.HTTPNotFound(text=f"no topic {name}")
    tps = [(name, p.partition) for p in ps]
    sizes, ends, starts, configs = await asyncio.gather(
        client.log_dir_sizes(), client.list_offsets(tps, LATEST), client.list_offsets(tps, EARLIEST),
        client.topic_configs(name))
    rows = []
    for p in ps:
        isr_ok = "ok" if len(p.isr) == len(p.replicas) else "under-replicated"
        rows.append((p.partition, p.leader if p.leader >= 0 else "none", _ids(p.replicas), _ids(p.isr),
                     _ids(p.offline) or "-", isr_ok, starts.get((name, p.partition), "-"),
                     ends.get((name, p.partition), "-"), human_bytes(sizes.get((name, p.partition)))))
    parts = table(["Partition", "Leader", "Replicas", "ISR", "Offline", "Replication", "Start offset",
                   "End offset", "Size"], rows, "partitions")
    # the topic's own overrides first, then the rest by name
    crow = [(k, "******" if sensitive else (v if v is not None else "null"),
             _CONFIG_SOURCES.get(src, str(src)))
            for k, v, src, _ro, sensitive in sorted(configs, key=lambda c: (c[2] != 1, c[0]))]
    edit = (f'<form method="post" action="{esc(url("topics", name, "config"))}" id="edit-config">'
            '<label>Config <input name="key" required></label><label>Value <input name="value"></label>'
            '<button name="op" value="set" type="submit">Set</button>'
            '<button name="op" value="delete" type="submit">Reset to default</button></form>')
    delete = (f'<form method="post" action="{esc(url("topics", name, "delete"))}" id="delete-topic">'
              f'<label>Type the topic name to delete it <input name="confirm"></label>'
              '<button type="submit" class="danger">Delete topic</button></form>')
    body = (f'<p>{link(url("topics", name, "messages"), "Browse messages")}</p>'
            f"<section><h2>Partitions</h2>{parts}</section>" + _chart(name)
            + f'<section><h2>Configs</h2>{edit}{table(["Name", "Value", "Source"], crow, "configs")}</section>'
            + f"<section><h2>Delete</h2>{delete}</section>")
    return _html(page(f"Topic {name}", body, "/topics", await _cluster_line(client), **_notes(request)))


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


async def alter_config(request: web.Request) -> web.Response:
    name = request.match_info["topic"]
    form = await request.post()
    key = str(form.get("key", "")).strip()
    op = str(form.get("op", "set"))
    try:
        await _client(request).alter_topic_config(name, key, None if op == "delete" else str(form.get("value", "")))
    except KafkaError as e:
        raise _redirect(url("topics", name), error=f"Could not change {key}: {e}") from None
    done = f"Reset {key} to its default" if op == "delete" else f"Set {key}={form.get('value', '')}"
    raise _redirect(url("topics", name), flash=done)


async def delete_topic(request: web.Request) -> web.Response:
    name = request.match_info["topic"]
    form = await request.post()
    if form.get("confirm") != name:
        raise _redirect(url("topics", name), error="Not deleted: the confirmation did not match the topic name")
    try:
        await _client(request).delete_topic(name)
    except KafkaError as e:
        raise _redirect(url("topics", name), error=f"Could not delete {name}: {e}") from None
    raise _redirect("/topics", flash=f"Deleted topic {name}")


async def messages(request: web.Request) -> web.Response:
    client = _client(request)
    name = request.match_info["topic"]
    cluster = await client.metadata()
    ps = cluster.topics.get(name)
    if ps is None:
        raise web.HTTPNotFound(text=f"no topic {name}")
    q = request.query
    fmt = q.get("format", "auto") if q.get("format") in ("auto", "text", "json", "hex") else "auto"
    error = ""
    rows: list[tuple[Any, ...]] = []
    try:
        partition = int(q.get("partition", "0"))
        limit = max(1, min(int(q.get("limit", "50")), MAX_LIMIT))
        if partition not in {p.partition for p in ps}:
            raise ValueError(f"{name} has no partition {partition}")
        if q.get("timestamp"):
            ts = _parse_time(q["timestamp"])
            found = await client.list_offsets([(name, partition)], ts)
            offset = found.get((name, partition), -1)
            if offset < 0:
                offset = (await client.list_offsets([(name, partition)], LATEST)).get((name, partition), 0)
        elif q.get("offset"):
            offset = int(q["offset"])
        else:
            offset = (await client.list_offsets([(name, partition)], EARLIEST)).get((name, partition), 0)
        got, hw = await client.fetch(name, partition, offset, limit)
        for m in got:
            key, kcls = decode(m.key, fmt)
            value, vcls = decode(m.value, fmt)
            headers = "".join(
                f'<div class="header"><b>{esc(h)}</b>: <span class="{hc}">{esc(hv)}</span></div>'
                for h, (hv, hc) in ((h, decode(v, fmt)) for h, v in m.headers))
            rows.append((m.offset, iso_ms(m.timestamp), f'<pre class="{kcls}">{esc(key)}</pre>',
                         f'<pre class="{vcls}">{esc(value)}</pre>', headers or "-"))
        info = f"partition {partition} from offset {offset}: {len(got)} record(s); high watermark {hw}"
    except (ValueError, KafkaError) as e:
        error, info, partition, offset, limit = str(e), "", 0, 0, 50
    options = "".join(f'<option value="{p.partition}"{" selected" if p.partition == partition else ""}>'
                      f"{p.partition}</option>" for p in ps)
    fmts = "".join(f'<option{" selected" if f == fmt else ""}>{f}</option>' for f in ("auto", "text", "json", "hex"))
    form = (f'<form method="get" id="browse">'
            f'<label>Partition <select name="partition">{options}</select></label>'
            f'<label>Offset <input name="offset" type="number" min="0" value="{esc(q.get("offset", ""))}"></label>'
            f'<label>or time (UTC, ISO or epoch ms) <input name="timestamp" value="{esc(q.get("timestamp", ""))}"></label>'
            f'<label>Limit <input name="limit" type="number" min="1" max="{MAX_LIMIT}" value="{limit}"></label>'
            f'<label>Show as <select name="format">{fmts}</select></label><button type="submit">Show</button></form>')
    body = (f'<p>{link(url("topics", name), "Back to " + name)}</p>{form}<p class="info" id="info">{esc(info)}</p>'
            + table(["Offset", "Timestamp", "Key", "Value", "Headers"], rows, "messages", raw_cols=(2, 3, 4)))
    return _html(page(f"Messages in {name}", body, "/topics", await _cluster_line(client), error=error))


def _parse_time(text: str) -> int:
    """Epoch ms, or an ISO-8601 time (UTC unless it names an offset)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    iso = text.replace("Z", "+00:00")
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(f"{text!r} is neither epoch ms nor an ISO-8601 time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


# ------------------------------------------------------------------ groups
async def _group_lag(client: ConsoleClient, group_id: str) -> tuple[dict[tuple[str, int], int],
                                                                      dict[tuple[str, int], int]]:
    committed = await client.committed_offsets(group_id)
    ends = await client.list_offsets(list(committed), LATEST)
    return committed, ends


def _partitions_text(tps: list[tuple[str, int]] | None) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps or []) or "-"


def _epoch(value: int | None) -> object:
    return "-" if value is None else value


async def groups(request: web.Request) -> web.Response:
    client = _client(request)
    await client.metadata()
    listed = await client.list_groups()
    rows, mrows = [], []
    for listing in listed:
        gid = listing.group_id
        try:
            g = await client.describe_group(gid)
            committed, ends = await _group_lag(client, gid)
            lag = sum(max(0, ends[tp] - off) for tp, off in committed.items() if tp in ends)
            rows.append((link(url("groups", gid), gid), g.group_type, g.state or listing.state,
                         g.protocol_type or "-", _epoch(g.group_epoch), len(g.members), len(committed), lag))
            mrows += [(link(url("groups", gid), gid), m.member_id, m.client_id, m.host, _epoch(m.member_epoch),
                       _partitions_text(m.assigned)) for m in g.members]
        except KafkaError as e:
            rows.append((esc(gid), listing.group_type, listing.state, listing.protocol_type or "-", "-", "-", "-",
                         str(e)))
    body = (table(["Group", "Type", "State", "Protocol type", "Group epoch", "Members", "Partitions", "Lag"], rows,
                  "groups", raw_cols=(0,))
            + "<section><h2>Members</h2>"
            + table(["Group", "Member id", "Client id", "Host", "Member epoch", "Assigned"], mrows,
                    "group-members", raw_cols=(0,)) + "</section>")
    return _html(page("Consumer groups", body, "/groups", await _cluster_line(client), **_notes(request)))


def _summary(g: GroupInfo, total_lag: int) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = [("Type", g.group_type), ("State", g.state),
                                      ("Protocol", f"{g.protocol_type} / {g.protocol or '-'}")]
    if g.group_type == "consumer":
        rows += [("Group epoch", g.group_epoch), ("Target assignment epoch", g.assignment_epoch)]
    return rows + [("Members", len(g.members)), ("Total lag", total_lag)]


async def group(request: web.Request) -> web.Response:
    client = _client(request)
    gid = request.match_info["group"]
    await client.metadata()
    try:
        g = await client.describe_group(gid)
        committed = await client.committed_offsets(gid)
    except KafkaError as e:
        raise web.HTTPNotFound(text=f"group {gid}: {e}") from None
    owner: dict[tuple[str, int], Any] = {}
    mrows = []
    for m in g.members:
        for tp in m.assigned:
            owner[tp] = m
        mrows.append((m.member_id, m.instance_id or "-", m.client_id, m.host, _partitions_text(m.assigned),
                      _epoch(m.member_epoch), _partitions_text(m.target) if m.target is not None else "-"))
    # the end offset of every partition shown: committed ones and those a member owns
    ends = await client.list_offsets(sorted(set(committed) | set(owner)), LATEST)
    orows = []
    for tp in sorted(set(committed) | set(owner)):
        end = ends.get(tp)
        off = committed.get(tp)
        lag = max(0, end - off) if end is not None and off is not None else "-"
        m = owner.get(tp)
        orows.append((tp[0], tp[1], off if off is not None else "-", end if end is not None else "-", lag,
                      m.member_id if m else "-", m.host if m else "-", m.client_id if m else "-"))
    total = sum(r[4] for r in orows if isinstance(r[4], int))
    body = (table(["", ""], _summary(g, total), "group-summary")
            + "<section><h2>Offsets and lag</h2>"
            + table(["Topic", "Partition", "Current offset", "Log end offset", "Lag", "Consumer id", "Host",
                     "Client id"], orows, "offsets")
            + "</section><section><h2>Members</h2>"
            + table(["Member id", "Instance id", "Client id", "Host", "Assigned", "Member epoch", "Target"], mrows,
                    "members") + "</section>")
    return _html(page(f"Group {gid}", body, "/groups", await _cluster_line(client), **_notes(request)))


async def throughput(request: web.Request) -> web.Response:
    return web.json_response(request.app[SAMPLER].rates(request.query.get("topic")))
