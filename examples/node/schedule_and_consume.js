#!/usr/bin/env node
// hourglass from Node (amqplib): schedule jobs, read their receipts, consume their releases.
//
//     npm ci && HOURGLASS_AMQP_URL=amqp://user:pass@host:5672/%2f node schedule_and_consume.js
//
// It publishes three jobs due one to three seconds from now on a confirm channel, each with a
// receipt requested, checks that every receipt says "scheduled", and consumes the releases from
// a queue bound to hourglass.out, deduplicating on x-hourglass-id + x-hourglass-run (delivery is
// at least once). Exit status 0 when every job arrived once, on time; 1 otherwise.
//
// Environment: HOURGLASS_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/%2f),
// HOURGLASS_PREFIX (default hourglass: the exchanges are <prefix>.in and <prefix>.out).
"use strict";
const amqp = require("amqplib");
const crypto = require("crypto");

const URL = process.env.HOURGLASS_AMQP_URL || "amqp://guest:guest@127.0.0.1:5672/%2f";
const PREFIX = process.env.HOURGLASS_PREFIX || "hourglass";
const JOBS = 3;
const TIMEOUT_MS = 30000;

function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  const connection = await amqp.connect(URL);
  try {
    // A confirm channel: waitForConfirms() resolves once the broker has every command (and
    // rejects if it refused one; hourglass.in is durable, so a confirm means safely queued).
    const channel = await connection.createConfirmChannel();

    // Your consumers' queue: durable, bound to hourglass.out like to any exchange.
    const releases = `${PREFIX}.example.node`;
    await channel.assertQueue(releases, { durable: true, arguments: { "x-queue-type": "quorum" } });
    await channel.bindQueue(releases, `${PREFIX}.out`, "example.node.#");
    // Receipts come to a private reply queue, matched by correlation id.
    const { queue: replies } = await channel.assertQueue("", { exclusive: true });

    const receipts = new Map();
    const allReceipts = new Promise((resolve, reject) => {
      channel.consume(replies, (msg) => {
        if (msg === null) return;  // cancelled by the broker
        const receipt = JSON.parse(msg.content.toString());
        if (receipt.status !== "scheduled" || msg.properties.correlationId !== receipt.id) {
          reject(new Error(`unexpected receipt ${JSON.stringify(receipt)}`));
          return;
        }
        receipts.set(receipt.id, receipt.due);
        if (receipts.size === JOBS) resolve();
      }, { noAck: true });
    });

    const runTag = crypto.randomBytes(4).toString("hex");
    const ids = new Set();
    for (let n = 1; n <= JOBS; n++) {
      const id = `example-node-${runTag}-${n}`;
      ids.add(id);
      channel.publish(`${PREFIX}.in`, "example.node.reminder", Buffer.from(JSON.stringify({ n })), {
        messageId: id, correlationId: id, persistent: true, mandatory: true,
        contentType: "application/json", headers: { "x-delay": 1000 * n, "x-reply-to": replies },
      });
    }
    await channel.waitForConfirms();
    console.log(`published ${JOBS} jobs with confirms`);
    await within(10000, allReceipts, "receipts (is hourglass running with this prefix?)");
    console.log(`${JOBS} receipts: scheduled`);

    // Releases, deduplicated on (x-hourglass-id, x-hourglass-run).
    const seen = new Set();
    let early = false;
    let consumerTag;
    const allReleases = new Promise((resolve, reject) => {
      channel.consume(releases, (msg) => {
        if (msg === null) {  // the broker cancelled the consumer (the queue was deleted)
          if (seen.size < JOBS) reject(new Error("the broker cancelled the consumer"));
          return;
        }
        const headers = msg.properties.headers || {};
        const id = headers["x-hourglass-id"];
        const run = Number(headers["x-hourglass-run"]);
        const key = `${id}#${run}`;
        if (seen.has(key)) {
          console.log(`duplicate release of ${id} run ${run}: ignored`);
        } else if (ids.has(id)) {
          seen.add(key);
          const lateMs = Date.now() - Date.parse(headers["x-hourglass-due"]);
          console.log(`released ${id} run ${run} body ${msg.content} ${lateMs} ms after its due time`);
          if (lateMs < -50) early = true;  // allows for this host's clock against the broker's
        }
        channel.ack(msg);
        if (seen.size === JOBS) resolve();
      }).then((ok) => { consumerTag = ok.consumerTag; }, reject);
    });
    await within(TIMEOUT_MS, allReleases, "releases");
    await channel.cancel(consumerTag);
    await channel.deleteQueue(releases);
    if (early) {
      console.log("released early");
      return 1;
    }
    console.log("all released once");
    return 0;
  } finally {
    await connection.close();
  }
}

main().then((code) => process.exit(code), (error) => {
  console.error(error.message);
  process.exit(1);
});
