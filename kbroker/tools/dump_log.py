"""``kbroker dump-log``: kafka-dump-log.sh (Kafka's DumpLogSegments), reading segment files.

Reads ``.log`` / ``.index`` / ``.timeindex`` files directly (no broker), the layout being
Kafka's (kbroker writes the same files).  Output lines are DumpLogSegments':

* ``.log``: ``Log starting offset: N``, then per batch ``baseOffset: .. lastOffset: .. count:
  .. baseSequence: .. lastSequence: .. producerId: .. producerEpoch: .. partitionLeaderEpoch: ..
  isTransactional: .. isControl: .. deleteHorizonMs: .. position: .. CreateTime: .. size: ..
  magic: 2 compresscodec: .. crc: .. isvalid: ..``; with ``--deep-iteration`` one ``| offset:
  ..`` line per record, with ``--print-data-log`` its ``key:`` / ``payload:`` (UTF-8), with
  ``--offsets-decoder`` the __consumer_offsets records as JSON (Kafka's field names).
* ``.index``: ``offset: O position: P`` per entry; ``.timeindex``: ``timestamp: T offset: O``;
  entries are checked against the log and mismatches reported on stderr at the end.
  A preallocated index (the active segment's) ends at its first zero entry.

It reads through the storage code, as Kafka's tool does: batches with ``log.file_records``
(whole batches only; a partial one, or a batch length too small for a batch header, ends the
file and the rest is reported as invalid bytes), index entries in ``log.index``'s formats,
``__consumer_offsets`` records with ``groups.records``.  What stays here is the output: the
lines and the JSON of Kafka's generated converters.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from groups.records import decode_any_key, decode_any_value
from log.errors import CorruptRecordError
from log.file_records import FileRecords
from log.index import OFFSET_ENTRY, TIME_ENTRY, OffsetIndex
from wire.batch_header import BatchHeader
from wire.codec import decode_at
from wire.messages import GroupMetadataValue
from wire.record_batch import ControlRecordType, RecordBatch, decode_control_record
from wire.schema import SPECS, ZERO_UUID, spec_of

_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
MAX_INT = 2**31 - 1


def _java_str(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _open_records(path: Path) -> FileRecords:
    """A segment's ``.log``, read only (``FileRecords.open`` would create a missing file and
    needs write access); the caller closes it."""
    fd = os.open(path, os.O_RDONLY)
    return FileRecords(str(path), fd, os.fstat(fd).st_size)


def _headers(records: FileRecords, start: int = 0, end: int = MAX_INT) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each whole batch in ``[start, end)``: a partial batch, or a batch
    length too small for a header, ends the batches (what follows is invalid bytes)."""
    if start < 0:   # a corrupt index entry's position: no batch there
        return
    try:
        yield from records.batch_headers_from(start, end)
    except CorruptRecordError:
        return


def _batch(records: FileRecords, position: int, header: BatchHeader) -> RecordBatch:
    """The whole batch at ``position``, for its records and its CRC check."""
    return RecordBatch(records.read(position, header.size_in_bytes))


# --------------------------------------------------------------------------- JSON of records

