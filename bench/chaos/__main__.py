"""python3 -m bench.chaos: the fault campaign against running services (scripts/services), as
`scripts/bench --only chaos` runs it.

Starts --instances hourglass instances on one prefix and schema, each reaching PostgreSQL and
RabbitMQ through proxies of its own (bench/chaos/proxy.py), and the load and checker
(bench/e2e_chaos.cpp) straight on the broker. For --minutes, every --every seconds on average
it injects one fault at random, logged with its start and end:
  kill9         an instance killed with SIGKILL, restarted 2-5 s later
  sigstop       an instance stopped with SIGSTOP for 5 s (past the 3 s takeover), then resumed
  pg_immediate  PostgreSQL stopped in immediate mode (a crash), restarted
  pg_terminate  pg_terminate_backend of every hourglass connection
  broker_close  every hourglass connection closed from the management API
  memory_alarm  the broker's memory alarm for 8 s (publishers blocked)
  full_queue    a queue at its length limit with x-overflow reject-publish bound to the output
                exchange for 15 s
  net_cut_pg    the network between one instance and PostgreSQL cut for 6 s
  net_cut_amqp  the network between one instance and RabbitMQ cut for 6 s
  pg_stall      every PostgreSQL process stopped (SIGSTOP) for 2-10 s, then continued: a
                checkpoint's I/O stall, a paused database VM
  lock_instances  a transaction holding hourglass.instances FOR UPDATE (every row, or one
                instance's) for 5-60 s: an operator's forgotten transaction
  lock_jobs     a transaction holding the 100 next pending jobs FOR UPDATE for 5-60 s
  clock_step    one instance's clock (libfaketime, read from a file of its own) stepped 5 s
                forward or back for 5-30 s, then stepped back: NTP stepping, a VM resumed
Then it lets the load drain, reads the checker's result, counts jobs still pending past their
due time (parked), explains each duplicate by a fault (report.py), prints a table, writes
summary.json, faults.json and a plot (gnuplot, if installed) into --out, and exits 1 if a job
was lost, early, parked or released twice with no fault to explain it."""
import argparse
import base64
import json
import os
import random
import shutil
import tempfile
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from bench.chaos import report
from bench.chaos.proxy import Proxy

# A memory alarm (every publisher blocked) for MEMORY_ALARM_S, ended by the broker itself.
MEMORY_ALARM_S = 8
MEMORY_ALARM_FOR = ("vm_memory_monitor:set_vm_memory_high_watermark({absolute, 1}), "
                    "timer:apply_after(%d, vm_memory_monitor, set_vm_memory_high_watermark, [0.4]), ok.")

FAULTS = ("kill9", "sigstop", "pg_immediate", "pg_terminate", "broker_close", "memory_alarm",
          "full_queue", "net_cut_pg", "net_cut_amqp", "pg_stall", "lock_instances", "lock_jobs", "clock_step")

# Every instance runs under libfaketime (Debian's faketime), its offset read from a file of its
# own at most once a second; its monotonic clock is left alone, as a step leaves it.
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
CLOCK_STEP_S = 5


def parse_args():
    p = argparse.ArgumentParser(prog="python3 -m bench.chaos")
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--instances", type=int, default=3)
    p.add_argument("--every", type=float, default=20, help="mean seconds between faults")
    p.add_argument("--rate", type=float, default=200, help="steady jobs per second")
    p.add_argument("--hotspot-jobs", type=int, default=2000)
    p.add_argument("--hotspot-every", type=float, default=60)
    p.add_argument("--resend-after", default="20s")
    p.add_argument("--faults", default=",".join(FAULTS))
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--hourglass", required=True)
    p.add_argument("--driver", required=True)
    p.add_argument("--services", required=True, help="the scripts/services directory")
    p.add_argument("--out", required=True)
    p.add_argument("--label", default="")
    return p.parse_args()


