"""scale: 10,000,000 pending jobs against 10,000: claim time, ingest, lateness, the claim's plan."""

import os
import re
import subprocess
import time

from ..settings import HG, INGEST, LATENESS, PG_URL, Q, ROOT, SERVICES, SIZES, TAG, say
from ..figures import CLAIM_EXPLAIN_ARGS, statement_name
from ..measure import Measure, psql
from ..process import Hourglass, RUNNING, run_driver
from ..results import record

CHUNK = 1000000

def bulk_load(schema, rows):
    """Pending one-shot jobs due 30-365 days ahead, ids random UUIDs, no body, the properties
    hourglass stores for a command with message_id and delivery_mode."""
    t0 = time.time()
    done = 0
    while done < rows:
        n = min(CHUNK, rows - done)
        psql(f"""INSERT INTO jobs (id, routing_key, due_at, body, properties)
            SELECT id, 'bench.scale', now() + interval '30 days' + random() * interval '335 days', '\\x'::bytea,
                   jsonb_build_object('message_id', id, 'delivery_mode', 2)
              FROM (SELECT gen_random_uuid()::text AS id FROM generate_series(1, {n})) g ORDER BY id;""", schema)
        done += n
        if rows > CHUNK:
            say(f"   loaded {done:,} rows in {time.time() - t0:.0f} s")
    load_s = time.time() - t0
    t1 = time.time()
    psql("VACUUM ANALYZE jobs;", schema)
    # The load leaves gigabytes of dirty pages that a spread checkpoint would write out during
    # the measurement (ingest 0.38-0.92x of the small run in runs of the same hour without it).
    psql("CHECKPOINT;")
    return load_s, time.time() - t1

def claim_sql_from_source():
    """The text of the prepared statement "claim_due" as hourglass sends it: src/store/sql/
    claim_due.sql without its comments (cmake/embed_statements.cmake does the same).
    pg_stat_statements keeps only a normalized text, which cannot be executed as it is."""
    text = open(os.path.join(ROOT, "src", "store", "sql", "claim_due.sql")).read()
    return re.sub(r"--[^\n]*", "", text).strip()