def _json_value(spec_field: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if spec_field.is_array:
        if spec_field.struct is not None:
            return [_json_struct(spec_field.struct, v, version) for v in value]
        return [_json_scalar(spec_field.elem, v) for v in value]
    if spec_field.struct is not None:
        return _json_struct(spec_field.struct, value, version)
    return _json_scalar(spec_field.elem, value)


def _json_scalar(kind: str, v: Any) -> Any:
    if kind in ("bytes", "records"):
        return base64.b64encode(bytes(v)).decode()
    if kind == "uuid":
        return base64.urlsafe_b64encode((v or ZERO_UUID).bytes).decode().rstrip("=")
    return v


def _json_struct(spec: Any, msg: Any, version: int) -> dict[str, Any]:
    """A message as Kafka's generated JsonConverter writes it: fields of that version, in
    schema order, camelCase names; tagged fields only when not at their default."""
    out: dict[str, Any] = {}
    for f in spec.fields:
        if not f.present(version):
            continue
        v = getattr(msg, f.py)
        if f.is_tagged(version) and f.is_default(v):
            continue
        out[f.name[0].lower() + f.name[1:]] = _json_value(f, v, version)
    return out


def _embedded(raw: str | None, name: str) -> Any:
    """GroupMetadataValue member subscription/assignment bytes -> their JSON (as Kafka does)."""
    try:
        data = base64.b64decode(raw or "")
        version = int.from_bytes(data[:2], "big", signed=True)
        spec = SPECS[name]
        msg, _ = decode_at(spec.cls, data, version, 2)
        return _json_struct(spec, msg, version)
    except Exception:  # Kafka keeps the original bytes when they do not parse
        return raw


def decode_offsets_record(offset: int, key: bytes | None, value: bytes | None) -> tuple[str, str | None]:
    """(key text, value text) of a __consumer_offsets record, as --offsets-decoder prints them."""
    if key is None:
        raise click.ClickException(f"Failed to decode message at offset {offset} using the specified "
                                   "decoder (message had a missing key)")
    try:
        rtype, kmsg = decode_any_key(key)
        if kmsg is None:
            return f"Unknown record type {rtype} at offset {offset}, skipping.", None
        # a coordinator key has one layout, 0
        ktext = json.dumps({"type": str(rtype), "data": _json_struct(spec_of(kmsg), kmsg, 0)},
                           separators=(",", ":"), ensure_ascii=False)
        if value is None:
            return ktext, "<DELETE>"
        vversion, vmsg = decode_any_value(rtype, value)
        data = _json_struct(spec_of(vmsg), vmsg, vversion)
        if isinstance(vmsg, GroupMetadataValue) and data.get("protocolType") == "consumer":
            for m in data.get("members") or []:
                m["subscription"] = _embedded(m.get("subscription"), "ConsumerProtocolSubscription")
                m["assignment"] = _embedded(m.get("assignment"), "ConsumerProtocolAssignment")
        return ktext, json.dumps({"version": str(vversion), "data": data}, separators=(",", ":"),
                                 ensure_ascii=False)
    except Exception as e:  # Kafka: "Error at offset N, skipping. <message>"
        return f"Error at offset {offset}, skipping. {e}", None


# --------------------------------------------------------------------------- .log

def dump_log(path: Path, print_data: bool, deep: bool, offsets_decoder: bool, max_bytes: int,
             non_consecutive: dict[str, list[tuple[int, int]]]) -> None:
    out = sys.stdout
    out.write(f"Log starting offset: {int(path.name.split('.')[0])}\n")
    records = _open_records(path)
    try:
        valid = _dump_batches(out, path, records, print_data, deep, offsets_decoder, max_bytes,
                              non_consecutive)
    finally:
        records.close()
    trailing = min(records.size_in_bytes(), max_bytes) - valid
    if trailing > 0 and max_bytes == MAX_INT:
        out.write(f"Found {trailing} invalid bytes at the end of {path.name}\n")


def _dump_batches(out: Any, path: Path, records: FileRecords, print_data: bool, deep: bool,
                  offsets_decoder: bool, max_bytes: int,
                  non_consecutive: dict[str, list[tuple[int, int]]]) -> int:
    """Print the batches of the first ``max_bytes``; returns the bytes they take."""
    valid = 0
    last_offset = -1
    for pos, header in _headers(records, 0, max_bytes):
        b = _batch(records, pos, header)
        ts_type = "LogAppendTime" if b.attributes & 0x08 else "CreateTime"
        horizon = f"OptionalLong[{b.delete_horizon_ms}]" if b.has_delete_horizon else "OptionalLong.empty"
        out.write(f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
                  f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
                  f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
                  f"isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)} "
                  f"deleteHorizonMs: {horizon} position: {pos} {ts_type}: {b.max_timestamp} "
                  f"size: {b.size_in_bytes} magic: {b.magic} compresscodec: {_CODECS.get(int(b.compression), '?')} "
                  f"crc: {b.crc} isvalid: {_bool(b.is_crc_valid())}\n")
        if deep:
            for r in b.records():
                if r.offset != last_offset + 1:
                    non_consecutive.setdefault(str(path.resolve()), []).append((last_offset, r.offset))
                last_offset = r.offset
                seq = -1 if b.base_sequence == -1 else (b.base_sequence + r.offset_delta) % (MAX_INT + 1)
                line = (f"| offset: {r.offset} {ts_type}: {r.timestamp} "
                        f"keySize: {-1 if r.key is None else len(r.key)} "
                        f"valueSize: {-1 if r.value is None else len(r.value)} sequence: {seq} "
                        f"headerKeys: [{','.join(k for k, _ in r.headers)}]")
                if b.is_control:
                    ctype, epoch = decode_control_record(r)
                    if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                        line += f" endTxnMarker: {ControlRecordType(ctype).name} coordinatorEpoch: {epoch}"
                    else:
                        line += f" controlType: UNKNOWN({int(ctype)})"
                elif print_data:
                    if offsets_decoder:
                        key, value = decode_offsets_record(r.offset, r.key, r.value)
                    else:
                        key = None if r.key is None else _java_str(r.key)
                        value = None if r.value is None else _java_str(r.value)
                    if key is not None:
                        line += f" key: {key}"
                    if value is not None:
                        line += f" payload: {value}"
                out.write(line + "\n")
        valid += b.size_in_bytes
    return valid


# --------------------------------------------------------------------------- indexes

def _index_entries(path: Path, entry: struct.Struct) -> list[tuple[int, int]]:
    data = path.read_bytes()
    n = len(data) // entry.size
    return [entry.unpack_from(data, i * entry.size) for i in range(n)]


def _log_path(path: Path) -> Path:
    return path.with_name(path.name.split(".")[0] + ".log")


def _first_batch_last_offset(records: FileRecords, position: int) -> int | None:
    for _, header in _headers(records, position):
        return header.last_offset
    return None


def dump_index(path: Path, sanity_only: bool, verify_only: bool,
               mismatches: dict[str, dict[int, int]]) -> None:
    base = int(path.name.split(".")[0])
    entries = _index_entries(path, OFFSET_ENTRY)
    if not entries:
        print(f"{path} is empty.")
        return
    if sanity_only:
        size = path.stat().st_size
        last = base + entries[-1][0]
        if last < base:
            raise click.ClickException(f"Corrupt index found, index file ({path}) has non-zero size but the "
                                       f"last offset is {last} which is less than the base offset {base}.")
        if size % OFFSET_ENTRY.size:
            raise click.ClickException(f"Index file {path} is corrupt, found {size} bytes which is neither "
                                       f"positive nor a multiple of {OFFSET_ENTRY.size}.")
        print(f"{path} passed sanity check.")
        return
    records = _open_records(_log_path(path))
    try:
        for i, (rel, position) in enumerate(entries):
            offset = base + rel
            if offset == base and i > 0:
                return
            got = _first_batch_last_offset(records, position)
            if got is not None and got != offset:
                mismatches.setdefault(str(path.resolve()), {})[offset] = got
            if not verify_only:
                print(f"offset: {offset} position: {position}")
    finally:
        records.close()


def dump_time_index(path: Path, sanity_only: bool, verify_only: bool,
                    errors: dict[str, dict[str, list[tuple[int, int]]]]) -> None:
    base = int(path.name.split(".")[0])
    entries = _index_entries(path, TIME_ENTRY)
    if sanity_only:
        size = path.stat().st_size
        if entries and entries[-1][0] < entries[0][0]:
            raise click.ClickException(f"Corrupt time index found, time index file ({path}) has non-zero size "
                                       f"but the last timestamp is {entries[-1][0]} which is less than the "
                                       f"first timestamp {entries[0][0]}")
        if size % TIME_ENTRY.size:
            raise click.ClickException(f"Time index file {path} is corrupt, found {size} bytes which is "
                                       f"neither positive nor a multiple of {TIME_ENTRY.size}.")
        print(f"{path} passed sanity check.")
        return
    records = _open_records(_log_path(path))
    index = _offset_index(path.with_name(path.name.split(".")[0] + ".index"), base)
    try:
        _check_time_index(path, base, entries, records, index, verify_only, errors)
    finally:
        records.close()
        if index is not None:
            index.close()


def _offset_index(path: Path, base: int) -> OffsetIndex | None:
    """The segment's offset index, read only; None when there is none (or it is empty) and
    lookups start at position 0.  Every whole entry of the file counts, a preallocated file's
    zero entries included (they read as (base offset, 0)), as in Kafka's tool."""
    if not path.exists() or path.stat().st_size < OFFSET_ENTRY.size:
        return None
    return OffsetIndex(str(path), base, writable=False)


def _check_time_index(path: Path, base: int, entries: list[tuple[int, int]], records: FileRecords,
                      index: OffsetIndex | None, verify_only: bool,
                      errors: dict[str, dict[str, list[tuple[int, int]]]]) -> None:
    key = str(path.resolve())
    prev = -1
    for i, (ts, rel) in enumerate(entries):
        offset = base + rel
        if offset == base and i > 0:
            return
        position = 0 if index is None else index.lookup(offset).position
        match = next(((p, h) for p, h in _headers(records, position) if h.last_offset >= offset), None)
        if match is None:
            errors.setdefault("shallow", {}).setdefault(key, []).append((offset, -1))
        elif match[1].last_offset != offset:
            errors.setdefault("shallow", {}).setdefault(key, []).append((offset, match[1].last_offset))
        else:
            max_ts = max((r.timestamp for r in _batch(records, *match).records()), default=-1)
            if max_ts != ts:
                errors.setdefault("mismatch", {}).setdefault(key, []).append((ts, max_ts))
            if prev >= ts:
                errors.setdefault("order", {}).setdefault(key, []).append((ts, prev))
        if not verify_only:
            print(f"timestamp: {ts} offset: {offset}")
        prev = ts


@click.command("dump-log", help="Dump segment files: .log, .index, .timeindex (kafka-dump-log.sh).")
@click.option("--files", required=True, help="REQUIRED: comma separated data and index files to dump.")
@click.option("--deep-iteration", is_flag=True, help="Iterate the records inside each batch.")
@click.option("--print-data-log", is_flag=True, help="Print the records' keys and values (implies deep iteration).")
@click.option("--offsets-decoder", is_flag=True,
              help="Decode __consumer_offsets records as JSON (implies --print-data-log).")
@click.option("--index-sanity-check", is_flag=True, help="Only check that the index files are sane.")
@click.option("--verify-index-only", is_flag=True, help="Only check index entries against the log.")
@click.option("--max-bytes", type=int, default=MAX_INT, show_default=True,
              help="Read at most this many bytes of each .log file.")
def dump_log_command(files: str, deep_iteration: bool, print_data_log: bool, offsets_decoder: bool,
                     index_sanity_check: bool, verify_index_only: bool, max_bytes: int) -> None:
    print_data = print_data_log or offsets_decoder
    deep = deep_iteration or print_data
    mismatches: dict[str, dict[int, int]] = {}
    time_errors: dict[str, dict[str, list[tuple[int, int]]]] = {}
    non_consecutive: dict[str, list[tuple[int, int]]] = {}
    for name in files.split(","):
        path = Path(name)
        print(f"Dumping {name}")
        sys.stdout.flush()
        suffix = path.suffix
        try:
            if suffix == ".log":
                dump_log(path, print_data, deep, offsets_decoder, max_bytes, non_consecutive)
            elif suffix == ".index":
                dump_index(path, index_sanity_check, verify_index_only, mismatches)
            elif suffix == ".timeindex":
                dump_time_index(path, index_sanity_check, verify_index_only, time_errors)
            else:
                click.echo(f"Ignoring unknown file {name}", err=True)
        except FileNotFoundError as e:
            raise click.ClickException(f"{e.filename} (No such file or directory)") from None
        except ValueError:  # the name is not <base offset>.<suffix>; Kafka's Long.parseLong message
            raise click.ClickException(f'For input string: "{path.name.split(".")[0]}"') from None
    err = sys.stderr
    sys.stdout.flush()
    for fname, by_offset in mismatches.items():
        err.write(f"Mismatches in :{fname}\n")
        for index_offset in sorted(by_offset, reverse=True):
            err.write(f"  Index offset: {index_offset}, log offset: {by_offset[index_offset]}\n")
    for fname, pairs in time_errors.get("mismatch", {}).items():
        err.write(f"Found timestamp mismatch in :{fname}\n")
        for a, b in pairs:
            err.write(f"  Index timestamp: {a}, log timestamp: {b}\n")
    for fname, pairs in time_errors.get("order", {}).items():
        err.write(f"Found out of order timestamp in :{fname}\n")
        for a, b in pairs:
            err.write(f"  Index timestamp: {a}, Previously indexed timestamp: {b}\n")
    for fname, pairs in time_errors.get("shallow", {}).items():
        err.write(f"The following indexed offsets are not found in :{fname}\n")
        for a, b in pairs:
            err.write(f"Indexed offset: {a}, found log offset: {b}\n")
    for fname, pairs in non_consecutive.items():
        err.write(f"Non-consecutive offsets in {fname}\n")
        for a, b in pairs:
            err.write(f"  {a} is followed by {b}\n")
