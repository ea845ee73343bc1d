#!/usr/bin/env python3
"""Plots the hotspot drain of each variant of hourglass tried in one series (gnuplot).

Usage: python3 -m bench.plots.drain_variants RESULTS.jsonl OUT.png
Reads the lines that carry a `variant` (an experiment's label), in the order the variants first
appear, and draws for each the median drain as a bar and every run as a point. Lines of the
peers harness give their drain (`metrics.hotspot.drain_s`); lines of bench_e2e_lateness give
the last release after the instant (`lateness_max_ms`).
"""
import statistics
import sys

from bench import plotting


def drain_s(row):
    if "metrics" in row:
        return row["metrics"]["hotspot"]["drain_s"]
    return row["lateness_max_ms"] / 1000.0


def main(results, out):
    rows = plotting.read_results(results)
    drains = {}  # variant -> drains in seconds, in file order
    for row in rows:
        if "variant" in row:
            drains.setdefault(row["variant"], []).append(drain_s(row))
    if not drains:
        sys.exit(f"{results}: no line with a variant")
    bars = "\n".join(f'{i} {statistics.median(v):.3f} "{name}"'
                     for i, (name, v) in enumerate(drains.items()))
    points = "\n".join(f"{i} {d:.3f}" for i, v in enumerate(drains.values()) for d in v)
    jobs = sorted({row.get("N", row.get("jobs")) for row in rows if "variant" in row})
    script = f"""set terminal png size 900,520
set output '{out}'
set title 'Hotspot drain of {", ".join(f"{n:,}" for n in jobs)} jobs by variant (median bar, each run a point)'
set style fill solid 0.5 border -1
set boxwidth 0.6
set ylabel 'drain, s (due instant to last job handled)'
set yrange [0:*]
set xrange [-0.6:{len(drains) - 0.4}]
set grid ytics
set key off
set xtics rotate by -30 left font ',9'
set bmargin 9
plot '-' using 1:2:xtic(3) with boxes, '-' using 1:2 with points pt 7 ps 1.2
{bars}
e
{points}
e
"""
    plotting.draw(script)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
