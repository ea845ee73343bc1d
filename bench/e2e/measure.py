"""What a measurement reads: CPU of the processes, the broker's management API, PostgreSQL
(psql, pg_stat_statements), and Measure, which takes the cost of a window per job."""

import base64
import json
import os
import re
import subprocess
import time
import urllib.parse
import urllib.request

from .settings import MGMT_URL, MGMT_WAIT, PG_ROLE, ROOT, SERVICES, TICK
from .figures import statement_name

def proc_stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    # rest[0] is field 3 (state): ppid 4, utime 14, stime 15, cutime 16, cstime 17
    return {"ppid": int(rest[1]), "cpu": int(rest[11]) + int(rest[12]),
            "children": int(rest[13]) + int(rest[14])}

def broker_cpu_s():
    try:
        pid = int(open(os.path.join(SERVICES, "rabbitmq", "beam.pid")).read().split()[0])
        return proc_stat(pid)["cpu"] / TICK
    except (OSError, ValueError, IndexError):
        return 0.0

def postgres_cpu_s():
    """The postmaster, its live children, and the children that already exited."""
    try:
        master = int(open(os.path.join(SERVICES, "postgres", "data", "postmaster.pid")).readline())
    except (OSError, ValueError):
        return 0.0
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            st = proc_stat(int(entry))
        except (OSError, IndexError, ValueError):
            continue
        if int(entry) == master:
            total += st["cpu"] + st["children"]
        elif st["ppid"] == master:
            total += st["cpu"]
    return total / TICK

def mgmt(path):
    m = re.match(r"(https?://)([^:@/]+):([^@/]+)@(.*)", MGMT_URL)
    url = m.group(1) + m.group(4) + path
    req = urllib.request.Request(url)
    req.add_header("Authorization", "Basic " + base64.b64encode(f"{m.group(2)}:{m.group(3)}".encode()).decode())
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)

OVERVIEW_KEYS = ("publish", "confirm", "deliver_get", "deliver_no_ack", "ack", "redeliver", "disk_writes", "disk_reads")

def overview():
    stats = mgmt("/api/overview").get("message_stats", {})
    return {k: stats.get(k, 0) for k in OVERVIEW_KEYS}

def hourglass_channels():
    """Message counts of hourglass's own connections (named by hourglass), by component."""
    names = {}
    for c in mgmt("/api/connections?columns=name,client_properties"):
        names[c["name"]] = (c.get("client_properties") or {}).get("connection_name", "")
    out = {}
    for ch in mgmt("/api/channels?columns=connection_details,message_stats"):
        cname = names.get(ch.get("connection_details", {}).get("name"), "")
        if not cname.startswith("hourglass "):
            continue
        part = cname.split(" ", 1)[1]
        ms = ch.get("message_stats", {})
        agg = out.setdefault(part, {})
        for k in ("publish", "confirm", "deliver_get", "ack"):
            agg[k] = agg.get(k, 0) + ms.get(k, 0)
    return out

def psql(sql, schema=None, fields=False):
    """Runs SQL as the superuser in the hourglass database; returns the rows (lists of text)."""
    if schema:
        sql = f'SET search_path = "{schema}";\n' + sql
    cmd = [os.path.join(ROOT, "scripts", "services"), "psql", SERVICES, "-d", "hourglass", "-At", "-F", "\t"]
    r = subprocess.run(cmd, input=sql, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"psql failed: {r.stderr.strip()}\n{sql[:400]}")
    return [line.split("\t") for line in r.stdout.splitlines() if line != ""]

def pgss_reset():
    psql("SELECT pg_stat_statements_reset();")

def pgss_hourglass():
    """Statements executed by hourglass's role since the last reset (the bench's own are marked)."""
    rows = psql("""
        SELECT s.calls, s.rows, s.total_exec_time, regexp_replace(s.query, '\\s+', ' ', 'g')
          FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
         WHERE r.rolname = '""" + PG_ROLE + """' AND s.query NOT LIKE '%/* bench */%'
           AND s.query NOT LIKE '%pg_stat_statements%'
         ORDER BY s.calls DESC;""")
    return [{"calls": int(c), "rows": int(n), "total_ms": float(t), "query": q} for c, n, t, q in rows]

class Measure:
    """CPU of hourglass, the broker and PostgreSQL, broker message counts and hourglass's SQL
    statements, between start() and stop(); per job once divided by `jobs`."""

    def __init__(self, hg=None, fresh=False):
        self.hg = hg
        self.fresh = fresh  # hg is started after start(): everything it does is in the window

    def start(self):
        time.sleep(MGMT_WAIT)  # so that the management API's figures include everything before
        if self.hg:
            pgss_reset()
            self.channels0 = {} if self.fresh else hourglass_channels()
            self.hg_cpu0 = 0.0 if self.fresh else self.hg.cpu_s()
            self.threads0 = {} if self.fresh else self.hg.threads_cpu_s()
        self.ov0 = overview()
        self.broker0 = broker_cpu_s()
        self.pg0 = postgres_cpu_s()
        self.t0 = time.time()
        return self

    def stop(self, jobs):
        wall = time.time() - self.t0
        out = {"wall_s": round(wall, 1), "jobs_measured": jobs}
        per = lambda x: round(x / jobs, 3) if jobs else None
        broker = broker_cpu_s() - self.broker0
        pg = postgres_cpu_s() - self.pg0
        out["broker_cpu_us_per_job"] = round(broker * 1e6 / jobs, 1) if jobs else None
        out["postgres_cpu_us_per_job"] = round(pg * 1e6 / jobs, 1) if jobs else None
        if self.hg:
            cpu = self.hg.cpu_s() - self.hg_cpu0
            out["hourglass_cpu_s"] = round(cpu, 2)
            out["hourglass_cpu_us_per_job"] = round(cpu * 1e6 / jobs, 1) if jobs else None
            out["hourglass_cpu_share"] = round(cpu / wall, 3)
            out["hourglass_rss_max_mb"] = round(self.hg.rss_max_mb(), 1)
            threads = self.hg.threads_cpu_s()
            out["hourglass_threads_cpu_s"] = [round(v - self.threads0.get(t, 0), 2) for t, v in sorted(threads.items())]
            statements = pgss_hourglass()
            by_name = {}
            for s in statements:
                n = statement_name(s["query"])
                agg = by_name.setdefault(n, {"calls": 0, "rows": 0, "total_ms": 0.0})
                agg["calls"] += s["calls"]; agg["rows"] += s["rows"]; agg["total_ms"] += s["total_ms"]
            calls = sum(s["calls"] for s in statements)
            out["sql_statements_per_job"] = per(calls)  # each one is a round trip (no pipelining)
            out["sql"] = {n: {"calls_per_job": per(a["calls"]), "rows_per_call": round(a["rows"] / a["calls"], 1),
                              "mean_ms": round(a["total_ms"] / a["calls"], 3)} for n, a in by_name.items()}
            self.statements = statements
        time.sleep(MGMT_WAIT)  # the management API's statistics are refreshed every 5 s
        ov = overview()
        out["broker"] = {k: per(ov[k] - self.ov0[k]) for k in OVERVIEW_KEYS}
        if self.hg:
            ch = hourglass_channels()
            comp = {}
            for part, counts in ch.items():
                before = self.channels0.get(part, {})
                d = {k: per(v - before.get(k, 0)) for k, v in counts.items() if v - before.get(k, 0)}
                if d:
                    comp[part] = d
            out["hourglass_broker_per_job"] = comp
        return out
