"""log: Kafka's segment/index storage engine, with compaction (issues 3 and 6).

Theory of operation
-------------------
A partition is an append-only log split into *segments* named by base offset; each segment is
a ``.log`` file of record batches exactly as on the wire (magic 2, offsets assigned), a sparse
``.index`` (relative offset -> file position, one entry per ``index.interval.bytes``) and a
``.timeindex`` (max timestamp so far -> relative offset).  Appends are sequential writes to
the last (*active*) segment; lookups are a binary search over segment base offsets, then over
the index, then a short scan of batch headers; old data is deleted a whole segment at a time.

Layers, top to bottom (Kafka's names, so Kafka's source stays the reference):

* ``LogManager`` (log_manager.py): all logs of a broker over ``log.dirs``; checkpoints,
  clean-shutdown marker, retention/flush/checkpoint tasks on the ``Scheduler``.
* ``Log`` = ``UnifiedLog`` (log.py): log start offset, high watermark, producer state,
  roll policy, append/read/truncate API for the broker; its retention rules (which whole
  segments go) are in retention.py.
* ``LocalLog`` (local_log.py): segments, log end offset, recovery point, roll, read,
  ``.deleted`` renames.  ``LogLoader`` (loader.py): open + crash recovery.
* ``LogSegments`` / ``LogSegment`` (segments.py, segment.py), ``FileRecords``
  (file_records.py), ``OffsetIndex`` / ``TimeIndex`` (index.py).
* ``ProducerStateManager`` (producer_state.py): idempotent producers, ``.snapshot`` files,
  open/completed transactions and the first unstable offset (LSO = min(it, HW)); replayed
  from stored batches by producer_state_rebuild.py.  Transactions: markers are control
  batches (control_batch.py); each segment's ``.txnindex`` (txn_index.py) lists the aborted
  transactions whose ABORT marker it holds, for read_committed reads
  (``Log.collect_aborted_transactions``) and for the cleaner (cleaned_txn_metadata.py).
* Compaction, Kafka's log cleaner: ``LogCleaner`` / ``CleaningJob`` (log_cleaner.py) drive it
  as grab (short) -> prepare (long, no lock, never touches the Log) -> commit (short, under
  the log's lock); ``LogCleanerManager``
  (cleaner_manager.py) picks the dirtiest log and keeps ``cleaner-offset-checkpoint``;
  ``Cleaner`` (cleaner.py) builds the ``SkimpyOffsetMap`` (offset_map.py) and rewrites segment
  groups into ``.cleaned`` files through ``filter_batch`` (batch_filter.py, Kafka's
  ``MemoryRecords.filterTo``; record scanning in raw_records.py), paced by the ``Throttler``
  (throttler.py); ``Log.replace_segments`` swaps them in (``.cleaned`` -> ``.swap`` -> old
  ``.deleted`` -> final names) and the loader completes or undoes a swap cut by a crash.
* ``validate_and_assign_offsets`` (validator.py): Kafka's LogValidator, a pure function; its
  walk over every record (record_validation.py) runs in C (``_record_scan.c``, built by
  setup.py), with a pure-Python twin.
* checkpoint.py (text checkpoints, meta.properties, clean-shutdown marker),
  durable_files.py (fsync by path; write-temp-fsync-rename of every small state file; syncfs),
  durable_batch.py (the background pass making many small state files durable at once), config.py
  (``LogConfig`` with Kafka's topic-config names and defaults, ``CleanerConfig``), files.py (naming),
  types.py (frozen value types; a leaf), errors.py (Kafka
  error names), clock.py / scheduler.py (injected time, cooperative tasks).

Rules
-----
* No networking and no event loop: no asyncio/uvloop/socket/selectors/ssl (import-linter).
  log/ may import ``wire`` (record-batch view, compression) and nothing above it.
* Time comes from an injected ``Clock``; background work is queued on a ``Scheduler`` that the
  owner runs; log/ starts no threads.  ``Log`` mutations take ``Log.lock``; segment lookups
  are lock-free (``LogSegments`` is copy-on-write), so a broker may append on one thread and
  run retention or compaction on others.  ``CleaningJob.prepare`` holds no lock at all: it
  reads only a snapshot (duplicated descriptors of immutable segments) and writes only new
  ``.cleaned`` files.
* The hot path never re-encodes a batch: append validates headers and CRC, walks the records
  in place (one C pass, no object per record; compressed batches are decompressed for it),
  patches baseOffset/partitionLeaderEpoch (and maxTimestamp with the CRC, when the header
  lied) and writes the bytes as sent; records are decoded into objects only for reporting a
  refused record, inside the one batch a by-timestamp lookup lands in, and by the cleaner.
* Reads return ``RecordsSlice`` handles (fd, position, length) of whole stored batches, the
  first always whole (KIP-74), for ``sendfile``; ``.read()`` gives bytes.
* Errors a client must see are ``log.errors.LogError`` subclasses; ``exc.error`` is the
  ``wire.error_codes.ErrorCode`` the broker answers with.

Deliberately not done (yet): transactions (no ``.txnindex``, no LSO, markers only end the
producer's ongoing transaction; so the cleaner never drops aborted data or transaction
markers, it keeps control batches whole), leader-epoch cache, tiered storage, recompression
for ``compression.type`` != producer, message format down-conversion, splitting segments whose
offsets overflow an int32 (the cleaner's grouping never creates one).
"""
