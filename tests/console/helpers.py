"""Running ``kbroker console`` as a process and reading its pages without a browser."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import threading
import time
import urllib.request

from tests.support.broker_process import ROOT, free_port

_LISTENING = re.compile(r"console on (http://\S+/)")


class ConsoleProcess:
    def __init__(self, bootstrap: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kbroker", "console", "--bootstrap-server", bootstrap,
             "--listen", f"http://127.0.0.1:{free_port()}"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def url(self, timeout_s: float = 120.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = _LISTENING.search(line)
                if m:
                    return m.group(1)
            assert self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.1)
        raise AssertionError("the console did not say where it listens:\n" + "".join(self.lines))

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(60)


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.status == 200
        return html.unescape(resp.read().decode())


def cells(page: str, table_id: str) -> list[list[str]]:
    """The text of each body row of one table of a page."""
    body = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