def claim_explain(schema, live_query, repeat=7):
    """EXPLAIN (ANALYZE, BUFFERS) of hourglass's claim statement claiming 1,000 rows, in
    transactions rolled back; the plan of the last execution (after 5, PostgreSQL may switch a
    prepared statement to its generic plan, as it does in hourglass's long-lived connection)."""
    query = claim_sql_from_source()
    # pg_stat_statements replaced the constants by $n: compare with every constant blanked.
    # A typed literal (interval '3 seconds') may come back as one $n: blank the type name too.
    # So may extract's field (epoch), when a connection prepared the statement after the reset
    # (else the text is kept as it was sent).
    squash = lambda q: re.sub(r"extract\(\w+ FROM", "extract(? FROM", re.sub(r"\s+", " ", re.sub(
        r"'[^']*'|\$\d+|\b\d+\b", "?", q)).replace("( ", "(").replace("interval ?", "?")).strip()
    if squash(query) != squash(live_query):
        a, b = squash(query), squash(live_query)
        at = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        raise RuntimeError(f"the claim SQL in the source does not match what ran, from character {at}:\n"
                           f"source: ...{a[max(0, at - 60):at + 80]}\nran:    ...{b[max(0, at - 60):at + 80]}")
    sql = ["SET search_path = \"%s\";" % schema, f"PREPARE bench_claim AS {query};"]
    for _ in range(repeat):
        sql += ["BEGIN;", f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_claim({', '.join(CLAIM_EXPLAIN_ARGS)});", "ROLLBACK;"]
    cmd = [os.path.join(ROOT, "scripts", "services"), "psql", SERVICES, "-d", "hourglass", "-At"]
    r = subprocess.run(cmd, input="\n".join(sql) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"EXPLAIN failed: {r.stderr}")
    plans, current = [], []
    for line in r.stdout.splitlines():
        current.append(line)
        if line.startswith("Execution Time:"):
            plans.append(current); current = []
    times = [float(re.search(r"([\d.]+) ms", p[-1]).group(1)) for p in plans]
    return times, "\n".join(plans[-1]) if plans else ""

def http_supported():
    return "--http" in subprocess.run([HG, "run", "--help"], capture_output=True, text=True).stdout

def scale_load(label, schema, extra=()):
    """Ingest as fast as the broker takes it, then a steady load, against the loaded schema."""
    z = SIZES["scale"]
    h = z["horizon_s"]
    r = {}
    hg = Hourglass(f"scale{label}", f"{h}s", schema=schema, extra=extra).start(); RUNNING.append(hg)
    m = Measure(hg).start()
    i = run_driver([INGEST, "--mode", "hourglass", "--phase", "live", "--scenario", f"scale-{label}", "--prefix", hg.prefix,
                    "--schema", schema, "--pg-url", PG_URL, "--duration", str(z["duration"]), "--warmup", "2"], f"scale {label} ingest")
    i["cost"] = m.stop(i["published"])
    i.pop("series_t_published_acked", None)
    r["ingest"] = i
    m = Measure(hg).start()
    s = run_driver([LATENESS, "--mode", "hourglass", "--pattern", "steady", "--scenario", f"scale-{label}", "--prefix", hg.prefix,
                    "--rate", "1000", "--duration", str(z["duration"]), "--min-delay", "5000", "--max-delay", str((h + (3 if Q else 10)) * 1000),
                    "--drain", "30"], f"scale {label} steady")
    s["cost"] = m.stop(s["jobs"])
    r["steady"] = s
    # Claimed rows leave dead entries at the head of the claim index until a vacuum removes them.
    v = psql("""SELECT n_live_tup, n_dead_tup, autovacuum_count, vacuum_count
                  FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass;""", schema)[0]
    r["after_steady"] = {"n_live_tup": int(v[0]), "n_dead_tup": int(v[1]), "autovacuums": int(v[2]), "vacuums": int(v[3])}
    claim = next((x for x in m.statements if statement_name(x["query"]) == "claim_due"), None)
    stats = [x for x in m.statements if statement_name(x["query"]) == "stats"]
    if claim:
        r["claim_calls"] = claim["calls"]
        r["claim_rows_per_call"] = round(claim["rows"] / claim["calls"], 1)
        r["claim_mean_ms"] = round(claim["total_ms"] / claim["calls"], 3)
    if stats:
        # hourglass.stats, read every 5 s for /metrics by the HTTP server's refresher
        r["stats_view_calls"] = sum(x["calls"] for x in stats)
        r["stats_view_mean_ms"] = round(sum(x["total_ms"] for x in stats) / r["stats_view_calls"], 1)
    r["hourglass_exit"] = hg.stop()
    if claim:
        try:
            times, plan = claim_explain(schema, claim["query"])
            r["claim_1000_ms"] = sorted(times)[len(times) // 2]
            r["claim_1000_ms_all"] = times
            r["claim_plan"] = plan
        except Exception as e:
            say(f"!! claim EXPLAIN failed: {e}")
            r["claim_explain_error"] = str(e)
    return r

STUB_STATS_VIEW = """DROP VIEW stats;
CREATE VIEW stats AS SELECT 0::bigint AS pending, 0::bigint AS enqueued, 0::bigint AS done,
    0::bigint AS cancelled, 0::bigint AS oldest_pending_lag_ms, NULL::timestamptz AS next_due_at,
    NULL::double precision AS lateness_p50_ms, NULL::double precision AS lateness_p99_ms,
    NULL::double precision AS lateness_max_ms;"""

def scale():
    z = SIZES["scale"]
    say(f"\n== scale: {z['small']:,} vs {z['large']:,} pending jobs; ingest and steady load {z['duration']} s each")
    for label, rows in (("small", z["small"]), ("large", z["large"])):
        schema = f"bench_scale_{label}_{TAG}"
        subprocess.run([HG, "migrate", "--schema", schema], check=True, capture_output=True, stdin=subprocess.DEVNULL)
        say(f"   {label}: bulk-loading {rows:,} pending jobs into {schema}.jobs")
        load_s, vacuum_s = bulk_load(schema, rows)
        size = psql("""SELECT pg_total_relation_size('jobs'), pg_relation_size('jobs'), pg_indexes_size('jobs'),
                              COALESCE(pg_total_relation_size(reltoastrelid), 0), (SELECT count(*) FROM jobs)
                         FROM pg_class WHERE oid = 'jobs'::regclass;""", schema)[0]
        total, heap, idx, toast, count = map(int, size)
        say(f"   {label}: loaded in {load_s:.1f} s ({rows / load_s:,.0f} rows/s), VACUUM ANALYZE {vacuum_s:.1f} s, "
            f"{total / count:.0f} bytes/job (heap {heap / count:.0f}, indexes {idx / count:.0f})")
        base = {"pending_rows": rows, "load_s": round(load_s, 1), "load_rows_per_s": round(rows / load_s),
                "vacuum_analyze_s": round(vacuum_s, 1), "bytes_per_job": round(total / count, 1),
                "heap_bytes_per_job": round(heap / count, 1), "index_bytes_per_job": round(idx / count, 1),
                "toast_bytes": toast, "total_bytes": total}
        try:
            r = dict(base, **scale_load(label, schema))
            if label == "large" and http_supported():
                # The hourglass.stats view behind /metrics, once, with its plan.
                t0 = time.time()
                plan = psql("EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM stats;", schema)
                r["stats_view_explain_s"] = round(time.time() - t0, 1)
                r["stats_view_plan"] = "\n".join(p[0] for p in plan)
            record(f"scale-{label}", "hourglass", r)
            if label == "large" and http_supported() and not Q:
                # Diagnosis: the same load again with the hourglass.stats view (which hourglass
                # reads every 5 s for /metrics, whatever --http says) replaced by a constant
                # row, in this bench schema only: what reading it costs at this size.
                say("   large, again with the stats view stubbed (a constant row)")
                psql(STUB_STATS_VIEW, schema)
                r2 = dict(base, **scale_load("large-stats-stubbed", schema))
                r2["note"] = "diagnosis: hourglass.stats replaced by a constant row in this schema"
                record("scale-large-stats-stubbed", "hourglass", r2)
        finally:
            psql(f'DROP SCHEMA "{schema}" CASCADE;')
