#!/usr/bin/env python3
"""hourglass from SQL (psycopg): schedule a reminder in the same transaction as your own row.

    HOURGLASS_PG_URL=postgresql://orders_app:secret@host/hourglass python3 schedule_in_transaction.py

It writes an order and the command that schedules its reminder in one transaction and
commits; then does the same for a second order but rolls back. It reads the first command's
receipt from hourglass.command_receipts and checks that the rolled-back one left nothing.
Exit status 0 when the committed reminder is scheduled and the rolled-back one is not.

The role needs only the grants of docs/operating.md ("An application that schedules from SQL")
and its own table. Environment: HOURGLASS_PG_URL (default postgresql://127.0.0.1/hourglass),
HOURGLASS_SCHEMA (default hourglass).
"""
import json
import os
import sys
import time
import uuid

import psycopg
from psycopg import sql

URL = os.environ.get("HOURGLASS_PG_URL", "postgresql://127.0.0.1/hourglass")
SCHEMA = os.environ.get("HOURGLASS_SCHEMA", "hourglass")
TIMEOUT_S = 30

COMMANDS = sql.Identifier(SCHEMA, "commands")
RECEIPTS = sql.Identifier(SCHEMA, "command_receipts")


def place_order(connection, order_id):
    """The application's own change and its reminder, in the transaction the caller commits."""
    connection.execute("INSERT INTO example_orders (id) VALUES (%s)", (order_id,))
    return connection.execute(
        sql.SQL("INSERT INTO {} (routing_key, body, properties, headers) "
                "VALUES (%s, %s, %s, %s) RETURNING id").format(COMMANDS),
        ("example.sql.remind",
         json.dumps({"order": order_id}).encode(),
         json.dumps({"message_id": "remind-" + order_id, "content_type": "application/json"}),
         json.dumps({"x-delay": 2000})),
    ).fetchone()[0]


def main():
    with psycopg.connect(URL) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS example_orders (id text PRIMARY KEY)")
        connection.commit()

        committed_order = "example-sql-" + uuid.uuid4().hex[:8]
        command_id = place_order(connection, committed_order)
        connection.commit()
        print(f"order {committed_order} and its reminder committed (command {command_id})")

        rolled_back_order = "example-sql-" + uuid.uuid4().hex[:8]
        rolled_back_id = place_order(connection, rolled_back_order)
        connection.rollback()
        print(f"order {rolled_back_order} rolled back (command {rolled_back_id} never existed)")

        deadline = time.monotonic() + TIMEOUT_S
        receipt = None
        while receipt is None and time.monotonic() < deadline:
            receipt = connection.execute(
                sql.SQL("SELECT job_id, status, due_at, error FROM {} WHERE command_id = %s")
                .format(RECEIPTS), (command_id,)).fetchone()
            connection.commit()
            if receipt is None:
                time.sleep(0.1)
        if receipt is None:
            print(f"no receipt within {TIMEOUT_S} s: is hourglass running on this schema?")
            return 1
        job_id, status, due_at, error = receipt
        print(f"receipt: {status} job {job_id} due {due_at:%Y-%m-%dT%H:%M:%S.%f}"[:-3] + "Z"
              + (f" error {error}" if error else ""))
        lost = connection.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE command_id = %s").format(RECEIPTS),
            (rolled_back_id,)).fetchone()[0]
        if status != "scheduled" or job_id != "remind-" + committed_order or lost != 0:
            print("unexpected receipts")
            return 1
        print("scheduled with the order; nothing for the rolled-back one")
        return 0


if __name__ == "__main__":
    sys.exit(main())
