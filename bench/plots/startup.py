#!/usr/bin/env python3
"""Plots start-up times by broker and variant (gnuplot).

Usage: python3 -m bench.plots.startup RESULTS.jsonl OUT.png
Reads lines with `first_start_s` and `second_start_s` (time from `hourglass run` to its
"hourglass running" line on a new prefix, then again on the same one), grouped by `broker` and
`variant` in the order they first appear, and draws the median first start as a bar and every
first and second start as a point.
"""
import statistics
import sys

from bench import plotting


def main(results, out):
    rows = plotting.read_results(results)
    groups = {}  # (broker, variant) -> rows, in file order
    for row in rows:
        if "first_start_s" in row:
            key = (row["broker"] + (f", {row['queue_type']}" if "queue_type" in row else ""),
                   row["variant"])
            groups.setdefault(key, []).append(row)
    if not groups:
        sys.exit(f"{results}: no line with first_start_s")
    bars = "\n".join(
        f'{i} {statistics.median(r["first_start_s"] for r in g):.3f} "{broker}\\n{variant}"'
        for i, ((broker, variant), g) in enumerate(groups.items()))
    firsts = "\n".join(f"{i} {r['first_start_s']:.3f}" for i, g in enumerate(groups.values()) for r in g)
    seconds = "\n".join(f"{i} {r['second_start_s']:.3f}" for i, g in enumerate(groups.values()) for r in g)
    script = f"""set terminal png size 1100,560
set output '{out}'
set title 'Start-up: time to "hourglass running" (median first start as a bar; every start a point)'
set style fill solid 0.5 border -1
set boxwidth 0.6
set ylabel 'seconds'
set yrange [0:*]
set xrange [-0.6:{len(groups) - 0.4}]
set grid ytics
set key top left
set xtics rotate by -25 left font ',8'
set bmargin 11
set rmargin 16
plot '-' using 1:2:xtic(3) with boxes title 'first start (median)', \\
     '-' using 1:2 with points pt 7 ps 1.1 title 'first start', \\
     '-' using 1:2 with points pt 6 ps 1.1 title 'second start'
{bars}
e
{firsts}
e
{seconds}
e
"""
    plotting.draw(script)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