class Campaign:
    def __init__(self, args):
        self.args = args
        self.root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.env = dict(os.environ)
        self.amqp_url = self.env["HOURGLASS_AMQP_URL"]
        self.pg_url = self.env["HOURGLASS_PG_URL"]
        self.mgmt_url = self.env["HOURGLASS_RABBIT_MGMT_URL"]
        tag = time.strftime("%H%M%S")
        self.prefix = f"hourglass.chaos.{tag}"
        self.schema = f"chaos_{tag}"
        self.rabbit_port = urllib.parse.urlparse(self.amqp_url).port
        self.pg_port = urllib.parse.urlparse(self.pg_url).port
        self.processes = {}
        self.proxies = {}
        self.faults = []
        self.faults_failed = 0  # faults that raised while being injected
        self.random = random.Random(args.seed)
        os.makedirs(args.out, exist_ok=True)

    # --- services and instances ---
    def services(self, *action):
        return subprocess.run([os.path.join(self.root, "scripts", "services"), action[0], self.args.services,
                               *action[1:]], capture_output=True, text=True, timeout=180)

    def psql(self, sql):
        # As the superuser, in hourglass's database (not the superuser's own).
        database = urllib.parse.urlparse(self.pg_url).path.lstrip("/") or "hourglass"
        r = self.services("psql", "-d", database, "-At", "-c", sql)
        if r.returncode != 0:
            raise RuntimeError(f"psql failed: {r.stderr.strip()[:300]}")
        return r.stdout.strip()

    def mgmt(self, method, path, body=None):
        parsed = urllib.parse.urlparse(self.mgmt_url)
        url = f"{parsed.scheme}://{parsed.hostname}:{parsed.port}{path}"
        request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None)
        token = base64.b64encode(f"{parsed.username}:{parsed.password}".encode()).decode()
        request.add_header("Authorization", "Basic " + token)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return json.loads(text) if text else None

    def through(self, url, proxy):
        parsed = urllib.parse.urlparse(url)
        netloc = parsed.netloc.rsplit(":", 1)[0] + f":{proxy.port}"
        return urllib.parse.urlunparse(parsed._replace(netloc=netloc))

    def start_instance(self, name):
        if name not in self.proxies:
            self.proxies[name] = {"pg": Proxy("127.0.0.1", self.pg_port), "amqp": Proxy("127.0.0.1", self.rabbit_port)}
        proxies = self.proxies[name]
        log = open(os.path.join(self.args.out, f"{name}.log"), "a")
        command = [self.args.hourglass, "run", "--prefix", self.prefix, "--schema", self.schema,
                   "--amqp-url", self.through(self.amqp_url, proxies["amqp"]),
                   "--pg-url", self.through(self.pg_url, proxies["pg"]),
                   "--resend-after", self.args.resend_after, "--http", "off", "--log-level", "info"]
        self.processes[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                env=self.clock_env(name))

    def clock_file(self, name):
        return os.path.join(self.args.out, f"{name}.clock")

    def set_clock(self, name, offset_s):
        with open(self.clock_file(name), "w") as f:
            f.write(f"{offset_s:+d}s\n")

    def clock_env(self, name):
        """The environment of an instance whose clock a clock_step fault can step."""
        env = dict(self.env)
        if "clock_step" not in self.args.faults.split(","):
            return env
        if not os.access(FAKETIME, os.R_OK):
            raise RuntimeError(f"{FAKETIME} is missing (apt-get install faketime): needed by clock_step")
        self.set_clock(name, 0)
        env.update({"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": self.clock_file(name),
                    "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
        env.pop("FAKETIME", None)
        return env

    def stop_all(self):
        for process in self.processes.values():
            if process.poll() is None:
                try:
                    os.kill(process.pid, signal.SIGCONT)
                    process.terminate()
                    process.wait(timeout=20)
                except Exception:
                    process.kill()
        for proxies in self.proxies.values():
            for proxy in proxies.values():
                proxy.close()

    # --- faults ---
    def instance(self):
        return self.random.choice(sorted(self.processes))

    def inject(self, kind):
        start = time.time()
        target = ""
        if kind == "kill9":
            target = self.instance()
            self.processes[target].kill()
            self.processes[target].wait()
            time.sleep(self.random.uniform(2, 5))
            self.start_instance(target)
        elif kind == "sigstop":
            target = self.instance()
            os.kill(self.processes[target].pid, signal.SIGSTOP)
            time.sleep(5)
            os.kill(self.processes[target].pid, signal.SIGCONT)
        elif kind == "pg_immediate":
            target = "postgresql"
            pid_file = os.path.join(self.args.services, "postgres", "data", "postmaster.pid")
            with open(pid_file) as f:
                os.kill(int(f.readline()), signal.SIGQUIT)  # immediate shutdown: a crash
            time.sleep(2)
            self.services("start-pg")
        elif kind == "pg_terminate":
            target = "postgresql"
            self.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                      "WHERE application_name = 'hourglass'")
        elif kind == "broker_close":
            target = "rabbitmq"
            for connection in self.mgmt("GET", "/api/connections?columns=name,client_properties") or []:
                name = (connection.get("client_properties") or {}).get("connection_name", "")
                if name.startswith("hourglass") and name != "hourglass test":
                    try:
                        self.mgmt("DELETE", "/api/connections/" + urllib.parse.quote(connection["name"], safe=""))
                    except Exception:
                        pass
        elif kind == "memory_alarm":
            target = "rabbitmq"
            # The broker's own timer ends the alarm: timed around two CLI calls, which boot an
            # Erlang VM each (seconds to minutes on a loaded machine), it lasted 17-190 s.
            r = self.services("rabbitmqctl", "eval", MEMORY_ALARM_FOR % (MEMORY_ALARM_S * 1000))
            if r.returncode != 0:
                raise RuntimeError(f"memory alarm: {(r.stderr or r.stdout).strip()[:300]}")
            alarm_ends = time.time() + MEMORY_ALARM_S
            time.sleep(max(0.0, alarm_ends - time.time()))
        elif kind == "full_queue":
            target = "rabbitmq"
            queue = urllib.parse.quote(self.prefix + ".chaos-full", safe="")
            # Durable: RabbitMQ 4 refuses transient non-exclusive queues (a deprecated feature).
            self.mgmt("PUT", f"/api/queues/%2F/{queue}", {"durable": True, "auto_delete": False, "arguments": {
                "x-max-length": 0, "x-overflow": "reject-publish", "x-queue-type": "classic"}})
            exchange = urllib.parse.quote(self.prefix + ".out", safe="")
            self.mgmt("POST", f"/api/bindings/%2F/e/{exchange}/q/{queue}", {"routing_key": "#"})
            time.sleep(15)
            self.mgmt("DELETE", f"/api/queues/%2F/{queue}")
        elif kind == "pg_stall":
            target = "postgresql"
            self.stall_postgresql(self.random.uniform(2, 10))
        elif kind in ("lock_instances", "lock_jobs"):
            target = "postgresql"
            hold = self.random.uniform(5, 60)
            if kind == "lock_jobs":
                rows = (f"SELECT 1 FROM {self.schema}.jobs WHERE state = 'pending' "
                        f"ORDER BY due_at LIMIT 100 FOR UPDATE")
            elif self.random.random() < 0.5:
                rows = f"SELECT 1 FROM {self.schema}.instances FOR UPDATE"
            else:
                rows = f"SELECT 1 FROM {self.schema}.instances ORDER BY random() LIMIT 1 FOR UPDATE"
            # One transaction: the rows stay locked while it sleeps.
            self.psql(f"BEGIN; {rows}; SELECT pg_sleep({hold:.1f}); COMMIT")
        elif kind == "clock_step":
            target = self.instance()
            step = self.random.choice((CLOCK_STEP_S, -CLOCK_STEP_S))
            self.set_clock(target, step)
            try:
                time.sleep(self.random.uniform(5, 30))
            finally:
                self.set_clock(target, 0)
            target = f"{target} {step:+d} s"
        elif kind in ("net_cut_pg", "net_cut_amqp"):
            target = self.instance()
            proxy = self.proxies[target]["pg" if kind == "net_cut_pg" else "amqp"]
            proxy.cut()
            time.sleep(6)
            proxy.heal()
        fault = {"kind": kind, "target": target, "start": start, "end": time.time()}
        self.faults.append(fault)
        print(f"chaos: {time.strftime('%H:%M:%S')} {kind} {target} ({fault['end'] - start:.1f} s)", flush=True)

    def stall_postgresql(self, seconds):
        pid_file = os.path.join(self.args.services, "postgres", "data", "postmaster.pid")
        with open(pid_file) as f:
            postmaster = int(f.readline())
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        pids = [postmaster] + [int(pid) for pid in children]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass

    def run(self):
        a = self.args
        for i in range(a.instances):
            self.start_instance(f"hg-{i}")
        time.sleep(5)  # migrated and declared
        result_file = os.path.join(a.out, "driver.json")
        duration = a.minutes * 60
        driver = subprocess.Popen([a.driver, "--amqp-url", self.amqp_url, "--prefix", self.prefix,
                                   "--duration", str(duration), "--rate", str(a.rate),
                                   "--hotspot-every", str(a.hotspot_every), "--hotspot-jobs", str(a.hotspot_jobs),
                                   "--drain", str(self.resend_after_s() + 20), "--out", result_file])
        kinds = [k for k in a.faults.split(",") if k]
        end = time.time() + duration - 10  # the last fault ends before the load does
        try:
            while time.time() < end:
                time.sleep(self.random.expovariate(1 / a.every))
                if time.time() >= end:
                    break
                try:
                    self.inject(self.random.choice(kinds))
                except Exception as error:  # logged and counted in the summary, not fatal
                    self.faults_failed += 1
                    print(f"chaos: fault failed: {error}", flush=True)
            for name, process in list(self.processes.items()):
                if process.poll() is not None:
                    self.start_instance(name)
            driver.wait(timeout=duration + 3600)
            parked = self.psql(f"SELECT count(*) FROM {self.schema}.jobs WHERE state = 'pending' "
                               f"AND cron IS NULL AND due_at < now() - interval '10 seconds'")
        finally:
            if driver.poll() is None:
                driver.kill()
            self.stop_all()
        with open(result_file) as f:
            result = json.load(f)
        summary = report.summarize(result, self.faults, self.resend_after_s(), int(parked or 0))
        summary.update({"minutes": a.minutes, "instances": a.instances, "label": a.label,
                        "faults_failed": self.faults_failed})
        with open(os.path.join(a.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        with open(os.path.join(a.out, "faults.json"), "w") as f:
            json.dump(self.faults, f, indent=1)
        self.plot(result)
        print(report.table(summary, a.label or f"{a.instances} instances, {a.minutes:g} min"), flush=True)
        try:
            self.psql(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
        except RuntimeError as error:
            print(f"chaos: could not drop schema {self.schema}: {error}", flush=True)
        if report.ok(summary):
            return 0
        self.keep_logs()
        return 1

    def keep_logs(self):
        """A broken invariant is a bug to find: the instances' logs, the checker's result and the
        faults are copied out of the services' directory, which the bench deletes."""
        kept = tempfile.mkdtemp(prefix="hourglass-chaos-failed-")
        for name in os.listdir(self.args.out):
            path = os.path.join(self.args.out, name)
            if os.path.isfile(path):
                shutil.copy2(path, kept)
        print(f"chaos: the logs of this failed campaign are kept in {kept}", flush=True)

    def resend_after_s(self):
        text = self.args.resend_after
        units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        for unit in ("ms", "s", "m", "h"):
            if text.endswith(unit):
                return float(text[: -len(unit)]) * units[unit]
        return float(text)

    def plot(self, result):
        if not shutil.which("gnuplot") or not result["per_second"]:
            return
        first = result["per_second"][0][0]
        data = os.path.join(self.args.out, "releases.dat")
        with open(data, "w") as f:
            for second, count in result["per_second"]:
                f.write(f"{second - first} {count}\n")
        arrows = "".join(f'set arrow from {fault["start"] - first:.0f}, graph 0 to {fault["start"] - first:.0f}, graph 1 nohead lc rgb "red"\n'
                         f'set label "{fault["kind"]}" at {fault["start"] - first:.0f}, graph 0.95 rotate by 90 font ",7"\n'
                         for fault in self.faults)
        script = (f'set terminal png size 1400,500\nset output "{os.path.join(self.args.out, "chaos.png")}"\n'
                  'set xlabel "seconds"\nset ylabel "releases per second"\nset key off\n'
                  f'{arrows}plot "{data}" using 1:2 with impulses lc rgb "#3060a0"\n')
        subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)


def main():
    args = parse_args()
    sys.exit(Campaign(args).run())


if __name__ == "__main__":
    main()
