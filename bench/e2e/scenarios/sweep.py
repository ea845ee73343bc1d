"""sweep: each system's knee. A due load at rising rates (each for the same seconds, in
alternating rounds) for the broker alone (a TTL queue, bench_e2e_lateness --mode baseline),
hourglass, BullMQ, pg-boss and graphile-worker (bench/peers, as a user runs each). Per system
and rate: lateness p50/p99/max, lost and duplicated, and the CPU every process spent per job
(the servers: RabbitMQ, PostgreSQL, Redis, hourglass; the client: the load generator and
handler). The knee is the highest rate whose p99 stayed within KNEE_P99_MS in every round;
a system is not pushed further once two rates in a row missed it. A plot of p99 against rate,
one line per system."""

import os
import resource
import time

from bench import plotting
from ..figures import KNEE_P99_MS, handover_summary, knee_of, median_round, within_knee
from ..measure import broker_cpu_s, postgres_cpu_s, proc_stat, psql
from ..process import Hourglass, RUNNING, run_driver
from ..results import record
from ..settings import AMQP_URL, COMMIT, LATENESS, Q, ROOT, RUN_ID, SIZES, TAG, TICK, args, say
from .peers import Redis, node_and_packages, run_peer

SYSTEMS = ("broker", "hourglass", "hourglass-far", "bullmq", "pgboss", "graphile")
# hourglass as run by the sweep, each with its own instance, prefix and schema: with its
# defaults, and handing every run over a horizon ahead whatever the broker's pace.
HOURGLASS_VARIANTS = {"hourglass": (), "hourglass-far": ("--slow-confirm", "off")}
HANDOVER_HISTOGRAMS = ("hourglass_handover_lateness_seconds", "hourglass_handover_confirm_seconds")


def pid_cpu_s(pid):
    if pid is None:
        return 0.0
    try:
        return proc_stat(pid)["cpu"] / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def pg_counters():
    """The WAL the PostgreSQL cluster has written and the statements it has run (every role's,
    from pg_stat_statements, this query's aside), both cumulative."""
    wal, calls = psql("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, "
                      "(SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                      "WHERE query NOT LIKE '%pg_stat_statements%')::bigint")[0]
    return {"wal_bytes": int(wal), "sql_statements": int(calls)}


class StackCpu:
    """CPU seconds of every process a run involves, between start() and stop(); for a system on
    PostgreSQL also its WAL bytes and SQL statements (an idle hourglass's polls and heartbeats
    beside it count too: a few statements a second)."""

    def __init__(self, hourglass_pid, redis_pid):
        self.pids = {"hourglass": hourglass_pid, "redis": redis_pid}

    def read(self):
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = {"rabbitmq": broker_cpu_s(), "postgresql": postgres_cpu_s(),
               "client": children.ru_utime + children.ru_stime}
        out.update({name: pid_cpu_s(pid) for name, pid in self.pids.items()})
        return out

    def start(self):
        # The counters first, so that their psql's CPU is outside the window.
        self.pg_before = pg_counters()
        self.before = self.read()
        return self

    def stop(self, jobs, servers):
        """Per job: each process's CPU, and the sum over the servers the system runs on (an
        idle hourglass beside BullMQ is not BullMQ's cost)."""
        after = self.read()
        per_job = {f"{name}_cpu_us_per_job": round(1e6 * (after[name] - self.before[name]) / max(jobs, 1), 1)
                   for name in after}
        per_job["servers_cpu_us_per_job"] = round(sum(per_job[f"{n}_cpu_us_per_job"] for n in servers), 1)
        if "postgresql" in servers:
            pg_after = pg_counters()
            per_job["wal_bytes_per_job"] = round((pg_after["wal_bytes"] - self.pg_before["wal_bytes"]) / max(jobs, 1))
            per_job["sql_statements_per_job"] = round(
                (pg_after["sql_statements"] - self.pg_before["sql_statements"]) / max(jobs, 1), 2)
        return per_job


# The servers each system runs on (the client, load generator and handler, is apart).
SERVERS = {"broker": ("rabbitmq",), "hourglass": ("rabbitmq", "postgresql", "hourglass"),
           "hourglass-far": ("rabbitmq", "postgresql", "hourglass"),
           "bullmq": ("redis",), "pgboss": ("postgresql",), "graphile": ("postgresql",)}


