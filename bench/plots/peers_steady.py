#!/usr/bin/env python3
"""Plots the steady lateness of each peer, side by side, from a peers JSON-lines file (gnuplot).

Usage: bench/plots/peers_steady.py RESULTS.jsonl OUT.png
Reads the lines with a spread (S > 0), groups them by peer and by the RabbitMQ version of their
batch (taken from the hourglass and TTL-queue lines; the PostgreSQL and Redis peers are drawn
beside the broker of the batch they ran in), and draws the median p50, p99 and max lateness of
each, on a log scale: the peers differ by two orders of magnitude.
"""
import json
import re
import statistics
import subprocess
import sys

PEERS = ["hourglass", "rabbitmq-ttl-dlx", "bullmq", "pg-boss", "graphile-worker"]
LABELS = {"hourglass": "hourglass", "rabbitmq-ttl-dlx": "TTL queue alone", "bullmq": "BullMQ",
          "pg-boss": "pg-boss", "graphile-worker": "graphile-worker"}
FIGURES = ["p50", "p99", "max"]


def main(results, out):
    rows = [json.loads(line) for line in open(results, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r.get("S", 0) > 0]
    if not rows:
        sys.exit(f"{results}: no steady (spread > 0) line")
    # A batch runs every peer in turn; the broker of the batch is named by its RabbitMQ peers.
    broker, values = "?", {}
    for row in rows:
        match = re.search(r"RabbitMQ ([\d.]+)", row.get("version", ""))
        if match:
            broker = match.group(1)
        for figure in FIGURES:
            values.setdefault((row["peer"], broker, figure), []).append(
                row["metrics"]["lateness_ms"][figure])
    brokers = sorted({b for (_, b, _) in values})
    columns = [(b, f) for b in brokers for f in FIGURES]
    peers = [p for p in PEERS if any(k[0] == p for k in values)]
    plots = ", ".join(
        (f"'-' using 2:xtic(1) title 'RabbitMQ {b}: {f}'" if i == 0 else f"'-' using 2 title 'RabbitMQ {b}: {f}'")
        for i, (b, f) in enumerate(columns))
    data = "\n".join(
        "\n".join(f'"{LABELS[p]}" {statistics.median(values.get((p, b, f), [0])):.2f}' for p in peers) + "\ne"
        for b, f in columns)
    n = sorted({r["N"] for r in rows})
    spread = sorted({r["S"] for r in rows})
    script = f"""set terminal png size 1100,600
set output '{out}'
set title 'Lateness of {", ".join(f"{x:,}" for x in n)} jobs over {", ".join(map(str, spread))} s (median of batches)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.6 border -1
set logscale y
set ylabel 'lateness, ms (log scale)'
set grid ytics
set key top left
plot {plots}
{data}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
