"""The processes a scenario starts: hourglass (one `hourglass run` each) and the bench drivers."""

import json
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request

from .settings import HG, LINGER, LOGS, TAG, TICK, say
from .figures import handover_summary
from .measure import proc_stat


class Hourglass:
    """One `hourglass run` with its own prefix and schema."""

    def __init__(self, name, horizon, schema=None, prefix=None, extra=(), binary=None):
        self.name = name
        self.binary = binary or HG  # another build's with --compare
        self.extra = list(extra)
        self.schema = schema or f"bench_{name}_{TAG}"
        self.prefix = prefix or f"hourglass.bench.{name}.{TAG}"  # the app user may use hourglass.* only
        self.horizon = horizon
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.log = os.path.join(LOGS, f"hourglass-{self.name}-{self.starts}.log")
        cmd = [self.binary, "run", "--prefix", self.prefix, "--schema", self.schema, "--horizon", self.horizon]
        self.http_port = None
        if "--http" in subprocess.run([self.binary, "run", "--help"], capture_output=True, text=True).stdout and \
                "--http" not in self.extra:
            self.http_port = free_http_port()
            cmd += ["--http", f"127.0.0.1:{self.http_port}"]  # the default, on a free port
        cmd += self.extra
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 90
        wanted = ("hourglass running", "ingest: consuming", "loader: connected to RabbitMQ",
                  "loader: connected to PostgreSQL") + (() if "--no-audit" in self.extra else ("audit: consuming",))
        while time.time() < deadline:
            text = open(self.log).read()
            if all(w in text for w in wanted):
                self.started_at = time.time()
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        tail = open(self.log).read()[-2000:]
        self.stop()
        raise RuntimeError(f"hourglass {self.name} did not start:\n{tail}")

    def histogram_buckets(self, name="hourglass_handover_lateness_seconds"):
        """A histogram's cumulative buckets [(le seconds, count)], from /metrics (None if this
        binary has no endpoint or no such metric)."""
        if not self.http_port:
            return None
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=5).read().decode()
        except OSError:
            return None
        buckets = [(float("inf") if le == "+Inf" else float(le), float(n)) for le, n in
                   re.findall(rf'^{re.escape(name)}_bucket\{{le="([^"]+)"\}} (\S+)$', text, re.M)]
        return buckets or None

    def handover_lateness(self, since=None):
        """The loader's own share of lateness: the histogram of publish time minus the instant
        that releases a run on time, over the runs handed over after `since` (buckets read
        earlier by histogram_buckets; None: all of them)."""
        return handover_summary(self.histogram_buckets(), since)

    def metric(self, name):
        """The sum of a counter's series on /metrics (None without an endpoint)."""
        if not self.http_port:
            return None
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=5).read().decode()
        except OSError:
            return None
        return sum(float(v) for v in re.findall(rf"^{re.escape(name)}(?:\{{[^}}]*\}})? (\S+)$", text, re.M))

    def cpu_s(self):
        return proc_stat(self.proc.pid)["cpu"] / TICK

    def threads_cpu_s(self):
        """CPU seconds of each thread, by thread id (ids grow in the order threads start)."""
        out = {}
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                out[int(tid)] = proc_stat(f"{self.proc.pid}/task/{tid}")["cpu"] / TICK
            except (OSError, IndexError, ValueError):
                pass
        return out

    def rss_max_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        return rc

RUNNING = []  # hourglass processes to stop on the way out

_http_port = [int(os.environ.get("BENCH_HTTP_FROM", "9564"))]

def free_http_port():
    import socket
    while True:
        _http_port[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", _http_port[0]))
                return _http_port[0]
            except OSError:
                continue

def run_driver(cmd, label, timeout=3600, echo=True):
    """Runs a bench driver; shows its report lines (echo); returns its JSON (the last line)."""
    cmd = list(cmd) + LINGER
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    for l in lines[:-1] if echo else []:
        say("   " + l)
    if not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"{label}: driver failed (exit {r.returncode}):\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
    result = json.loads(lines[-1])
    result["driver_exit"] = r.returncode
    return result
