#!/usr/bin/env python3
"""Plots the hotspot drain of each peer, side by side, from a peers JSON-lines file (gnuplot).

Usage: bench/plots/peers_hotspot.py RESULTS.jsonl OUT.png
Reads the hotspot lines (spread 0) of peers run with their default options (lines carrying a
`hourglass_setting` or a `diagnosis` are left out), groups them by job count, and draws one
bar per peer: the median drain (due instant to last job handled). BullMQ runs on Redis; it is
drawn beside the broker of the batches it ran in, so a file should hold the batches of one
broker (see bench/journal/2026-11-22-to-12-04.md).
"""
import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict

PEERS = ["hourglass", "bullmq", "rabbitmq-ttl-dlx"]
LABELS = {"hourglass": "hourglass", "bullmq": "BullMQ", "rabbitmq-ttl-dlx": "TTL queue alone"}


def broker_of(rows):
    for row in rows:
        match = re.search(r"RabbitMQ ([\d.]+)", row.get("version", ""))
        if match:
            return match.group(1)
    return "?"


def main(results, out):
    rows = [json.loads(line) for line in open(results, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r.get("S") == 0 and r["peer"] in PEERS
            and "hourglass_setting" not in r and "diagnosis" not in r]
    if not rows:
        sys.exit(f"{results}: no hotspot line of a peer with its default options")
    drains = defaultdict(list)  # (jobs, peer) -> drains in seconds
    for row in rows:
        drains[(row["N"], row["peer"])].append(row["metrics"]["hotspot"]["drain_s"])
    counts = sorted({jobs for jobs, _ in drains})
    data = []
    for jobs in counts:
        cells = []
        for peer in PEERS:
            values = drains.get((jobs, peer), [])
            cells.append(f"{statistics.median(values):.3f}" if values else "NaN")
        data.append(f'"{jobs:,}" ' + " ".join(cells))
    block = "\n".join(data) + "\ne\n"
    plots = ", ".join(
        f"'-' using {2 + i}:xtic(1) title '{LABELS[peer]}'" for i, peer in enumerate(PEERS))
    script = f"""set terminal png size 800,450
set output '{out}'
set title 'Hotspot drain beside the peers (peers harness, RabbitMQ {broker_of(rows)}, 2 cores, median)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xlabel 'jobs due at one instant'
set ylabel 'drain, s (due instant to last job handled)'
set yrange [0:*]
set grid ytics
set key top left
plot {plots}
{block * len(PEERS)}"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
