"""hotspot and intake: many jobs due at one instant, and how the broker alone takes a burst."""

from ..settings import AMQP_URL, COMPARE_COMMIT, COMPARE_HG, CLAIM_MARGIN_S, INTAKE, LATENESS, MACHINE, Q, SIZES, args, say
from ..figures import median_round
from ..measure import Measure, mgmt, psql
from ..process import Hourglass, RUNNING, run_driver
from ..results import hourglass_view, record

def hotspot():
    z = SIZES["hotspot"]
    n = 1 if Q else args.rounds
    ttl = (z["horizon_s"] - 2) * 1000  # about the rungs hourglass's first claims of the burst use
    suffix = "" if n == 1 else "-round"

    def baseline(k):
        m = Measure().start()
        b = run_driver([LATENESS, "--mode", "baseline", "--pattern", "hotspot", "--scenario", "hotspot", "--jobs", str(z["jobs"]),
                        "--lead", str(ttl + 10000), "--baseline-ttl", str(ttl), "--within", str(z["within"]), "--drain", "60"],
                       "hotspot baseline")
        b["cost"] = m.stop(b["jobs"])
        b["round"] = k
        return record("hotspot" + suffix, "baseline", b)

    # Full size: the same burst again without the audit copy of each release (--no-audit), a
    # diagnosis of what the second enqueue per release costs the drain. With --rounds N the
    # three alternate, each round in the other order, so that neither is always the first run
    # on a fresh broker.
    runs = [lambda k: hotspot_run("hotspot" + suffix, k=k, rounds=n), baseline]
    if COMPARE_HG:  # the other build (--compare), recorded as mode "before"
        runs.append(lambda k: hotspot_run("hotspot" + suffix, k=k, rounds=n, binary=COMPARE_HG))
    variants = not args.no_variants
    if not Q and variants:
        runs.append(lambda k: hotspot_run("hotspot-noaudit" + suffix, ["--no-audit"], k=k, rounds=n))
        # The burst through the delay queues, as before burst release (--max-burst-runs 0).
        runs.append(lambda k: hotspot_run("hotspot-nobursts" + suffix, ["--max-burst-runs", "0"], k=k, rounds=n))
    # Every job with an x-hourglass-exchange target: the path of a user who comes from the
    # delayed-message plugin (forward ladder, forward queue, the forwarder's publish).
    allow_targets = ["--allow-exchange", r"hourglass\.bench\.target\..*"]
    if variants:
        runs.append(lambda k: hotspot_run("hotspot-targeted" + suffix, allow_targets, k=k, rounds=n, targeted=True))
    if not Q and variants:
        # The targeted burst through the forward ladder, as before burst release covered it.
        runs.append(lambda k: hotspot_run("hotspot-targeted-nobursts" + suffix, [*allow_targets, "--max-burst-runs", "0"],
                                          k=k, rounds=n, targeted=True))
        # 20,000 published at 500 a second within the horizon (about 250 a claim), due 45 s
        # after the first: a burst counted over the claims that bring it in; and the same
        # through the delay queues.
        paced = (20000, 500, 45000)
        runs.append(lambda k: hotspot_run("hotspot-paced" + suffix, k=k, rounds=n, paced=paced))
        runs.append(lambda k: hotspot_run("hotspot-paced-nobursts" + suffix, ["--max-burst-runs", "0"], k=k, rounds=n,
                                          paced=paced))
        # Recurring jobs due at one instant (a popular cron minute), with and without bursts.
        runs.append(lambda k: hotspot_run("hotspot-cron" + suffix, k=k, rounds=n, cron=True))
        runs.append(lambda k: hotspot_run("hotspot-cron-nobursts" + suffix, ["--max-burst-runs", "0"], k=k, rounds=n,
                                          cron=True))
    results = {}
    for k in range(1, n + 1):
        order = range(len(runs)) if k % 2 else reversed(range(len(runs)))
        for i in order:
            results.setdefault(i, []).append(runs[i](k))
    if n > 1:
        # Medians of the figures (the upper one of an even count), counts summed; "released
        # within" is the smallest of the rounds, each round's burst being the same size.
        hot = dict(by="lateness_max_ms", medians=("lateness_p50_ms", "lateness_max_ms", "drain_rate_per_s", "handed_over_per_s"),
                   sums=("lost", "early", "duplicates"), least=("released_within",))
        record("hotspot", "hourglass", median_round(results[0], **hot))
        record("hotspot", "baseline", median_round(results[1], **hot))
        if COMPARE_HG:
            record("hotspot", "before", median_round(results.pop(2), **hot))
            results = {i - 1 if i > 2 else i: v for i, v in results.items()}
        names = ("hotspot-noaudit", "hotspot-nobursts", "hotspot-targeted", "hotspot-targeted-nobursts",
                 "hotspot-paced", "hotspot-paced-nobursts", "hotspot-cron", "hotspot-cron-nobursts") \
            if not Q else ("hotspot-targeted",)
        for i, variant in enumerate(names if variants else ()):
            record(variant, "hourglass", median_round(results[2 + i], **hot))

