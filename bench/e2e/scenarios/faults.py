"""chaos: the fault campaign (bench/chaos) under a steady load, hotspots and cron."""

import json
import os
import shutil
import subprocess
import sys

from ..settings import CHAOS, HG, LOGS, MACHINE, ROOT, RUN_ID, SERVICES, SIZES, results_file, say
from ..results import record

def chaos():
    """The fault campaign (bench/chaos, python3 -m bench.chaos): its own table; fails the run
    if a job was lost, early, parked or released twice with no fault to explain it."""
    z = SIZES["chaos"]
    out = os.path.join(LOGS, "chaos")
    label = f"{z['instances']} instances, {z['minutes']} min, RabbitMQ {MACHINE['rabbitmq']}, PostgreSQL {MACHINE['postgresql']}"
    cmd = [sys.executable, "-m", "bench.chaos", "--minutes", str(z["minutes"]), "--instances", str(z["instances"]),
           "--every", str(z["every"]), "--rate", str(z["rate"]), "--hotspot-jobs", str(z["hotspot_jobs"]),
           "--hotspot-every", str(z["hotspot_every"]), "--hourglass", HG, "--driver", CHAOS,
           "--services", SERVICES, "--out", out, "--label", label]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=z["minutes"] * 60 + 1800)
    say(p.stdout.rstrip())
    if p.stderr.strip():
        with open(os.path.join(LOGS, "chaos.stderr"), "w") as f:
            f.write(p.stderr)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    record("chaos", "hourglass", summary)
    for name in ("chaos.png", "summary.json", "faults.json"):
        if os.path.exists(os.path.join(out, name)):
            shutil.copy(os.path.join(out, name), os.path.join(os.path.dirname(results_file), f"{RUN_ID}-{name}"))
    if p.returncode != 0:
        raise RuntimeError("an invariant of each job once broke under faults (table above; logs in " + out + ")")
