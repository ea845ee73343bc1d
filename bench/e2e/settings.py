"""What a run of the benchmarks is given: the services (from scripts/bench's environment), the
command line, the sizes of each scenario, and the machine and commit the figures are measured on."""

import argparse
import datetime
import hashlib
import os
import platform
import re
import subprocess
import statistics
import sys
import time
import urllib.parse
import urllib.request

ROOT = os.environ["BENCH_ROOT"]

BUILD = os.path.join(ROOT, os.environ["BENCH_BUILD"]) if not os.path.isabs(os.environ["BENCH_BUILD"]) else os.environ["BENCH_BUILD"]

SERVICES = os.environ["BENCH_SERVICES_DIR"]

LOGS = os.path.join(SERVICES, "bench")

AMQP_URL = os.environ["HOURGLASS_AMQP_URL"]

PG_URL = os.environ["HOURGLASS_PG_URL"]

# hourglass's own PostgreSQL role (scripts/services: the least-privilege hourglass_app), whose
# statements pg_stat_statements counts.
PG_ROLE = urllib.parse.urlparse(PG_URL).username or "hourglass"

if not re.fullmatch(r"[a-z_][a-z0-9_]*", PG_ROLE):
    sys.exit(f"bench: unexpected PostgreSQL role name {PG_ROLE!r} in HOURGLASS_PG_URL")

MGMT_URL = os.environ["HOURGLASS_RABBIT_MGMT_URL"]

HG = os.path.join(BUILD, "hourglass")

LATENESS = os.path.join(BUILD, "bench", "bench_e2e_lateness")

INGEST = os.path.join(BUILD, "bench", "bench_e2e_ingest")

SQL_INTAKE = os.path.join(BUILD, "bench", "bench_e2e_sql_intake")

INTAKE = os.path.join(BUILD, "bench", "bench_e2e_queue_intake")

CHAOS = os.path.join(BUILD, "bench", "bench_e2e_chaos")

TICK = os.sysconf("SC_CLK_TCK")
# --compare REV (scripts/bench builds REV's hourglass): steady and hotspot also run that build,
# alternating with this one round by round, recorded as mode "before".
COMPARE_HG = os.environ.get("BENCH_COMPARE_HG") or None
COMPARE_COMMIT = os.environ.get("BENCH_COMPARE_COMMIT", "")

# Every scenario, in the order they run (each is a function below of the same name).
ALL_SCENARIOS = ("steady", "ingest", "sqlintake", "hotspot", "peers", "sweep", "intake", "scale", "scaleout", "queuetype",
                 "longrun", "prune", "chaos")

parser = argparse.ArgumentParser(prog="scripts/bench")

parser.add_argument("--quick", action="store_true")

parser.add_argument("--only", default=",".join(ALL_SCENARIOS))

parser.add_argument("--prune-rows", type=int)

parser.add_argument("--scale-rows", type=int)

parser.add_argument("--results")

parser.add_argument("--rounds", type=int, default=1)  # steady: alternating rounds, medians

parser.add_argument("--no-build", action="store_true")

parser.add_argument("--flavour", choices=("debian12", "forky"))  # handled by the shell part
parser.add_argument("--no-variants", action="store_true")  # hotspot: the main burst only
parser.add_argument("--sweep-rates")  # sweep: comma-separated rates instead of the table's
parser.add_argument("--sweep-systems")  # sweep: comma-separated systems (scenarios/sweep.py)
parser.add_argument("--compare")  # handled by the shell part (BENCH_COMPARE_HG)

args = parser.parse_args()

SCENARIOS = [s.strip() for s in args.only.split(",") if s.strip()]

SCENARIOS = ["steady" if s == "cost" else s for s in SCENARIOS]

for s in SCENARIOS:
    if s not in ALL_SCENARIOS:
        sys.exit(f"bench: unknown scenario {s!r} ({', '.join(ALL_SCENARIOS)}, cost)")

Q = args.quick

