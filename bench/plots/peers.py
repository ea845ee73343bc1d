#!/usr/bin/env python3
"""Plots the peers scenario of scripts/bench: each peer's steady lateness and hotspot drain.

Usage: python3 -m bench.plots.peers RESULTS.jsonl OUT.png [RUN]
Reads the `peers-steady` and `peers-hotspot` lines of one run (the last one in the file unless
RUN is given; the medians when the run had rounds) and draws two panels: the lateness p50, p99
and max of each peer on a log scale (they differ by two orders of magnitude), and the time from
the hotspot's instant to its last job handled.
"""
import sys

from bench import plotting

LABELS = {"hourglass": "hourglass", "bullmq": "BullMQ", "pgboss": "pg-boss", "graphile": "graphile-worker"}
SHAPES = ("steady", "hotspot")


def lines_of(rows, run):
    """The peers lines of `run`, one per (shape, peer): the medians if there were rounds."""
    return {(r["scenario"].split("-")[1], r["mode"]): r for r in rows
            if r["run"] == run and r["scenario"] in ("peers-steady", "peers-hotspot")}


def main(results, out, run=None):
    rows = [r for r in plotting.read_results(results) if r.get("scenario", "").startswith("peers-")]
    if not rows:
        sys.exit(f"{results}: no peers line")
    run = run or rows[-1]["run"]
    lines = lines_of(rows, run)
    peers = [p for p in LABELS if any((shape, p) in lines for shape in SHAPES)]
    steady = plotting.data_block(
        (f'"{LABELS[p]}"', *(lines.get(("steady", p), {}).get(k)
                             for k in ("lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms"))) for p in peers)
    hotspot = plotting.data_block((f'"{LABELS[p]}"', lines.get(("hotspot", p), {}).get("drain_s")) for p in peers)
    jobs = next((r["jobs_requested"] for (shape, _), r in lines.items() if shape == "hotspot"), 0)
    machine = rows[-1]["machine"]
    script = f"""set terminal png size 1100,450
set output '{out}'
set multiplot layout 1,2 title 'hourglass and its peers, measured alike (run {run}, RabbitMQ {machine["rabbitmq"]}, PostgreSQL {machine["postgresql"]}, {machine["cpus"]} cores)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key top left
set xtics font ',9'
set title 'steady: lateness, ms (log scale)'
set logscale y
plot '-' using 2:xtic(1) title 'p50', '-' using 3 title 'p99', '-' using 4 title 'max'
{steady}
{steady}
{steady}
unset logscale y
set yrange [0:*]
set title 'hotspot of {jobs:,}: last handled after the instant, s'
plot '-' using 2:xtic(1) notitle
{hotspot}
unset multiplot
"""
    plotting.draw(script)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