def intake():
    """The broker alone: how fast one consumer's queue takes a burst, by how it arrives
    (bench/e2e_queue_intake.cpp): published, dead-lettered at one instant, each preloaded
    (delivery alone), dead-lettered at a pace, through TTL queues paced by the publisher, and
    dead-lettered at one instant over several queues (split by routing key, a consumer each)."""
    z = SIZES["intake"]
    n = str(z["messages"])
    label = f"rabbitmq {MACHINE['rabbitmq']}"
    runs = [["--arrival", a] for a in ("published", "dead-lettered", "published-preloaded", "dead-lettered-preloaded")]
    runs += [["--arrival", "dead-lettered", "--pace", str(p)] for p in z["paces"]]
    runs.append(["--arrival", "dead-lettered", "--queue-ttl", "8000"])
    runs += [["--arrival", "dead-lettered", "--queues", str(q)] for q in z["queues"]]
    table = []  # one table for all runs: each driver prints its own, of one row
    for extra in runs:
        m = Measure().start()
        r = run_driver([INTAKE, "--amqp-url", AMQP_URL, "--messages", n, "--label", label, *extra],
                       "intake " + " ".join(extra), echo=False)
        r["cost"] = m.stop(z["messages"])
        name = r["arrival"] + (f", paced {r['pace_per_s']}/s" if r.get("pace_per_s") else "") + \
            (", queue TTL" if r.get("queue_ttl_ms") else "") + \
            (f", over {r['queues']} queues" if r.get("queues", 1) > 1 else "")
        say(f"== intake, {name}: drain {r['drain_s']:.2f} s, {r['jobs_per_s_after_first']:,.0f} jobs/s after the first")
        table.append(f"   | {name} | {r['drain_s']:.2f} | {r['jobs_per_s_after_first']:,.0f}"
                     + ("" if r.get("complete", True) else " (incomplete)") + " |")
        record("intake", name, r)
    say("   | arrival | drain, s | jobs/s after the first |\n   |---|---|---|\n" + "\n".join(table))

def hotspot_run(name, extra=(), k=1, rounds=1, targeted=False, paced=None, cron=False, binary=None):
    """paced: (jobs, jobs a second, lead ms): a hotspot published at that pace within the
    horizon, so that it comes into it over many claims. cron: recurring jobs (x-cron at the
    instant, x-cron-limit 1), a popular cron minute."""
    z = dict(SIZES["hotspot"])
    h = z["horizon_s"]
    lead = int((h + z["jobs"] / 2000 + CLAIM_MARGIN_S) * 1000)
    pace = []
    if paced:
        z["jobs"], rate, lead = paced
        pace = ["--publish-rate", str(rate)]
    say(f"\n== {name}: {z['jobs']} jobs due at one instant {lead/1000:g} s ahead (horizon {h} s)"
        + (f", published at {pace[1]}/s" if pace else "")
        + (f", round {k} of {rounds}" if rounds > 1 else ""))
    label = name.replace("-round", "").replace("-", "") + (str(k) if rounds > 1 else "") + ("before" if binary else "")
    hg = Hourglass(label, f"{h}s", extra=extra, binary=binary).start(); RUNNING.append(hg)
    target = ["--target-exchange", f"hourglass.bench.target.{label}"] if targeted else []
    m = Measure(hg).start()
    r = run_driver([LATENESS, "--mode", "hourglass", "--pattern", "hotspot", "--scenario", name, "--prefix", hg.prefix,
                    "--jobs", str(z["jobs"]), "--lead", str(lead), "--within", str(z["within"]), "--drain", "60", *target, *pace,
                    *(["--cron"] if cron else [])],
                   "hotspot hourglass")
    r["cost"] = m.stop(r["jobs"])
    rows = psql("""SELECT count(*), min(extract(epoch FROM due_at - accepted_at)),
                          extract(epoch FROM max(enqueued_at) - min(enqueued_at)),
                          extract(epoch FROM min(enqueued_at) - min(due_at)),
                          extract(epoch FROM max(released_at) - min(released_at)) FROM jobs;""", hg.schema)
    n, ahead, enq_span, enq_start, rel_span = rows[0]
    r["committed"] = int(n)
    # When the loader handed them to the delay queues (enqueued_at: the commit after the
    # broker's confirms), relative to the instant: how fast it published the burst.
    r["handed_over_from_s"] = round(float(enq_start), 2) if enq_start else None
    r["handed_over_span_s"] = round(float(enq_span), 2) if enq_span else None
    r["handed_over_per_s"] = round(int(n) / float(enq_span)) if enq_span and float(enq_span) > 0 else None
    r["audit_release_span_s"] = round(float(rel_span), 2) if rel_span else None
    r["delay_queues_used"] = {q["name"].rsplit(".", 1)[1]: q.get("message_stats", {}).get("publish", 0)
                              for q in mgmt("/api/queues?columns=name,message_stats")
                              if q["name"].startswith(hg.prefix + ".delay.") and q.get("message_stats", {}).get("publish")}
    r["min_scheduled_ahead_s"] = round(float(ahead), 1) if ahead else None
    r["scheduled_a_horizon_ahead"] = bool(ahead) and float(ahead) >= h
    r["horizon_s"] = h
    r["hourglass_view"] = hourglass_view(hg.schema)
    r["hourglass_exit"] = hg.stop()
    if extra:
        r["hourglass_options"] = list(extra)
    r["round"] = k
    if binary:
        r["compared_commit"] = COMPARE_COMMIT
    return record(name, "before" if binary else "hourglass", r)
