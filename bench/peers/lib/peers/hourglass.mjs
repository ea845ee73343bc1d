// hourglass, measured as a user runs it: jobs published with publisher confirms to <prefix>.in
// with x-schedule-at, handled from a queue bound to <prefix>.out.
import amqp from 'amqplib';

export const library = 'hourglass';

export async function open({ amqpUrl, prefix, tag }) {
  if (!amqpUrl || !prefix) throw new Error('hourglass: PEERS_AMQP_URL and PEERS_HOURGLASS_PREFIX are needed');
  const connection = await amqp.connect(amqpUrl);
  const publisher = await connection.createConfirmChannel();
  const consumer = await connection.createChannel();
  // Names under hourglass.* : the application user of the bench may declare those only.
  const queue = `hourglass.bench.consumer.${tag}`;
  await consumer.assertQueue(queue, { durable: true });
  await consumer.purgeQueue(queue);
  await consumer.bindQueue(queue, `${prefix}.out`, '#');
  await consumer.prefetch(50);
  let consumerTag = null;
  return {
    async schedule(chunk) {
      for (const { index, dueAt } of chunk) {
        publisher.publish(`${prefix}.in`, 'peers', Buffer.from(String(index)), {
          persistent: true,
          headers: { 'x-schedule-at': dueAt },
        });
      }
      await publisher.waitForConfirms();
    },
    async start(onJob) {
      ({ consumerTag } = await consumer.consume(queue, (message) => {
        if (message === null) return;  // cancelled by the broker
        onJob(Number(message.content.toString()));
        consumer.ack(message);
      }));
    },
    async close() {
      if (consumerTag) await consumer.cancel(consumerTag);
      await consumer.deleteQueue(queue).catch(() => {});
      await connection.close();
    },
  };
}
