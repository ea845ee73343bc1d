#!/usr/bin/env python3
"""hourglass from Python (pika): schedule jobs, read their receipts, consume their releases.

    HOURGLASS_AMQP_URL=amqp://user:pass@host:5672/%2f python3 schedule_and_consume.py

It publishes three jobs due one to three seconds from now with publisher confirms, each with a
receipt requested, checks that every receipt says "scheduled", and consumes the releases from a
queue bound to hourglass.out, deduplicating on x-hourglass-id + x-hourglass-run (delivery is at
least once). Exit status 0 when every job arrived once, on time; 1 otherwise.

Environment: HOURGLASS_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/%2f),
HOURGLASS_PREFIX (default hourglass: the exchanges are <prefix>.in and <prefix>.out).
"""
import json
import os
import sys
import time
import uuid
from datetime import datetime, timezone

import pika

URL = os.environ.get("HOURGLASS_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
PREFIX = os.environ.get("HOURGLASS_PREFIX", "hourglass")
JOBS = 3
TIMEOUT_S = 30


def main():
    connection = pika.BlockingConnection(pika.URLParameters(URL))
    channel = connection.channel()
    # Publisher confirms: basic_publish returns once the broker has the command, and raises if
    # it refused it (hourglass.in is durable, so a confirm means it is safely queued).
    channel.confirm_delivery()

    # Your consumers' queue: durable, bound to hourglass.out like to any exchange.
    releases = f"{PREFIX}.example.python"
    channel.queue_declare(releases, durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_bind(releases, f"{PREFIX}.out", routing_key="example.python.#")
    # Receipts come to a private reply queue, matched by correlation_id.
    replies = channel.queue_declare("", exclusive=True).method.queue

    run_tag = uuid.uuid4().hex[:8]
    due = {}
    for n in range(1, JOBS + 1):
        job_id = f"example-python-{run_tag}-{n}"
        channel.basic_publish(
            f"{PREFIX}.in", "example.python.reminder", json.dumps({"n": n}).encode(),
            pika.BasicProperties(message_id=job_id, correlation_id=job_id, delivery_mode=2,
                                 content_type="application/json",
                                 headers={"x-delay": 1000 * n, "x-reply-to": replies}),
            mandatory=True)
        due[job_id] = None
    print(f"published {JOBS} jobs with confirms")

    # Receipts: one per command, {"id", "status", "due", "error"}.
    for method, properties, body in channel.consume(replies, auto_ack=True, inactivity_timeout=10):
        if method is None:
            print("no receipt within 10 s: is hourglass running with this prefix?")
            return 1
        receipt = json.loads(body)
        if receipt["status"] != "scheduled" or properties.correlation_id != receipt["id"]:
            print(f"unexpected receipt {receipt}")
            return 1
        due[receipt["id"]] = receipt["due"]
        if all(due.values()):
            break
    channel.cancel()
    print(f"{JOBS} receipts: scheduled")

    # Releases, deduplicated on (x-hourglass-id, x-hourglass-run).
    seen = set()
    deadline = time.monotonic() + TIMEOUT_S
    for method, properties, body in channel.consume(releases, inactivity_timeout=1):
        if method is not None:
            headers = properties.headers or {}
            key = (headers.get("x-hourglass-id"), headers.get("x-hourglass-run"))
            if key in seen:
                print(f"duplicate release of {key[0]} run {key[1]}: ignored")
            elif key[0] in due:
                seen.add(key)
                arrived = datetime.now(timezone.utc)
                due_at = datetime.fromisoformat(headers["x-hourglass-due"].replace("Z", "+00:00"))
                late_ms = (arrived - due_at).total_seconds() * 1000
                print(f"released {key[0]} run {key[1]} body {body.decode()} {late_ms:.1f} ms after its due time")
                if late_ms < -50:  # allows for this host's clock against the broker's
                    print("released early")
                    return 1
            channel.basic_ack(method.delivery_tag)
        if len(seen) == JOBS or time.monotonic() > deadline:
            break
    channel.cancel()
    channel.queue_delete(releases)
    connection.close()
    if len(seen) != JOBS:
        print(f"only {len(seen)} of {JOBS} releases within {TIMEOUT_S} s")
        return 1
    print("all released once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
