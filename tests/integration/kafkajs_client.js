// kafkajs against a minikafka cluster's Kafka listeners, driven by test_kafkajs.py.
//   node kafkajs_client.js produce BOOTSTRAP TOPIC COUNT   -> {"offsets": {partition: [base offsets]}, "acked": n}
//   node kafkajs_client.js consume BOOTSTRAP TOPIC COUNT   -> {"values": [...]} (needs consumer groups)
// The producer is idempotent (kafkajs's idempotent: true, one request in flight) and creates the topic through
// the admin client first. Errors go to stderr and exit 1.
const { Kafka, logLevel } = require("kafkajs");

async function produce(kafka, topic, count) {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 3 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const offsets = {};
  let acked = 0;
  for (let i = 0; i < count; i += 50) {
    const messages = [];
    for (let j = i; j < Math.min(count, i + 50); j++) {
      messages.push({ partition: j % 2, value: `kafkajs-${j}` });
    }
    const results = await producer.send({ topic, acks: -1, messages });
    for (const r of results) {
      (offsets[r.partition] = offsets[r.partition] || []).push(Number(r.baseOffset));
    }
    acked += messages.length;
  }
  await producer.disconnect();
  return { offsets, acked };
}

async function consume(kafka, topic, count) {
  const consumer = kafka.consumer({ groupId: "kafkajs-test" });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values = [];
  await new Promise((resolve, reject) => {
    consumer
      .run({
        eachMessage: async ({ message }) => {
          values.push(message.value.toString());
          if (values.length >= count) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return { values };
}

async function main() {
  const [mode, bootstrap, topic, count] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "minikafka-test", brokers: bootstrap.split(","), logLevel: logLevel.WARN });
  const result = mode === "produce" ? await produce(kafka, topic, Number(count)) : await consume(kafka, topic, Number(count));
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
