#!/usr/bin/env python3
"""Plots how fast the consumers' queues took a burst, by how it arrived, per broker (gnuplot).

Usage: python3 -m bench.plots.queue_intake RESULTS.jsonl OUT.png
Reads the lines of bench_e2e_queue_intake (scenario "queue-intake", or "intake" from
scripts/bench), groups them by arrival (with its --pace, --queue-ttl or --queues) and by the
broker named at the start of their label
("rabbitmq 4.3.6 round 1" -> "rabbitmq 4.3.6"), and draws the median drain of each as a bar,
one colour per broker.
"""
import statistics
import sys

from bench import plotting


def arrival_name(row):
    name = row["arrival"]
    if row.get("pace_per_s"):
        name += f", paced {row['pace_per_s'] // 1000}k/s"
    if row.get("pace_chunk", 1) > 1:
        name += f" in chunks of {row['pace_chunk']}"
    if row.get("queue_ttl_ms"):
        name += ", queue TTL"
    if row.get("release_headers"):
        name += ", release headers"
    if row.get("release_route"):
        name += ", release route"
    if row.get("queues", 1) > 1:
        name += f", over {row['queues']} queues"
    return name


def main(results, out):
    rows = plotting.read_results(results)
    rows = [r for r in rows if r.get("scenario") in ("queue-intake", "intake")]
    if not rows:
        sys.exit(f"{results}: no queue-intake line")
    brokers, arrivals, drains = [], [], {}
    for row in rows:
        broker = " ".join(row.get("label", "").split()[:2]) or "broker"
        arrival = arrival_name(row)
        if broker not in brokers:
            brokers.append(broker)
        if arrival not in arrivals:
            arrivals.append(arrival)
        drains.setdefault((arrival, broker), []).append(row["drain_s"])
    plots = ", ".join(f"'-' using 2:xtic(1) title '{b}'" if i == 0 else f"'-' using 2 title '{b}'"
                      for i, b in enumerate(brokers))
    data = "\n".join(
        "\n".join(f'"{a}" {statistics.median(drains.get((a, b), [0])):.3f}' for a in arrivals) + "\ne"
        for b in brokers)
    messages = sorted({r["messages"] for r in rows})
    script = f"""set terminal png size 1100,600
set output '{out}'
set title 'Queues taking {", ".join(f"{n:,}" for n in messages)} messages, by arrival (median drain)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.6 border -1
set ylabel 'drain, s (to the last message handled)'
set yrange [0:*]
set grid ytics
set xtics rotate by -30 left font ',9'
set bmargin 12
set rmargin 24
set key top left
plot {plots}
{data}
"""
    plotting.draw(script)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
