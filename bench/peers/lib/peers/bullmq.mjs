// BullMQ on a private Redis: delayed jobs added in bulk, a Worker with concurrency 50.
import { Queue, Worker } from 'bullmq';

export const library = 'bullmq';

function connectionOf(redisUrl) {
  const url = new URL(redisUrl);
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}

export async function open({ redisUrl, tag }) {
  if (!redisUrl) throw new Error('bullmq: PEERS_REDIS_URL is needed');
  const connection = connectionOf(redisUrl);
  const name = `peers-${tag}`;
  const queue = new Queue(name, { connection });
  await queue.obliterate({ force: true });
  let worker = null;
  return {
    async schedule(chunk) {
      const now = Date.now();
      await queue.addBulk(chunk.map(({ index, dueAt }) => ({
        name: 'job',
        data: { index },
        opts: { timestamp: now, delay: Math.max(0, dueAt - now), removeOnComplete: true },
      })));
    },
    async start(onJob) {
      worker = new Worker(name, async (job) => onJob(job.data.index), { connection, concurrency: 50 });
      await worker.waitUntilReady();
    },
    async close() {
      await worker?.close(true);
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
    },
  };
}
