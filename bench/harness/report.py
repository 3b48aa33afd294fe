"""The side-by-side benchmark's report: statistics over repetitions, the markdown table and
the PNG charts, all computed from the results JSON that bench/suites/side_by_side.py writes (so a
report can be re-made without re-running: ``python -m bench.harness.report bench/results/side_by_side.json``).
The report ends in the history table of earlier runs (bench/harness/history.py).

Results JSON: ``{"machine": {...}, "settings": {...}, "figures": [figure, ...],
"repetitions": [{"order": [...], "values": {figure_id: {"kbroker": x, "Kafka": y}},
"cpu": {...}, "errors": {...}}, ...]}``.  A figure is a dict with ``id``, ``group``
(produce, consume, latency, start, memory), ``label``, ``unit``, ``higher_is_better`` and,
for throughput, ``record_bytes`` (MB/s = records/s x record_bytes / 10^6); a figure with
a ``goal`` ([">=" or "<=", target ratio, wording]) gets a row in the goals table.

Every ratio is kbroker / Kafka, taken within one repetition (the two were measured minutes
apart at most, alternating), then summarised over repetitions: median, min, max.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import history

KB, KAFKA = "kbroker", "Kafka"
BROKERS = (KB, KAFKA)

@dataclass(frozen=True)
class Summary:
    median: float
    lo: float
    hi: float
    n: int

    def cell(self, fmt: str) -> str:
        if self.n == 1:
            return format(self.median, fmt)
        return f"{format(self.median, fmt)} ({format(self.lo, fmt)}–{format(self.hi, fmt)})"


def summarise(values: list[float]) -> Summary | None:
    if not values:
        return None
    return Summary(statistics.median(values), min(values), max(values), len(values))


def series(results: dict[str, Any], fid: str, broker: str) -> list[float]:
    return [r["values"][fid][broker] for r in results["repetitions"]
            if r["values"].get(fid, {}).get(broker) is not None]


def ratios(results: dict[str, Any], fid: str) -> list[float]:
    """kbroker/Kafka per repetition, only where both were measured in it."""
    out = []
    for r in results["repetitions"]:
        v = r["values"].get(fid, {})
        if v.get(KB) is not None and v.get(KAFKA):
            out.append(v[KB] / v[KAFKA])
    return out


def cpu_series(results: dict[str, Any], fid: str, broker: str, key: str = "cpu") -> list[float]:
    """CPU-seconds per repetition: the broker's (``cpu``) or the client's (``client_cpu``)."""
    return [r[key][fid][broker] for r in results["repetitions"]
            if r.get(key, {}).get(fid, {}).get(broker) is not None]


def _fmt(s: Summary | None, fmt: str, scale: float = 1.0, missing: str = "failed") -> str:
    if s is None:
        return missing
    return Summary(s.median * scale, s.lo * scale, s.hi * scale, s.n).cell(fmt)


def goal_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(goal, figure, measured ratio, met?) for every figure a goal applies to."""
    rows = []
    for fig in results["figures"]:
        if "goal" not in fig:
            continue
        op, target, words = fig["goal"]
        s = summarise(ratios(results, fig["id"]))
        if s is None:
            rows.append((words, fig["label"], "not measured", "—"))
            continue
        met = s.median >= target if op == ">=" else s.median <= target
        rows.append((words, fig["label"], s.cell(".2f") + "x", "yes" if met else "**no**"))
    return rows


