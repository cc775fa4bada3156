// Apache's rocketmq-client-nodejs, unchanged, against halfmq's RocketMQ 5 front: the Python test's flow.
// Usage: node flow.js <host:grpc-port>; prints one JSON line with what the consumer received.
'use strict';
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const endpoints = process.argv[2];
const asked = [];

async function main() {
  const producer = new Producer({
    endpoints,
    topic: 'node-orders',
    checker: { async check(message) { asked.push(message.body.toString()); return TransactionResolution.COMMIT; } },
  });
  await producer.startup();
  const plain = await producer.send({ topic: 'node-orders', tag: 'plain', body: Buffer.from('node-plain') });
  for (const [body, end] of [['node-commit', 'commit'], ['node-rollback', 'rollback'], ['node-left-open', null]]) {
    const tx = producer.beginTransaction();
    await producer.send({ topic: 'node-orders', tag: 'tx', body: Buffer.from(body) }, tx);
    if (end) await tx[end]();
  }
  const consumer = new SimpleConsumer({
    endpoints, consumerGroup: 'node-billing', subscriptions: new Map().set('node-orders', '*'), awaitDuration: 1000,
  });
  await consumer.startup();
  const received = [];
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline && received.length < 3) {
    for (const message of await consumer.receive(16, 30000)) {
      received.push(message.body.toString());
      await consumer.ack(message);
    }
  }
  console.log(JSON.stringify({ plainId: plain.messageId, received: received.sort(), asked }));
  for (const client of [consumer, producer]) {
    try { await client.shutdown(); } catch (err) { /* the client's logger may already be closed: nothing to clean */ }
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
