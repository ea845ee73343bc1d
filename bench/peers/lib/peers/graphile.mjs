// graphile-worker on PostgreSQL: jobs added in bulk with runAt; a runner of concurrency 50
// polling every 500 ms (the same as pg-boss's floor, so both PostgreSQL peers do the same work).
import { makeWorkerUtils, run } from 'graphile-worker';

import { dropSchema } from './postgres.mjs';

export const library = 'graphile-worker';

export async function open({ pgUrl, tag }) {
  if (!pgUrl) throw new Error('graphile-worker: PEERS_PG_URL is needed');
  const schema = `peers_graphile_${tag}`;
  await dropSchema(pgUrl, schema);
  const utils = await makeWorkerUtils({ connectionString: pgUrl, schema });
  await utils.migrate();
  let runner = null;
  return {
    async schedule(chunk) {
      await utils.addJobs(chunk.map(({ index, dueAt }) => ({
        identifier: 'peer',
        payload: { index },
        runAt: new Date(dueAt),
      })));
    },
    async start(onJob) {
      runner = await run({
        connectionString: pgUrl,
        schema,
        concurrency: 50,
        maxPoolSize: 52,
        pollInterval: 500,
        noHandleSignals: true,
        taskList: { peer: async (payload) => onJob(payload.index) },
      });
    },
    async close() {
      await runner?.stop();
      await utils.release();
      await dropSchema(pgUrl, schema);
    },
  };
}