def markdown(results: dict[str, Any]) -> str:
    m, st = results["machine"], results["settings"]
    reps = len(results["repetitions"])
    figs = results["figures"]
    out = [f"# kbroker beside Apache Kafka ({st['mode']})", ""]
    out += [f"Measured {results['finished']}, {reps} repetition{'s' if reps != 1 else ''}; each "
            "cell is the median over repetitions with (min–max); every ratio is kbroker/Kafka "
            "taken within one repetition, then summarised the same way. Within a repetition the "
            "two brokers run side by side and each workload runs on one then the other "
            f"(order alternates per repetition: {', '.join('→'.join(r['order']) for r in results['repetitions'])}).",
            ""]
    out += ["## Machine", "", "| | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in m.items()]
    out += ["", "## Goals (ratio kbroker/Kafka, median over repetitions)", "",
            "| goal | figure | measured ratio | met |", "|---|---|---|---|"]
    out += [f"| {g} | {f} | {r} | {ok} |" for g, f, r, ok in goal_rows(results)]

    out += ["", "## Throughput", "",
            "MB = 10^6 bytes of record values. Broker CPU = user+system seconds the broker process "
            "spent during the workload. Client CPU = the same for the client: the bench process "
            "(confluent-kafka, librdkafka's threads included) and the processes it ran (the Java "
            "tool's JVM, its start-up included, which the tool's own timing leaves out; the latency "
            "reader); where it is several times the broker's, the client set the pace.", "",
            "| workload | kbroker MB/s | Kafka MB/s | kbroker records/s | Kafka records/s | ratio | "
            "broker CPU s kbroker | broker CPU s Kafka | client CPU s kbroker | client CPU s Kafka |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for f in figs:
        if f["group"] not in ("produce", "consume"):
            continue
        mb = f["record_bytes"] / 1e6
        kb, ka = summarise(series(results, f["id"], KB)), summarise(series(results, f["id"], KAFKA))
        out.append(f"| {f['label']} | {_fmt(kb, '.1f', mb)} | {_fmt(ka, '.1f', mb)} | {_fmt(kb, ',.0f')} | "
                   f"{_fmt(ka, ',.0f')} | {_fmt(summarise(ratios(results, f['id'])), '.2f')} | "
                   f"{_fmt(summarise(cpu_series(results, f['id'], KB)), '.1f')} | "
                   f"{_fmt(summarise(cpu_series(results, f['id'], KAFKA)), '.1f')} | "
                   f"{_fmt(summarise(cpu_series(results, f['id'], KB, 'client_cpu')), '.1f', missing='—')} | "
                   f"{_fmt(summarise(cpu_series(results, f['id'], KAFKA, 'client_cpu')), '.1f', missing='—')} |")

    for group, title in (("latency", "End-to-end latency"), ("start", "Cold start"), ("memory", "Memory")):
        out += ["", f"## {title}", "", "| figure | kbroker | Kafka | ratio |", "|---|---|---|---|"]
        for f in figs:
            if f["group"] != group:
                continue
            kb, ka = summarise(series(results, f["id"], KB)), summarise(series(results, f["id"], KAFKA))
            fmt = ".2f" if f["unit"] in ("ms", "s") else ".0f"
            out.append(f"| {f['label']} ({f['unit']}) | {_fmt(kb, fmt)} | {_fmt(ka, fmt)} | "
                       f"{_fmt(summarise(ratios(results, f['id'])), '.2f')} |")

    errors = [(i, fid, b, e) for i, r in enumerate(results["repetitions"])
              for fid, per in r.get("errors", {}).items() for b, e in per.items()]
    if errors:
        out += ["", "## Failures", ""]
        out += [f"- repetition {i + 1}, {fid}, {b}: {e}" for i, fid, b, e in errors]
    out += ["", "## Settings", ""]
    out += [f"- {k}: {v}" for k, v in st.items()]
    stem = stem_of(st)
    out += ["", f"Charts: [{stem}_throughput.png]({stem}_throughput.png), [{stem}_latency.png]({stem}_latency.png). "
            f"Raw values per repetition: [{stem}.json]({stem}.json).", ""]
    return "\n".join(out)


def stem_of(settings: dict[str, Any]) -> str:
    """The report's file name without suffix: side_by_side (make bench) or side_by_side_quick."""
    return "side_by_side" if settings.get("mode", "full") == "full" else f"side_by_side_{settings['mode']}"


# (history column, figure ids whose median ratios it shows, joined by " / ")
HISTORY_COLUMNS = (
    ("produce confluent 1 KiB acks=1 / all", ("produce.confluent-1024-acks1", "produce.confluent-1024-acksall")),
    ("produce confluent 100 B acks=1 / all", ("produce.confluent-100-acks1", "produce.confluent-100-acksall")),
    ("produce Java 1 KiB acks=1 / all", ("produce.java-1024-acks1", "produce.java-1024-acksall")),
    ("produce Java 100 B acks=1 / all", ("produce.java-100-acks1", "produce.java-100-acksall")),
    ("consume confluent / Java", ("consume.confluent", "consume.java")),
    ("e2e p99 at 1,000 / 10,000 rec/s", ("latency.1000.p99", "latency.10000.p99")),
    ("e2e p99.9 at 1,000 / 10,000 rec/s", ("latency.1000.p99.9", "latency.10000.p99.9")),
    ("cold start", ("start.cold",)),
    ("peak RSS", ("memory.peak_rss",)),
)


def history_row(results: dict[str, Any]) -> dict[str, str]:
    """This run's row of the history table: median ratio kbroker/Kafka of the headline figures."""
    row = {"finished": results["finished"], "kbroker": history.commit_of(results["machine"]),
           "reps": str(len(results["repetitions"]))}
    for column, fids in HISTORY_COLUMNS:
        row[column] = " / ".join(history.median_cell(ratios(results, fid)) for fid in fids)
    return row


def charts(results: dict[str, Any], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {KB: "#1f77b4", KAFKA: "#d62728"}
    written = []

    def bars(ax: Any, figs: list[dict[str, Any]], scale: Any) -> None:
        width = 0.38
        for j, b in enumerate(BROKERS):
            meds, lo, hi = [], [], []
            for f in figs:
                s = summarise(series(results, f["id"], b))
                k = scale(f)
                med = s.median * k if s else 0.0
                meds.append(med)
                lo.append(med - s.lo * k if s else 0.0)
                hi.append(s.hi * k - med if s else 0.0)
            xs = [i + (j - 0.5) * width for i in range(len(figs))]
            ax.bar(xs, meds, width, yerr=[lo, hi], capsize=3, label=b, color=colors[b])
        labels = []
        for f in figs:
            r = summarise(ratios(results, f["id"]))
            labels.append(f["short"] + (f"\n{r.median:.2f}x" if r is not None else "\n—"))
        ax.set_xticks(range(len(figs)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.legend()

    def chart(name: str, groups: tuple[str, ...], scale: Any, ylabel: str, title: str, log: bool) -> None:
        figs = [f for f in results["figures"] if f["group"] in groups]
        fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(figs)), 5))
        bars(ax, figs, scale)
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        fig.tight_layout()
        written.append(out_dir / name)
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)

    stem = stem_of(results["settings"])
    chart(f"{stem}_throughput.png", ("produce", "consume"), lambda f: f["record_bytes"] / 1e6,
          "MB/s (10^6 B of values)",
          "Throughput, median (min–max bars); kbroker/Kafka ratio under each label", log=False)
    chart(f"{stem}_latency.png", ("latency",), lambda f: 1.0, "produce-to-consume latency, ms (log scale)",
          "End-to-end latency at fixed rates; kbroker/Kafka ratio under each label", log=True)
    return written


def write(results: dict[str, Any], out_dir: Path, same_run: bool = False) -> Path:
    """<stem>.json, <stem>.md (this run, then the history with this run's row; ``same_run``:
    replacing the row an earlier repetition of this run wrote) and the charts."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = stem_of(results["settings"])
    (out_dir / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n")
    md = out_dir / f"{stem}.md"
    history.write_report(md, markdown(results), history_row(results), same_run)
    charts(results, out_dir)
    return md


def main() -> None:
    ap = argparse.ArgumentParser(description="re-make the report from a side_by_side.json")
    ap.add_argument("json", type=Path)
    args = ap.parse_args()
    results = json.loads(args.json.read_text())
    print(write(results, args.json.parent))


if __name__ == "__main__":
    main()
