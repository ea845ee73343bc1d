#!/usr/bin/env node
// hourglass from SQL (node-postgres): schedule a reminder in the same transaction as your row.
//
//     npm ci && HOURGLASS_PG_URL=postgresql://orders_app:secret@host/hourglass node schedule_in_transaction.js
//
// It writes an order and the command that schedules its reminder in one transaction and
// commits; then does the same for a second order but rolls back. It reads the first command's
// receipt from hourglass.command_receipts and checks that the rolled-back one left nothing.
// Exit status 0 when the committed reminder is scheduled and the rolled-back one is not.
//
// The role needs only the grants of docs/operating.md ("An application that schedules from
// SQL") and its own table. Environment: HOURGLASS_PG_URL (default
// postgresql://127.0.0.1/hourglass), HOURGLASS_SCHEMA (default hourglass).
"use strict";
const crypto = require("crypto");
const { Client } = require("pg");

const URL = process.env.HOURGLASS_PG_URL || "postgresql://127.0.0.1/hourglass";
const SCHEMA = process.env.HOURGLASS_SCHEMA || "hourglass";
const TIMEOUT_MS = 30000;

function table(client, name) {
  return client.escapeIdentifier(SCHEMA) + "." + client.escapeIdentifier(name);
}

// The application's own change and its reminder, in the transaction the caller ends.
async function placeOrder(client, orderId) {
  await client.query("INSERT INTO example_orders (id) VALUES ($1)", [orderId]);
  const result = await client.query(
    `INSERT INTO ${table(client, "commands")} (routing_key, body, properties, headers) ` +
      "VALUES ($1, $2, $3, $4) RETURNING id",
    ["example.sql.remind",
     Buffer.from(JSON.stringify({ order: orderId })),
     { message_id: "remind-" + orderId, content_type: "application/json" },
     { "x-delay": 2000 }]);
  return result.rows[0].id;
}

async function main() {
  const client = new Client({ connectionString: URL });
  await client.connect();
  try {
    await client.query("CREATE TABLE IF NOT EXISTS example_orders (id text PRIMARY KEY)");

    const committedOrder = "example-sql-" + crypto.randomBytes(4).toString("hex");
    await client.query("BEGIN");
    const commandId = await placeOrder(client, committedOrder);
    await client.query("COMMIT");
    console.log(`order ${committedOrder} and its reminder committed (command ${commandId})`);

    const rolledBackOrder = "example-sql-" + crypto.randomBytes(4).toString("hex");
    await client.query("BEGIN");
    const rolledBackId = await placeOrder(client, rolledBackOrder);
    await client.query("ROLLBACK");
    console.log(`order ${rolledBackOrder} rolled back (command ${rolledBackId} never existed)`);

    const receipts = table(client, "command_receipts");
    const deadline = Date.now() + TIMEOUT_MS;
    let receipt;
    while (!receipt && Date.now() < deadline) {
      const result = await client.query(
        `SELECT job_id, status, due_at, error FROM ${receipts} WHERE command_id = $1`, [commandId]);
      receipt = result.rows[0];
      if (!receipt) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (!receipt) {
      console.log(`no receipt within ${TIMEOUT_MS} ms: is hourglass running on this schema?`);
      return 1;
    }
    console.log(`receipt: ${receipt.status} job ${receipt.job_id} due ${receipt.due_at.toISOString()}` +
                (receipt.error ? ` error ${receipt.error}` : ""));
    const lost = await client.query(`SELECT count(*)::int AS n FROM ${receipts} WHERE command_id = $1`,
                                    [rolledBackId]);
    if (receipt.status !== "scheduled" || receipt.job_id !== "remind-" + committedOrder ||
        lost.rows[0].n !== 0) {
      console.log("unexpected receipts");
      return 1;
    }
    console.log("scheduled with the order; nothing for the rolled-back one");
    return 0;
  } finally {
    await client.end();
  }
}

main().then((code) => process.exit(code), (error) => {
  console.error(error.message);
  process.exit(1);
});