SIZES = {
    "steady": dict(rate=1000, duration=5 if Q else 60, min_delay=5000 if Q else 5000, max_delay=12000 if Q else 90000,
                   horizon="10s" if Q else "60s", baseline_ttl=5000, drain=30),
    "ingest": dict(duration=5 if Q else 60, warmup=1 if Q else 5, backlog=20000 if Q else 300000),
    "sqlintake": dict(backlog=20000 if Q else 300000, rate=200 if Q else 1000, duration=5 if Q else 60, writers=4),
    "hotspot": dict(jobs=10000 if Q else 100000, horizon_s=5 if Q else 60, within=10),
    "intake": dict(messages=10000 if Q else 100000, paces=(20000,) if Q else (10000, 20000, 30000, 40000),
                   queues=(4,) if Q else (2, 4)),
    "scale": dict(small=10000, large=args.scale_rows or (200000 if Q else 10000000),
                  duration=4 if Q else 30, horizon_s=5 if Q else 60),
    "scaleout": dict(instances=(1, 2) if Q else (1, 2, 3), duration=3 if Q else 30, warmup=1 if Q else 3,
                     jobs=2000 if Q else 20000, horizon_s=5 if Q else 60, within=10),
    "queuetype": dict(rate=200 if Q else 1000, duration=3 if Q else 30, min_delay=3000 if Q else 5000,
                      max_delay=5000 if Q else 30000, jobs=1000 if Q else 20000, horizon_s=3 if Q else 60, drain=30),
    "prune": dict(ended=args.prune_rows or (100000 if Q else 10000000), steady_s=5 if Q else 120),
    # BullMQ, pg-boss and graphile-worker beside hourglass (bench/peers): a steady spread and a
    # hotspot, the same due times for each, in alternating rounds.
    "peers": dict(steady_jobs=500 if Q else 2000, spread_s=5 if Q else 10, lead_s=3 if Q else 5,
                  hotspot_jobs=2000 if Q else 20000, hotspot_lead_s=5 if Q else 10),
    # Each system's knee (scenarios/sweep.py): rates rising about 1.4x.
    # From 500: at 1,000 jobs/s every system but the broker alone missed the knee's p99.
    "sweep": dict(rates=(500, 1000) if Q else (500, 700, 1000, 1400, 2000, 2800, 4000, 5600, 8000, 11200,
                                                16000, 20000),
                  duration=3 if Q else 30, rounds=1 if Q else 3, lead_s=3 if Q else 5,
                  systems=("broker", "hourglass", "bullmq") if Q else
                  ("broker", "hourglass", "bullmq", "pgboss", "graphile")),
    "chaos": dict(minutes=2 if Q else 30, instances=2 if Q else 3, every=10 if Q else 20, rate=100 if Q else 200,
                  hotspot_jobs=1000 if Q else 2000, hotspot_every=30 if Q else 60),
    "longrun": dict(rate=1000, duration=30 if Q else 1800, every=5 if Q else 60,
                    retention="10s" if Q else "1m", min_delay=5000, max_delay=15000 if Q else 30000),
}

# A hotspot is scheduled horizon + its claims (2,000 runs a second at the slowest) + this margin
# ahead, so that every run is handed over before the instant; --quick's bursts are small.
CLAIM_MARGIN_S = 3 if Q else 10

RUN_ID = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")

TAG = RUN_ID[-7:-1].lower()  # hhmmss: names of this run's schemas and prefixes

DATE = RUN_ID[:8]

results_file = args.results or os.path.join(
    ROOT, "bench", "results", f"{DATE[:4]}-{DATE[4:6]}-{DATE[6:]}{'-quick' if Q else ''}.jsonl")

def git(*a):
    try:
        return subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""

def env_value(name):
    with open(os.path.join(SERVICES, "env")) as f:
        for line in f:
            if line.startswith(name + "="):
                return line.split("=", 1)[1].strip()
    return ""

def cpu_speed_mb_per_s():
    """One core's speed at the start, as SHA-256 of 32 MB in MB/s (median of 5): the same
    machine kind gave runs twice as slow on some days, and the figure tells such a day apart
    from a slower build. Compare it between runs, not with other machines."""
    block = bytes(32 * 2**20)
    def once():
        t0 = time.perf_counter()
        hashlib.sha256(block).digest()
        return 32 / (time.perf_counter() - t0)
    return round(statistics.median(once() for _ in range(5)))

MACHINE = {
    "cpus": os.cpu_count(),
    "cpu_sha256_mb_per_s": cpu_speed_mb_per_s(),
    "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    "kernel": platform.release(),
    "rabbitmq": env_value("HOURGLASS_RABBITMQ_VERSION"),
    "postgresql": env_value("HOURGLASS_PG_VERSION"),
    "load_avg_at_start": os.getloadavg()[0],
    "flavour": os.environ.get("HOURGLASS_SERVICES_FLAVOUR", "debian12"),
}

COMMIT = git("rev-parse", "--short", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")

def say(text):
    print(text, flush=True)

# The management API refreshes its statistics every 5 s: drivers keep their connections and
# measurements wait that long so the broker's counters include everything. --quick does not
# wait (its broker message counts may then be short; the other figures are not affected).
MGMT_WAIT = 0 if Q else 6

LINGER = ["--linger", str(MGMT_WAIT)]
