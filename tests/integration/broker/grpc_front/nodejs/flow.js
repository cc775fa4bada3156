// Apache's rocketmq-client-nodejs, unchanged, against halfmq's RocketMQ 5 front: the Python test's flows.
// Usage: node flow.js <host:grpc-port> [transactions|fifo|delay]; prints one JSON line with what the consumers received.
'use strict';
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const endpoints = process.argv[2];
const asked = [];

async function shutdown(...clients) {
  for (const client of clients) {
    try { await client.shutdown(); } catch (err) { /* the client's logger may already be closed: nothing to clean */ }
  }
}

async function transactions() {
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
  await shutdown(consumer, producer);
  return { plainId: plain.messageId, received: received.sort(), asked };
}

// Two SimpleConsumers of one consumer group share 3 message groups of 6 messages: a group's one at a time, in send order.
async function fifo() {
  const groups = ['user-1', 'user-2', 'user-3'];
  const perGroup = 6;
  const producer = new Producer({ endpoints, topic: 'node-credits' });
  await producer.startup();
  for (let seq = 0; seq < perGroup; seq++) {
    for (const group of groups) {
      await producer.send({ topic: 'node-credits', messageGroup: group, body: Buffer.from(`${group}:${seq}`) });
    }
  }
  const seen = [];  // [group, seq, the group it was received with], each before its ack
  const batches = [];  // the message groups of each receive
  const consumers = [0, 1].map(() => new SimpleConsumer({
    endpoints, consumerGroup: 'node-appliers', subscriptions: new Map().set('node-credits', '*'), awaitDuration: 1000,
  }));
  async function consume(consumer) {
    await consumer.startup();
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline && seen.length < groups.length * perGroup) {
      const batch = await consumer.receive(32, 60000);
      batches.push(batch.map((message) => message.messageGroup));
      for (const message of batch) {
        const [group, seq] = message.body.toString().split(':');
        seen.push([group, Number(seq), message.messageGroup]);
        await consumer.ack(message);  // the group's next message is handed out only after this
      }
    }
  }
  await Promise.all(consumers.map(consume));
  await shutdown(...consumers, producer);
  return { seen, batches };
}

// A message delayed to a delivery timestamp (ms), and a plain one after it.
async function delay() {
  const producer = new Producer({ endpoints, topic: 'node-payments' });
  await producer.startup();
  const consumer = new SimpleConsumer({
    endpoints, consumerGroup: 'node-reminders', subscriptions: new Map().set('node-payments', '*'), awaitDuration: 1000,
  });
  await consumer.startup();
  const due = new Date(Date.now() + 3000);
  await producer.send({ topic: 'node-payments', deliveryTimestamp: due, body: Buffer.from('payment due') });
  await producer.send({ topic: 'node-payments', body: Buffer.from('paid') });
  const arrivals = {};
  const deadline = Date.now() + 40000;
  while (Date.now() < deadline && Object.keys(arrivals).length < 2) {
    for (const message of await consumer.receive(16, 30000)) {
      arrivals[message.body.toString()] = { at: Date.now(), deliveryTimestamp: message.deliveryTimestamp?.getTime() };
      await consumer.ack(message);
    }
  }
  await shutdown(consumer, producer);
  return { due: due.getTime(), arrivals };
}

async function main() {
  const scenario = { transactions, fifo, delay }[process.argv[3] || 'transactions'];
  console.log(JSON.stringify(await scenario()));
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
