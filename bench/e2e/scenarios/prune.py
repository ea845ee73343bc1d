"""prune: retention at scale while a steady load runs, and the console's reads on a large table."""

import subprocess
import time
import urllib.parse
import urllib.request

from ..settings import HG, LATENESS, Q, SIZES, TAG, say
from ..figures import statement_name
from ..measure import Measure, psql
from ..process import Hourglass, RUNNING, run_driver
from ..results import record
from .scale import CHUNK, bulk_load

def prune():
    """Retention at scale: ended jobs deleted by `hourglass prune` while a steady load runs."""
    z = SIZES["prune"]
    ended, pending = z["ended"], z["ended"] // 10
    schema = f"bench_prune_{TAG}"
    say(f"\n== prune: {ended:,} ended and {pending:,} pending jobs; hourglass prune while 1,000 jobs/s run for {z['steady_s']} s")
    subprocess.run([HG, "migrate", "--schema", schema], check=True, capture_output=True, stdin=subprocess.DEVNULL)
    try:
        bulk_load(schema, pending)
        t0, done = time.time(), 0
        while done < ended:  # ended two days ago, as the audit leaves released jobs
            n = min(CHUNK, ended - done)
            psql(f"""INSERT INTO jobs (id, routing_key, due_at, body, properties, state, runs, released_run,
                                       released_at, lateness_ms, updated_at)
                SELECT id, 'bench.prune', now() - interval '2 days', '\\x'::bytea,
                       jsonb_build_object('message_id', id, 'delivery_mode', 2), 'done', 1, 1,
                       now() - interval '2 days', 3, now() - interval '2 days' + g * interval '1 microsecond'
                  FROM (SELECT gen_random_uuid()::text AS id, g FROM generate_series(1, {n}) g) x;""", schema)
            done += n
        psql("VACUUM ANALYZE jobs;", schema)
        psql("CHECKPOINT;")
        load_s = time.time() - t0
        size = lambda: int(psql("SELECT pg_total_relation_size('jobs');", schema)[0][0])
        r = {"ended_rows": ended, "pending_rows": pending, "load_s": round(load_s, 1), "bytes_before": size()}
        t0 = time.time()
        dry = subprocess.run([HG, "prune", "--schema", schema, "--retention", "1d", "--dry-run"], capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, check=True)
        r["dry_run_s"] = round(time.time() - t0, 2)
        r["dry_run_output"] = dry.stdout.strip()[-200:]
        console_load(schema)
        r["console_rows"] = int(psql("SELECT count(*) FROM jobs;", schema)[0][0])
        hg = Hourglass("prune", "60s", schema=schema, extra=["--retention", "off"]).start(); RUNNING.append(hg)
        some_id = psql("SELECT id FROM jobs WHERE routing_key = 'bench.prune' LIMIT 1;", schema)[0][0]
        time.sleep(6)  # the stats refresher's first read
        r["console_idle"] = console_timings(hg.http_port, some_id, 5 if Q else 21)

        def steady(label):
            m = Measure(hg).start()
            x = run_driver([LATENESS, "--mode", "hourglass", "--pattern", "steady", "--scenario", f"prune-{label}",
                            "--prefix", hg.prefix, "--rate", "1000", "--duration", str(z["steady_s"]),
                            "--min-delay", "2000", "--max-delay", "10000", "--drain", "30"], f"prune {label} steady")
            x["cost"] = m.stop(x["jobs"])
            for name in ("claim_due", "insert_jobs"):
                st = [q for q in m.statements if statement_name(q["query"]) == name]
                calls = sum(q["calls"] for q in st)
                x[f"{name}_ms_per_call"] = round(sum(q["total_ms"] for q in st) / calls, 3) if calls else None
            return x

        r["before"] = steady("before")
        import threading
        t0, ended_at, output = time.time(), [], []
        pruner = subprocess.Popen([HG, "prune", "--schema", schema, "--retention", "1d"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        waiter = threading.Thread(target=lambda: (output.append(pruner.communicate()[0]), ended_at.append(time.time())))
        waiter.start()
        console_during = []
        console_thread = threading.Thread(target=lambda: (time.sleep(z["steady_s"] / 3), console_during.append(
            console_timings(hg.http_port, some_id, 5 if Q else 21))))
        console_thread.start()
        r["during"] = steady("during")
        console_thread.join()
        r["console_during"] = console_during[0] if console_during else None
        r["during_overlapped_prune"] = not ended_at  # still pruning when the load ended
        waiter.join(timeout=7200)
        out = output[0] if output else ""
        r["prune_s"] = round((ended_at[0] if ended_at else time.time()) - t0, 1)
        r["prune_exit"] = pruner.returncode
        r["prune_output"] = out.strip()[-300:]
        left = int(psql("SELECT count(*) FROM jobs WHERE routing_key = 'bench.prune';", schema)[0][0])
        r["rows_deleted"] = ended - left
        r["rows_per_s"] = round(r["rows_deleted"] / r["prune_s"])
        r["bytes_after"] = size()
        r["hourglass_exit"] = hg.stop()
        record("prune", "hourglass", r)
    finally:
        for hg in RUNNING:
            hg.stop()
        psql(f'DROP SCHEMA "{schema}" CASCADE;')

# The console's queries (/api/), each timed as a client sees it (request to last byte).
CONSOLE_PATHS = ["/api/summary", "/api/upcoming", "/api/lateness", "/api/rejections", "/api/cron",
                 "/api/search?q={id}", "/api/search?q=bench.console.7", "/api/search?q=no-such-prefix"]

def console_load(schema):
    """What the console shows beside the prune scenario's rows: 150,000 jobs due in the next
    hour (more than the 25,000 an upcoming chart counts), 150,000 in the next day, 1,000 cron
    jobs and 100,000 rejections (what retention keeps at most)."""
    psql(f"""INSERT INTO jobs (id, routing_key, due_at, body, properties)
        SELECT id, 'bench.console.' || (g % 1000), now() + interval '10 minutes' + random() * interval '50 minutes',
               convert_to('{{"order": ' || g || '}}', 'UTF8'), jsonb_build_object('message_id', id, 'delivery_mode', 2)
          FROM (SELECT gen_random_uuid()::text AS id, g FROM generate_series(1, 150000) g) x;
        INSERT INTO jobs (id, routing_key, due_at, body, properties)
        SELECT id, 'bench.console.' || (g % 1000), now() + interval '1 hour' + random() * interval '23 hours', '\\x'::bytea,
               jsonb_build_object('message_id', id, 'delivery_mode', 2)
          FROM (SELECT gen_random_uuid()::text AS id, g FROM generate_series(1, 150000) g) x;
        INSERT INTO jobs (id, routing_key, due_at, body, properties, cron, cron_tz)
        SELECT 'bench-cron-' || g, 'bench.cron', date_trunc('year', now()) + interval '1 year', '\\x'::bytea,
               jsonb_build_object('message_id', 'bench-cron-' || g), '0 0 1 1 *', 'UTC'
          FROM generate_series(1, 1000) g;
        INSERT INTO rejections (job_id, routing_key, reason)
        SELECT 'bad-' || g, 'bench.bad', 'x-delay: ''soon'' (string) is not an integer number of milliseconds'
          FROM generate_series(1, 100000) g;
        ANALYZE jobs; ANALYZE rejections;""", schema)

def console_timings(port, job_id, rounds):
    """Median, p95 and max ms of each /api/ request over `rounds` calls."""
    out = {}
    for path in CONSOLE_PATHS:
        url = f"http://127.0.0.1:{port}" + path.format(id=urllib.parse.quote(job_id))
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url, timeout=30) as r:
                r.read()
                assert r.status == 200, (path, r.status)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        out[path.replace("{id}", "ID")] = {
            "median_ms": round(times[len(times) // 2], 2),
            "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2),
            "max_ms": round(times[-1], 2)}
    return out
