// pg-boss on PostgreSQL: jobs inserted in bulk with startAfter; a worker polling every 0.5 s
// (pg-boss's minimum), 50 jobs a fetch, fetching on while fetches come back full.
import { PgBoss } from 'pg-boss';

import { dropSchema } from './postgres.mjs';

export const library = 'pg-boss';

export async function open({ pgUrl, tag }) {
  if (!pgUrl) throw new Error('pg-boss: PEERS_PG_URL is needed');
  const schema = `peers_pgboss_${tag}`;
  await dropSchema(pgUrl, schema);
  const boss = new PgBoss({ connectionString: pgUrl, schema, schedule: false });
  boss.on('error', (error) => console.error(`pg-boss: ${error.message}`));
  await boss.start();
  const queue = 'peers';
  await boss.createQueue(queue);
  return {
    async schedule(chunk) {
      await boss.insert(queue, chunk.map(({ index, dueAt }) => ({ data: { index }, startAfter: new Date(dueAt) })));
    },
    async start(onJob) {
      await boss.work(queue, { pollingIntervalSeconds: 0.5, batchSize: 50, burstWhenBatchFull: true }, async (jobs) => {
        for (const job of jobs) onJob(job.data.index);
      });
    },
    async close() {
      await boss.stop({ graceful: false, wait: true });
      await dropSchema(pgUrl, schema);
    },
  };
}
