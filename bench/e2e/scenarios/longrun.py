"""longrun: a steady load for 30 minutes with a short retention, as a time series and a plot."""

import json
import os
import re
import time
import urllib.parse
import urllib.request

from bench import plotting

from ..settings import LATENESS, ROOT, SIZES, results_file, say
from ..figures import statement_name
from ..measure import pgss_hourglass, pgss_reset, psql
from ..process import Hourglass, RUNNING, run_driver
from ..results import record

def longrun():
    """A long steady run with retention: does anything grow or slow down with time?"""
    import threading
    z = SIZES["longrun"]
    say(f"\n== long run: {z['rate']} jobs/s for {z['duration']} s, due {z['min_delay']/1000:g}-{z['max_delay']/1000:g} s "
        f"ahead, --retention {z['retention']}; sampled every {z['every']} s")
    hg = Hourglass("longrun", "60s", extra=["--retention", z["retention"]]).start(); RUNNING.append(hg)
    samples, stop = [], threading.Event()

    def statements():
        out = {}
        for st in pgss_hourglass():
            agg = out.setdefault(statement_name(st["query"]), [0, 0.0, 0])
            agg[0] += st["calls"]; agg[1] += st["total_ms"]; agg[2] += st["rows"]
        return out

    def ms_per(now, before, name, index):  # index 0: per call, 2: per row
        count = now.get(name, [0, 0, 0])[index] - before.get(name, [0, 0, 0])[index]
        return round((now.get(name, [0, 0, 0])[1] - before.get(name, [0, 0, 0])[1]) / count, 4) if count > 0 else None

    def sample():
        t0, before = time.time(), statements()
        while not stop.wait(z["every"]):
            try:
                size, rows, ended = psql("SELECT pg_total_relation_size('jobs'), count(*), "
                                         "count(*) FILTER (WHERE state IN ('done', 'cancelled')) FROM jobs /* bench */;",
                                         hg.schema)[0]
                now = statements()
                text = urllib.request.urlopen(f"http://127.0.0.1:{hg.http_port}/metrics", timeout=5).read().decode()
                pruned = re.search(r"^hourglass_retention_rows_deleted_total (\S+)$", text, re.M)
                with open(f"/proc/{hg.proc.pid}/status") as f:
                    rss = next(int(l.split()[1]) / 1024 for l in f if l.startswith("VmRSS:"))
                samples.append({"t_s": round(time.time() - t0), "table_mb": round(int(size) / 2**20, 1),
                                "rows": int(rows), "ended_rows": int(ended), "rss_mb": round(rss, 1),
                                "rows_pruned": int(float(pruned.group(1))) if pruned else None,
                                "claim_ms_per_call": ms_per(now, before, "claim_due", 0),
                                "claim_us_per_row": round(1000 * (ms_per(now, before, "claim_due", 2) or 0), 1),
                                "insert_ms_per_call": ms_per(now, before, "insert_jobs", 0),
                                "insert_us_per_row": round(1000 * (ms_per(now, before, "insert_jobs", 2) or 0), 1)})
                before = now
            except Exception as e:  # a missed sample is shown as missing, not fatal
                say(f"   sample failed: {e}")

    pgss_reset()
    sampler = threading.Thread(target=sample, daemon=True); sampler.start()
    try:
        r = run_driver([LATENESS, "--mode", "hourglass", "--prefix", hg.prefix, "--pattern", "steady", "--scenario", "longrun",
                        "--rate", str(z["rate"]), "--duration", str(z["duration"]), "--min-delay", str(z["min_delay"]),
                        "--max-delay", str(z["max_delay"]), "--series-every", str(z["every"])],
                       "longrun hourglass", timeout=z["duration"] + 900)
    finally:
        stop.set(); sampler.join()
    # One row per interval: the driver's lateness (by receive time) beside the sampler's figures.
    by_t = {round(p["t_s"] / z["every"]): dict(p) for p in r.pop("series", [])}
    for smp in samples:
        by_t.setdefault(round(smp["t_s"] / z["every"]), {"t_s": smp["t_s"]}).update({k: v for k, v in smp.items() if k != "t_s"})
    r["series"] = [by_t[k] for k in sorted(by_t)]
    r["retention"] = z["retention"]
    r["hourglass_exit"] = hg.stop()
    base = os.path.splitext(results_file)[0] + "-longrun"
    with open(base + ".jsonl", "w") as f:
        for point in r["series"]:
            f.write(json.dumps(point) + "\n")
    r["plot"] = plot_longrun(r["series"], base + ".png", z)
    record("longrun", "hourglass", r)

def plot_longrun(series, png, z):
    """Four panels over time (gnuplot from Debian); returns the PNG's path, or None without gnuplot."""
    if not plotting.available():
        say("   gnuplot not found (apt-get install gnuplot-nox): no plot")
        return None
    dat = png[:-4] + ".dat"
    keys = ("t_s", "lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms", "table_mb", "rows", "rss_mb",
            "claim_ms_per_call", "insert_ms_per_call")
    with open(dat, "w") as f:
        f.write(plotting.data_lines([p.get(k) for k in keys] for p in series) + "\n")
    script = f"""set terminal pngcairo size 1200,900 font ",10"
set output "{png}"
set multiplot layout 2,2 title "hourglass: {z['rate']} jobs/s for {z['duration']} s, --retention {z['retention']}"
set xlabel "seconds"; set grid; set key top left
set title "lateness per {z['every']} s (ms)"; plot "{dat}" u 1:2 w lp t "p50", "" u 1:3 w lp t "p99", "" u 1:4 w lp t "max"
set title "hourglass.jobs"; set ylabel "MB"; set y2label "rows"; set y2tics
plot "{dat}" u 1:5 w lp t "table + indexes, MB", "" u 1:6 axes x1y2 w lp t "rows"
unset y2tics; unset y2label; set ylabel ""
set title "hourglass RSS (MB)"; set yrange [0:*]; plot "{dat}" u 1:7 w lp t "RSS"
set title "statement time (ms per call)"; plot "{dat}" u 1:8 w lp t "claim", "" u 1:9 w lp t "insert"
unset multiplot
"""
    try:
        plotting.draw(script)
    except RuntimeError as e:
        say(f"   {e}")
        return None
    say(f"   plot: {os.path.relpath(png, ROOT)}")
    return os.path.relpath(png, ROOT)
