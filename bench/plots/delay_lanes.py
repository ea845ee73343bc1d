#!/usr/bin/env python3
"""Plots the hotspot drain against --delay-lanes from a peers JSON-lines file (gnuplot).

Usage: bench/plots/delay_lanes.py RESULTS.jsonl OUT.png
Reads the hourglass lines whose `hourglass_setting` is "--delay-lanes N" (audit on), groups
them by job count, and draws the median drain (due instant to last job handled) per lane count.
"""
import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict


def main(results, out):
    drains = defaultdict(list)  # (jobs, lanes) -> drains in seconds
    for line in open(results, encoding="utf-8"):
        row = json.loads(line)
        match = re.fullmatch(r"--delay-lanes (\d+)", row.get("hourglass_setting", ""))
        if row["peer"] != "hourglass" or not match:
            continue
        drains[(row["N"], int(match.group(1)))].append(row["metrics"]["hotspot"]["drain_s"])
    if not drains:
        sys.exit(f"{results}: no hourglass line with a --delay-lanes setting")
    blocks = []
    for jobs in sorted({jobs for jobs, _ in drains}):
        points = sorted((lanes, statistics.median(values))
                        for (n, lanes), values in drains.items() if n == jobs)
        blocks.append((jobs, "\n".join(f"{lanes} {drain:.3f}" for lanes, drain in points)))
    plots = ", ".join(f"'-' using 1:2 with linespoints lw 2 title '{jobs:,} jobs due at one instant'"
                      for jobs, _ in blocks)
    data = "\n".join(block + "\ne" for _, block in blocks)
    script = f"""set terminal png size 800,450
set output '{out}'
set title 'Hotspot drain by delay lanes (peers harness, RabbitMQ 3.10.8, 2 cores, median)'
set xlabel '--delay-lanes'
set ylabel 'drain, s (due instant to last job handled)'
set logscale x 2
set xtics (1, 2, 4, 8, 16)
set xrange [0.8:20]
set yrange [0:*]
set grid
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
