"""scaleout and queuetype: several instances on one schema, and classic against quorum delay
queues."""

from ..settings import CLAIM_MARGIN_S, INGEST, LATENESS, PG_URL, SIZES, TAG, args, env_value, say
from ..measure import Measure, psql
from ..process import Hourglass, RUNNING, run_driver
from ..results import record

def scaleout():
    """1, 2, 3 instances on one database and one prefix: ingest and a hotspot with each count,
    what every instance took of the work, and what the whole costs."""
    z = SIZES["scaleout"]
    for n in z["instances"]:
        h = z["horizon_s"]
        say(f"\n== scaleout: {n} instance(s) sharing one schema and prefix (horizon {h} s)")
        schema, prefix = f"bench_scaleout{n}_{TAG}", f"hourglass.bench.scaleout{n}.{TAG}"
        # One at a time: each start is then known to be up (the migrations lock anyway).
        group = [Hourglass(f"scaleout{n}-{i + 1}", f"{h}s", schema=schema, prefix=prefix).start() for i in range(n)]
        RUNNING.extend(group)
        cpu0, received0 = [g.cpu_s() for g in group], [g.metric("hourglass_commands_received_total") or 0 for g in group]
        m = Measure().start()
        i = run_driver([INGEST, "--mode", "hourglass", "--phase", "live", "--scenario", f"scaleout-{n}-ingest",
                        "--prefix", prefix, "--schema", schema, "--pg-url", PG_URL, "--duration", str(z["duration"]),
                        "--warmup", str(z["warmup"])], f"scaleout {n} ingest")
        i["cost"] = m.stop(i["published"])
        i["hourglass_cpu_us_per_job"] = round(sum(g.cpu_s() - c for g, c in zip(group, cpu0)) * 1e6 / i["published"], 1)
        i["received_by_instance"] = [int((g.metric("hourglass_commands_received_total") or 0) - r0)
                                     for g, r0 in zip(group, received0)]
        i.pop("series_t_published_acked", None)
        psql("DELETE FROM jobs;", schema)  # the hotspot's rows alone below
        cpu0, enq0 = [g.cpu_s() for g in group], [g.metric("hourglass_runs_enqueued_total") or 0 for g in group]
        lead = int((h + z["jobs"] / 2000 + CLAIM_MARGIN_S) * 1000)
        m = Measure().start()
        t = run_driver([LATENESS, "--mode", "hourglass", "--pattern", "hotspot", "--scenario", f"scaleout-{n}-hotspot",
                        "--prefix", prefix, "--jobs", str(z["jobs"]), "--lead", str(lead), "--within", str(z["within"]),
                        "--drain", "60"], f"scaleout {n} hotspot")
        t["cost"] = m.stop(t["jobs"])
        t["hourglass_cpu_us_per_job"] = round(sum(g.cpu_s() - c for g, c in zip(group, cpu0)) * 1e6 / t["jobs"], 1)
        t["enqueued_by_instance"] = [int((g.metric("hourglass_runs_enqueued_total") or 0) - e0) for g, e0 in zip(group, enq0)]
        t["committed"] = int(psql("SELECT count(*) FROM jobs;", schema)[0][0])
        # More hand-overs than jobs would mean two instances published one run.
        t["handed_over_total"] = sum(t["enqueued_by_instance"])
        t["hourglass_rss_max_mb"] = [round(g.rss_max_mb(), 1) for g in group]
        t["hourglass_exit"] = [g.stop() for g in group]
        record("scaleout", "hourglass", {"instances": n, "horizon_s": h, "ingest": i, "hotspot": t})

def queuetype():
    """Classic vs quorum delay queues (--queue-type) in one run, alternating rounds: steady
    lateness, then a hotspot, on one hourglass per queue type and round. Meant for a 3-node
    cluster (HOURGLASS_SERVICES_CLUSTER=3, where quorum queues replicate) and run on one node too."""
    z = SIZES["queuetype"]
    h = z["horizon_s"]
    nodes = env_value("HOURGLASS_RABBIT_CLUSTER") or "1"
    rounds = {"classic": [], "quorum": []}
    for k in range(1, args.rounds + 1):
        for queue_type in ("classic", "quorum"):
            say(f"\n== queuetype: {queue_type} delay queues, round {k} ({nodes} RabbitMQ node(s)): steady "
                f"{z['rate']}/s for {z['duration']} s, then {z['jobs']} jobs due at one instant")
            hg = Hourglass(f"qt{queue_type}{k}", f"{h}s", extra=["--queue-type", queue_type]).start(); RUNNING.append(hg)
            m = Measure(hg).start()
            r = run_driver([LATENESS, "--mode", "hourglass", "--prefix", hg.prefix, "--pattern", "steady",
                            "--scenario", f"queuetype-steady-{queue_type}", "--rate", str(z["rate"]),
                            "--duration", str(z["duration"]), "--min-delay", str(z["min_delay"]),
                            "--max-delay", str(z["max_delay"]), "--drain", str(z["drain"])], f"{queue_type} steady")
            r["cost"] = m.stop(r["jobs"])
            r["handover"] = hg.handover_lateness()
            lead = int((h + z["jobs"] / 2000 + CLAIM_MARGIN_S) * 1000)
            m = Measure(hg).start()
            t = run_driver([LATENESS, "--mode", "hourglass", "--prefix", hg.prefix, "--pattern", "hotspot",
                            "--scenario", f"queuetype-hotspot-{queue_type}", "--jobs", str(z["jobs"]),
                            "--lead", str(lead), "--within", "10", "--drain", "60"], f"{queue_type} hotspot")
            t["cost"] = m.stop(t["jobs"])
            exit_code = hg.stop()
            rounds[queue_type].append(record("queuetype", queue_type, {
                "round": k, "rabbitmq_nodes": int(nodes), "horizon_s": h, "steady": r, "hotspot": t,
                "hourglass_exit": exit_code}))
    if args.rounds > 1:  # the medians, as one line per queue type
        for queue_type, rs in rounds.items():
            median = lambda f: sorted(f(x) for x in rs)[len(rs) // 2]
            record("queuetype-median", queue_type, {
                "rounds": len(rs), "rabbitmq_nodes": int(nodes),
                "steady_lateness_p50_ms": median(lambda x: x["steady"]["lateness_p50_ms"]),
                "steady_lateness_p99_ms": median(lambda x: x["steady"]["lateness_p99_ms"]),
                "steady_lateness_max_ms": median(lambda x: x["steady"]["lateness_max_ms"]),
                "hotspot_last_release_ms": median(lambda x: x["hotspot"]["lateness_max_ms"])})