def one_run(system, rate, k, z, node, env, cpu, hg):
    """hg: the system's hourglass instance (None for the others)."""
    jobs = int(rate * z["duration"])
    # hourglass's histograms before the round, so that the round's own runs can be told apart.
    before = {name: hg.histogram_buckets(name) for name in HANDOVER_HISTOGRAMS} if hg else {}
    held_before = hg.metric("hourglass_handover_held_total") if hg else 0
    cpu.start()
    if system == "broker":
        r = run_driver([LATENESS, "--mode", "baseline", "--baseline-ttl", "5000", "--pattern", "steady",
                        "--scenario", "sweep", "--rate", str(rate), "--duration", str(z["duration"]),
                        "--min-delay", "5000", "--max-delay", "12000", "--drain", "30"],
                       f"sweep broker {rate}/s", echo=False)
    else:
        r = run_peer(node, "hourglass" if hg else system, env, jobs, z["duration"], z["lead_s"], k)
    r.update(cpu.stop(r.get("jobs", jobs), SERVERS[system]))
    r.update({"rate": rate, "round": k, "duration_s": z["duration"]})
    # hourglass's own share of the lateness, how late its loader published (a run published
    # late is released at least that late), and how long the broker took to confirm each
    # publish, which bounds how late the run reached its delay queue, where its TTL starts.
    handover = confirm = None
    if hg:
        handover, confirm = (handover_summary(hg.histogram_buckets(name), before[name])
                             for name in HANDOVER_HISTOGRAMS)
        # Runs held for a near rung while the broker was slow to confirm (--slow-confirm).
        r["held_for_near_rung"] = int((hg.metric("hourglass_handover_held_total") or 0) - (held_before or 0))
    if handover:
        r.update({"handover_p99_ms_at_most": handover["p99_ms_at_most"],
                  "handover_over_50ms_share": handover["over_50ms_share"]})
    if confirm:
        r.update({"confirm_p99_ms_at_most": confirm["p99_ms_at_most"],
                  "confirm_over_50ms_share": confirm["over_50ms_share"]})
    say(f"   {system:9} {rate:>6}/s round {k}: p50 {r.get('lateness_p50_ms')} p99 {r.get('lateness_p99_ms')} "
        f"max {r.get('lateness_max_ms')} ms, lost {r.get('lost')}, dup {r.get('duplicates')}, "
        f"servers {r['servers_cpu_us_per_job']} µs/job"
        + (f", WAL {r['wal_bytes_per_job']} B and {r['sql_statements_per_job']} statements/job"
           if "wal_bytes_per_job" in r else "")
        + (f", hand-over p99 <= {handover['p99_ms_at_most']:g} ms" if handover else "")
        + (f", confirmed within 50 ms {1 - confirm['over_50ms_share']:.0%}" if confirm else "")
        + (f", {r['held_for_near_rung']} held for the near rung" if hg else ""))
    return record("sweep-round", system, r)


def chosen(z):
    """The rates and systems: --sweep-rates and --sweep-systems, or the sizes' own."""
    rates = tuple(int(r) for r in args.sweep_rates.split(",")) if args.sweep_rates else z["rates"]
    systems = tuple(args.sweep_systems.split(",")) if args.sweep_systems else z["systems"]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"--sweep-systems: unknown {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    return rates, systems


