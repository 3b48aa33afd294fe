"""``python bench/harness/loop_probe.py serve ...``: ``kbroker serve`` with a watchdog on its event loop.

A thread asks the loop every ``PROBE_INTERVAL_S`` to run a no-op (``call_soon_threadsafe``)
and notes how long the loop took to run it: the loop's stall at that moment.  At exit the
samples go to the file named by ``KBROKER_LOOP_PROBE`` as JSON lines ``[t_epoch_s, delay_ms]``
(t is when the probe asked).  It needs nothing from the broker but ``kbroker.__main__`` and
``kbroker.app.broker.new_event_loop``, so it measures any revision of the tree (the bench runs an
older checkout with ``PYTHONPATH`` pointing at it).  The probe's own cost is one thread
wake-up per interval.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time

PROBE_INTERVAL_S = 0.005


def _watch(loop, samples: list[tuple[float, float]], stop: threading.Event) -> None:  # noqa: ANN001
    ran = threading.Event()
    while not stop.wait(PROBE_INTERVAL_S):
        ran.clear()
        t = time.time()
        t0 = time.perf_counter()
        try:
            loop.call_soon_threadsafe(ran.set)
        except RuntimeError:   # the loop is closed
            return
        while not ran.wait(1.0):
            if loop.is_closed():
                return
        samples.append((t, (time.perf_counter() - t0) * 1000))


def main() -> int:
    import kbroker.app.broker as broker_module
    from kbroker.__main__ import _serve_main

    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    out = os.environ.get("KBROKER_LOOP_PROBE", "loop_probe.jsonl")
    original = broker_module.new_event_loop

    def new_event_loop():  # noqa: ANN202
        loop = original()
        threading.Thread(target=_watch, args=(loop, samples, stop), name="loop-probe", daemon=True).start()
        return loop

    broker_module.new_event_loop = new_event_loop

    def dump() -> None:
        stop.set()
        with open(out, "w") as f:
            for s in samples:
                f.write(json.dumps(s) + "\n")

    atexit.register(dump)
    argv = sys.argv[1:]
    if argv[:1] == ["serve"]:
        argv = argv[1:]
    return _serve_main(argv)


if __name__ == "__main__":
    sys.exit(main())
