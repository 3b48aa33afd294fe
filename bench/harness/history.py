"""One report per suite, with a history table of its runs instead of a folder per run.

A suite's report (``bench/results/<name>.md``) is two parts:

* the latest run, generated: what the suite's ``markdown(results)`` returns;
* from ``MARKER`` on, what is kept from run to run: a ``## History`` table with one row per
  run (oldest first; the last row is the run the report above shows), and after it any text
  written by hand (findings, the story of a figure).

``write_report(path, body, row)`` writes ``body``, then the kept part of the file already
there with ``row`` added to its table (a row whose cells equal those of a row already there
is not added twice, so re-making a report from its JSON does not repeat it).  A suite that rewrites its report
after every repetition passes ``same_run=True`` after the first: the run's row is then
replaced, not added again.  The columns are the table's; a
row's keys the table lacks become new columns, empty in the older rows.  The suite's
``.json`` holds the latest run's raw values only: an older run's are in git history.
"""

from __future__ import annotations

import statistics
from pathlib import Path

MARKER = "<!-- history: kept by every run (bench/harness/history.py); the rows and any text below it stay -->"
HEADING = "## History"
INTRO = ("One row per run, oldest first; the report above is the last row's. Ratios are "
         "kbroker/Kafka, median over the run's repetitions.")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def add_row(kept: str, row: dict[str, str], same_run: bool = False) -> str:
    """``kept`` (the part from MARKER on, or "") with ``row`` added to its history table."""
    if not kept.strip():
        kept = f"{MARKER}\n{HEADING}\n\n{INTRO}\n\n"
    lines = kept.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:                      # a kept part without a table yet: it ends the part
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", _line(list(row)), _line(["---"] * len(row))]
        start = len(lines) - 2
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    header = _cells(lines[start])
    rows = [_cells(line) for line in lines[start + 2:end]]
    extra = [k for k in row if k not in header]
    header += extra
    rows = [r + [""] * (len(header) - len(r)) for r in rows]
    new = [row.get(h, "") for h in header]
    keyed = [i for i, h in enumerate(header) if h in row]   # a row's notes added by hand do not count

    def same(r: list[str]) -> bool:
        return all(r[i] == new[i] for i in keyed)
    if same_run and rows:
        rows[-1] = new
    elif not any(same(r) for r in rows):
        rows.append(new)
    table = [_line(header), _line(["---"] * len(header))] + [_line(r) for r in rows]
    return "\n".join(lines[:start] + table + lines[end:])


def kept_part(text: str) -> str:
    i = text.find(MARKER)
    return text[i:] if i >= 0 else ""


def write_report(path: Path, body: str, row: dict[str, str], same_run: bool = False) -> None:
    """Write the report ``path``: ``body`` (this run), then the history with ``row`` added
    (``same_run``: in place of the last row, which an earlier repetition of this run wrote)."""
    old = path.read_text() if path.exists() else ""
    kept = add_row(kept_part(old), row, same_run)
    path.write_text(body.rstrip("\n") + "\n\n" + kept.rstrip("\n") + "\n")


def commit_of(machine_facts: dict[str, str]) -> str:
    """The kbroker revision a run measured, as bench.harness.machine states it ("git 1a2b3c4")."""
    value = machine_facts.get("kbroker", "")
    return value.removeprefix("git ").replace(" (with uncommitted changes)", "+")


def ratio_cell(x: float) -> str:
    """A ratio for a history cell: two decimals, or two significant digits below 0.1."""
    return f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"


def median_cell(xs: list[float], fmt: str | None = None) -> str:
    """The median of ``xs`` for a history cell ("—" when nothing was measured); a ratio
    unless ``fmt`` says otherwise."""
    if not xs:
        return "—"
    m = statistics.median(xs)
    return ratio_cell(m) if fmt is None else format(m, fmt)
