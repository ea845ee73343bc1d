// One peer, one run: schedules --jobs jobs due --lead seconds after scheduling ends, spread
// over --spread seconds (0: all at one instant, a hotspot), handles them, and prints one JSON
// line of what it measured (lib/stats.mjs). Human notes go to stderr.
//
//   node run.mjs --peer hourglass|bullmq|pgboss|graphile --jobs N --spread S --lead L
//                [--seed K] [--grace S] [--settle S] [--est-rate JOBS_PER_S]
// Environment: PEERS_AMQP_URL and PEERS_HOURGLASS_PREFIX (hourglass), PEERS_REDIS_URL (bullmq),
// PEERS_PG_URL (pg-boss, graphile-worker: a role that may create schemas), PEERS_TAG (names).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { dueTimes, summarize } from './lib/stats.mjs';

const PEERS = {
  hourglass: () => import('./lib/peers/hourglass.mjs'),
  bullmq: () => import('./lib/peers/bullmq.mjs'),
  pgboss: () => import('./lib/peers/pgboss.mjs'),
  graphile: () => import('./lib/peers/graphile.mjs'),
};
const CHUNK = 1000;

const { values: args } = parseArgs({
  options: {
    peer: { type: 'string' },
    jobs: { type: 'string', default: '2000' },
    spread: { type: 'string', default: '10' },
    lead: { type: 'string', default: '5' },
    seed: { type: 'string', default: '1' },
    grace: { type: 'string' },
    settle: { type: 'string', default: '2' },
    'est-rate': { type: 'string', default: '5000' },
  },
  strict: true,
});
if (!PEERS[args.peer]) {
  console.error(`run.mjs: --peer must be one of ${Object.keys(PEERS).join(', ')}`);
  process.exit(2);
}
const number = (name) => {
  const value = Number(args[name]);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`run.mjs: --${name} must be a number >= 0`);
    process.exit(2);
  }
  return value;
};
const jobs = number('jobs');
const spreadMs = number('spread') * 1000;
const leadMs = number('lead') * 1000;
const graceMs = (args.grace === undefined ? 30 + jobs / 1000 : number('grace')) * 1000;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function versionOf(library) {
  if (library === 'hourglass') return process.env.PEERS_HOURGLASS_VERSION ?? '';
  const url = new URL(`./node_modules/${library}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')).version;
}

async function main() {
  const peerModule = await PEERS[args.peer]();
  const peer = await peerModule.open({
    amqpUrl: process.env.PEERS_AMQP_URL,
    prefix: process.env.PEERS_HOURGLASS_PREFIX,
    redisUrl: process.env.PEERS_REDIS_URL,
    pgUrl: process.env.PEERS_PG_URL,
    tag: (process.env.PEERS_TAG ?? 'run').replace(/[^a-z0-9_]/g, '_'),
  });
  const handled = {};
  let handledCount = 0;
  await peer.start((index) => {
    const at = now();
    if (!handled[index]) {
      handled[index] = [];
      handledCount += 1;
    }
    handled[index].push(at);
  });
  // Absolute due times are fixed before the first enqueue: scheduling is estimated to end
  // after jobs / est-rate seconds, the lead counts from then (the lead achieved is reported).
  const scheduleStart = now();
  const base = Math.ceil(scheduleStart + (jobs / number('est-rate')) * 1000 + leadMs);
  const due = dueTimes(jobs, spreadMs, base, number('seed'));
  for (let first = 0; first < jobs; first += CHUNK) {
    const chunk = [];
    for (let index = first; index < Math.min(jobs, first + CHUNK); index += 1) chunk.push({ index, dueAt: due[index] });
    await peer.schedule(chunk);
  }
  const scheduleEnd = now();
  const leadActual = (base - scheduleEnd) / 1000;
  if (leadActual < leadMs / 2000) console.error(`run.mjs: scheduling took longer than planned: lead ${leadActual.toFixed(2)} s`);
  const deadline = Math.max(...due) + graceMs;
  while (handledCount < jobs && now() < deadline) await sleep(20);
  await sleep(number('settle') * 1000);
  await peer.close();
  const out = {
    peer: args.peer,
    library: peerModule.library,
    version: versionOf(peerModule.library),
    node: process.version,
    jobs_requested: jobs,
    spread_s: spreadMs / 1000,
    lead_s: leadMs / 1000,
    lead_actual_s: Number(leadActual.toFixed(2)),
    schedule_per_s: Math.round(jobs / ((scheduleEnd - scheduleStart) / 1000)),
    ...summarize(due, handled),
  };
  console.error(`${out.peer}: p50 ${out.lateness_p50_ms} ms, p99 ${out.lateness_p99_ms} ms, max ${out.lateness_max_ms} ms, ` +
                `lost ${out.lost}, early ${out.early}, dup ${out.duplicates}` +
                (out.drain_s !== undefined ? `, drain ${out.drain_s} s` : ''));
  console.log(JSON.stringify(out));
}

main().then(() => process.exit(0), (error) => {
  console.error(`run.mjs: ${error.stack ?? error}`);
  process.exit(1);
});