def sweep():
    z = SIZES["sweep"]
    n = args.rounds if args.rounds > 1 else z["rounds"]
    rates, systems = chosen(z)
    say(f"\n== sweep: {', '.join(systems)} at {', '.join(map(str, rates))} jobs/s, {z['duration']} s "
        f"each, {n} alternating rounds; knee: the highest rate with p99 <= {KNEE_P99_MS:g} ms in every round")
    node = node_and_packages()
    redis = Redis().start()
    try:
        instances = {}  # system -> its hourglass
        for system in systems:
            if system in HOURGLASS_VARIANTS:
                name = "sweep" if system == "hourglass" else system.replace("-", "")
                instances[system] = Hourglass(name, "60s", extra=HOURGLASS_VARIANTS[system]).start()
                RUNNING.append(instances[system])
        env = dict(os.environ, PEERS_AMQP_URL=AMQP_URL,
                   PEERS_REDIS_URL=f"redis://127.0.0.1:{redis.port}", PEERS_PG_URL=os.environ["HOURGLASS_PG_ADMIN_URL"],
                   PEERS_TAG=TAG, PEERS_HOURGLASS_VERSION=COMMIT)
        envs = {s: dict(env, PEERS_HOURGLASS_PREFIX=instances[s].prefix) if s in instances else env for s in systems}
        # An idle hourglass beside another system is not that system's cost: each system's
        # "hourglass" CPU is its own instance's (none for the others).
        cpus = {s: StackCpu(instances[s].proc.pid if s in instances else None, redis.proc.pid) for s in systems}
        by = {s: {} for s in systems}  # system -> rate -> rounds
        misses = {s: 0 for s in systems}
        for rate in rates:
            pushed = [s for s in systems if misses[s] < 2]
            for k in range(1, n + 1):
                for system in (pushed if k % 2 else pushed[::-1]):
                    by[system].setdefault(rate, []).append(
                        one_run(system, rate, k, z, node, envs[system], cpus[system], instances.get(system)))
                    time.sleep(1)
            for system in pushed:
                misses[system] = 0 if within_knee(by[system][rate]) else misses[system] + 1
        summarize(by, z, n)
    finally:
        redis.stop()


# The figures of one rate: the median of its rounds (figures.median_round).
FIGURES = ("lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms", "servers_cpu_us_per_job",
           "client_cpu_us_per_job", "rabbitmq_cpu_us_per_job", "postgresql_cpu_us_per_job",
           "redis_cpu_us_per_job", "hourglass_cpu_us_per_job", "handover_p99_ms_at_most",
           "confirm_p99_ms_at_most", "held_for_near_rung", "wal_bytes_per_job", "sql_statements_per_job")


def summarize(by, z, n):
    medians = {}  # system -> [(rate, its rounds' medians)]
    for system, rates in by.items():
        knee = knee_of(rates)
        medians[system] = [(rate, median_round(rounds, medians=FIGURES, sums=("lost", "duplicates")))
                           for rate, rounds in sorted(rates.items())]
        rows = [{"rate": rate, **{key: m[key] for key in FIGURES if key in m},
                 "p99_each_round": m["lateness_p99_ms_rounds"], "lost": m["lost"],
                 "duplicates": m["duplicates"]} for rate, m in medians[system]]
        record("sweep", system, {"knee_jobs_per_s": knee, "knee_p99_ms": KNEE_P99_MS, "rounds": n,
                                 "duration_s": z["duration"], "rates": rows})
        say(f"   {system}: knee {knee if knee else 'below ' + str(min(rates))} jobs/s")
    plot(medians)


def plot(medians):
    if not plotting.available():
        say("   gnuplot not found (apt-get install gnuplot-nox): no plot")
        return
    png = os.path.join(ROOT, "bench", "results", f"{RUN_ID}-sweep.png")
    lines = []
    for system, rows in medians.items():
        dat = png[:-4] + f"-{system}.dat"
        with open(dat, "w") as f:
            f.write(plotting.data_lines([rate, m["lateness_p99_ms"]] for rate, m in rows) + "\n")
        lines.append(f'"{dat}" u 1:2 w lp t "{system}"')
    script = f"""set terminal pngcairo size 900,600 font ",10"
set output "{png}"
set title "lateness p99 against the due rate (median of the rounds; knee: p99 <= {KNEE_P99_MS:g} ms)"
set xlabel "jobs due per second"; set ylabel "p99 lateness (ms)"; set logscale xy; set grid
set key top left
plot {", ".join(lines)}, {KNEE_P99_MS} w l dt 2 lc rgb "gray" t "{KNEE_P99_MS:g} ms"
"""
    try:
        plotting.draw(script)
        say(f"   plot: {os.path.relpath(png, ROOT)}")
    except RuntimeError as e:
        say(f"   {e}")
