#!/usr/bin/env python3
"""Plots the scale-out scenario of scripts/bench: ingest and hotspot by number of instances.

Usage: python3 -m bench.plots.scaleout RESULTS.jsonl OUT.png [RUN]
Reads the `scaleout` lines of one bench run (the last one in the file unless RUN is given) and
draws, per instance count, the acked ingest rate and the hotspot drain (gnuplot).
"""
import sys

from bench import plotting


def main(results, out, run=None):
    rows = plotting.read_results(results, "scaleout")
    if not rows:
        sys.exit(f"{results}: no scaleout line")
    run = run or rows[-1]["run"]
    rows = sorted((r for r in rows if r["run"] == run), key=lambda r: r["instances"])
    if not rows:
        sys.exit(f"{results}: no scaleout line of run {run}")
    machine = rows[0]["machine"]
    jobs = rows[0]["hotspot"]["jobs"]
    ingest = "\n".join(f"{r['instances']} {r['ingest']['acked_per_s']:.0f}" for r in rows)
    drain = "\n".join(f"{r['instances']} {r['hotspot']['lateness_max_ms'] / 1000:.3f}" for r in rows)
    script = f"""set terminal png size 900,420
set output '{out}'
set multiplot layout 1,2 title 'hourglass instances on one database (run {run}, RabbitMQ {machine["rabbitmq"]}, PostgreSQL {machine["postgresql"]}, {machine["cpus"]} cores)'
set style fill solid 0.6
set boxwidth 0.5
set grid ytics
set xtics 1
set xrange [0.4:{len(rows) + 0.6}]
set yrange [0:*]
set xlabel 'instances'
set title 'ingest, committed and acked'
set ylabel 'jobs/s'
plot '-' using 1:2 with boxes notitle
{ingest}
e
set title 'hotspot: {jobs:,} jobs due at one instant'
set ylabel 'last release after the instant, s'
plot '-' using 1:2 with boxes notitle
{drain}
e
unset multiplot
"""
    plotting.draw(script)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
