"""The results of this run: each measurement becomes one JSON line in the results file."""

import datetime
import json
import os

from .settings import COMMIT, MACHINE, Q, RUN_ID, results_file
from .measure import psql

RESULTS = []

def record(scenario, mode, data):
    line = {"run": RUN_ID, "date": datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z",
            "scenario": scenario, "mode": mode, "quick": Q, "commit": COMMIT, "machine": MACHINE}
    line.update(data)
    line["scenario"] = scenario
    line["mode"] = mode
    RESULTS.append(line)
    os.makedirs(os.path.dirname(results_file), exist_ok=True)
    with open(results_file, "a") as f:
        f.write(json.dumps(line, sort_keys=False) + "\n")
    return line

def hourglass_view(schema):
    rows = psql("SELECT pending, enqueued, done, cancelled, lateness_p50_ms, lateness_p99_ms, lateness_max_ms FROM stats;", schema)
    if not rows:
        return {}
    p, e, d, c, p50, p99, mx = rows[0]
    f = lambda x: round(float(x), 2) if x else None
    return {"pending": int(p), "enqueued": int(e), "done": int(d), "cancelled": int(c),
            "audit_p50_ms": f(p50), "audit_p99_ms": f(p99), "audit_max_ms": f(mx)}

def find(scenario, mode):
    for r in RESULTS:
        if r["scenario"] == scenario and r["mode"] == mode:
            return r
    return None
