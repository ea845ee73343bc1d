"""ingest and sqlintake: how fast schedule commands are taken, from hourglass.in and from
hourglass.commands."""

import json
import subprocess

from ..settings import INGEST, LINGER, PG_URL, Q, SIZES, SQL_INTAKE, say
from ..measure import Measure
from ..process import Hourglass, RUNNING, run_driver
from ..results import record

def ingest():
    z = SIZES["ingest"]
    say(f"\n== ingest: schedule commands as fast as the broker takes them for {z['duration']} s; then a backlog of {z['backlog']}")
    live = ["--phase", "live", "--scenario", "ingest", "--duration", str(z["duration"]), "--warmup", str(z["warmup"])]
    hg = Hourglass("ingest", "60s").start(); RUNNING.append(hg)
    m = Measure(hg).start()
    r = run_driver([INGEST, "--mode", "hourglass", "--prefix", hg.prefix, "--schema", hg.schema, "--pg-url", PG_URL, *live], "ingest hourglass")
    r["cost"] = m.stop(r["published"])
    r.pop("series_t_published_acked", None) if Q else None
    record("ingest", "hourglass", r)
    # The same with a receipt asked for each command (x-reply-to): one more publish per job.
    # Due a day later than the first run's jobs, so that its rows are counted apart.
    receipts = [*live[:3], "ingest-receipts", *live[4:], "--receipts", "--delay", str(8 * 24 * 3600 * 1000)]
    m = Measure(hg).start()
    r = run_driver([INGEST, "--mode", "hourglass", "--prefix", hg.prefix, "--schema", hg.schema, "--pg-url", PG_URL, *receipts],
                   "ingest hourglass with receipts")
    r["cost"] = m.stop(r["published"])
    r["hourglass_exit"] = hg.stop()
    r.pop("series_t_published_acked", None) if Q else None
    record("ingest-receipts", "hourglass", r)
    m = Measure().start()
    b = run_driver([INGEST, "--mode", "baseline", *live], "ingest baseline")
    b["cost"] = m.stop(b["published"])
    b.pop("series_t_published_acked", None) if Q else None
    record("ingest", "baseline", b)

    # A backlog, drained with nothing else running: the consumer's own capacity.
    # Due two days after the live runs' jobs, so that the committed rows are counted apart.
    backlog = ["--scenario", "ingest-backlog", "--backlog", str(z["backlog"]), "--delay", str(9 * 24 * 3600 * 1000)]
    run_driver([INGEST, "--mode", "hourglass", "--phase", "fill", "--prefix", hg.prefix, *backlog], "ingest fill")
    drain = subprocess.Popen([INGEST, "--mode", "hourglass", "--phase", "drain", "--prefix", hg.prefix, "--schema", hg.schema,
                              "--pg-url", PG_URL, *backlog, *LINGER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
    m = Measure(hg, fresh=True).start()
    hg.start()
    out, err = drain.communicate(timeout=3600)
    lines = [l for l in out.splitlines() if l.strip()]
    for l in lines[:-1]:
        say("   " + l)
    if not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"ingest drain failed:\n{out}\n{err}")
    r = json.loads(lines[-1])
    r["cost"] = m.stop(r["backlog"])
    r["hourglass_exit"] = hg.stop()
    record("ingest-backlog", "hourglass", r)
    b = run_driver([INGEST, "--mode", "baseline", "--phase", "drain", *backlog], "ingest backlog baseline")
    record("ingest-backlog", "baseline", b)

def sqlintake():
    """The SQL intake beside the AMQP intake (ingest): a backlog of commands inserted with
    hourglass stopped, drained once it starts; then commands committed at a pace, one per
    transaction, and the time from each COMMIT to the intake's transaction that took it."""
    z = SIZES["sqlintake"]
    say(f"\n== sqlintake: a backlog of {z['backlog']:,} commands in hourglass.commands; then {z['rate']}/s for {z['duration']} s")
    hg = Hourglass("sqlintake", "60s").start(); RUNNING.append(hg)  # migrates the schema
    hg.stop()
    common = [SQL_INTAKE, "--pg-url", PG_URL, "--schema", hg.schema]
    run_driver([*common, "--phase", "fill", "--count", str(z["backlog"])], "sql intake fill")
    drain = subprocess.Popen([*common, "--phase", "drain", "--count", str(z["backlog"]), *LINGER],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    m = Measure(hg, fresh=True).start()
    hg.start()
    out, err = drain.communicate(timeout=3600)
    lines = [l for l in out.splitlines() if l.strip()]
    for l in lines[:-1]:
        say("   " + l)
    if not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"sql intake drain failed:\n{out}\n{err}")
    r = json.loads(lines[-1])
    r["cost"] = m.stop(r["backlog"])
    record("sqlintake-backlog", "hourglass", r)
    m = Measure(hg).start()
    live = run_driver([*common, "--phase", "live", "--rate", str(z["rate"]), "--duration", str(z["duration"]),
                       "--writers", str(z["writers"])], "sql intake live")
    live["cost"] = m.stop(live["commands"])
    live["hourglass_exit"] = hg.stop()
    record("sqlintake-live", "hourglass", live)
