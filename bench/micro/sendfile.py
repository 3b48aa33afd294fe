"""Where sendfile starts to pay: ``pread`` + ``send`` against ``os.sendfile`` per slice size.

Run: ``.venv/bin/python -m bench.micro.sendfile``.  A loopback TCP connection
whose reader (a thread) drains as fast as it can; 8 MiB of random bytes in a temporary
file (in the page cache); for each slice size, the same number of bytes (64 MiB) sent as
slices at rotating positions, first with ``pread`` + ``sendall`` (what kbroker's Fetch
did: a copy into Python, then the transport's write), then with ``os.sendfile``.  Prints
microseconds per slice and MB/s.  The figures chose ``SENDFILE_MIN_BYTES``
(kbroker/replica/record_sending.py); they are recorded in bench/results/zero_copy.md.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

FILE_BYTES = 8 << 20
SIZES = (4096, 16384, 32768, 65536, 131072, 262144, 1 << 20)


def main() -> None:
    with tempfile.TemporaryFile() as f:
        f.write(os.urandom(FILE_BYTES))
        f.flush()
        fd = f.fileno()
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        client = socket.create_connection(srv.getsockname())
        sender, _ = srv.accept()

        def drain() -> None:
            buf = bytearray(1 << 20)
            while client.recv_into(buf):
                pass

        threading.Thread(target=drain, daemon=True).start()
        print(f"{'slice':>8} {'pread+send':>14} {'sendfile':>14}   (us per slice; MB/s)")
        for size in SIZES:
            n = max(20, (64 << 20) // size)
            row = []
            for mode in ("pread", "sendfile"):
                t0 = time.perf_counter()
                for i in range(n):
                    pos = (i * size) % (FILE_BYTES - size)
                    if mode == "pread":
                        sender.sendall(os.pread(fd, size, pos))
                    else:
                        sent = 0
                        while sent < size:
                            sent += os.sendfile(sender.fileno(), fd, pos + sent, size - sent)
                dt = time.perf_counter() - t0
                row.append(f"{dt / n * 1e6:7.1f} {size * n / dt / 1e6:6.0f}")
            print(f"{size:8d} {row[0]:>14} {row[1]:>14}")
        sender.close()
        client.close()
        srv.close()


if __name__ == "__main__":
    main()
