// kafkajs against a minikafka cluster's Kafka listeners, driven by test_kafkajs.py.
//   node kafkajs_client.js produce BOOTSTRAP TOPIC COUNT   -> {"offsets": {partition: [base offsets]}, "acked": n}
//   node kafkajs_client.js consume BOOTSTRAP TOPIC COUNT   -> {"values": [...]} (needs consumer groups)
//   node kafkajs_client.js acls BOOTSTRAP TOPIC PRINCIPAL   -> what createAcls, describeAcls and deleteAcls answered
// KAFKAJS_SECURITY (JSON: {"ca": path, "username", "password"}) connects with SASL PLAIN over TLS.
// The producer is idempotent (kafkajs's idempotent: true, one request in flight) and creates the topic through
// the admin client first. Errors go to stderr and exit 1.
const fs = require("fs");
const {
  Kafka,
  logLevel,
  AclResourceTypes,
  AclOperationTypes,
  AclPermissionTypes,
  ResourcePatternTypes,
} = require("kafkajs");

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

// The steps of kafkajs's own admin ACL tests: create two ACLs, describe them by a literal and a MATCH filter,
// delete one with a filter, describe again; each answer as kafkajs returns it.
async function acls(kafka, topic, principal) {
  const admin = kafka.admin();
  await admin.connect();
  const entry = (operation) => ({
    resourceType: AclResourceTypes.TOPIC,
    resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL,
    principal,
    host: "*",
    operation,
    permissionType: AclPermissionTypes.ALLOW,
  });
  const created = await admin.createAcls({ acl: [entry(AclOperationTypes.READ), entry(AclOperationTypes.WRITE)] });
  const filter = (patternType, operation) => ({
    resourceType: AclResourceTypes.TOPIC,
    resourceName: topic,
    resourcePatternType: patternType,
    principal,
    host: "*",
    operation,
    permissionType: AclPermissionTypes.ANY,
  });
  const literal = await admin.describeAcls(filter(ResourcePatternTypes.LITERAL, AclOperationTypes.ANY));
  const match = await admin.describeAcls(filter(ResourcePatternTypes.MATCH, AclOperationTypes.ANY));
  const deleted = await admin.deleteAcls({ filters: [filter(ResourcePatternTypes.ANY, AclOperationTypes.WRITE)] });
  const after = await admin.describeAcls(filter(ResourcePatternTypes.ANY, AclOperationTypes.ANY));
  let invalid = null;
  try {
    await admin.createAcls({ acl: [{ ...entry(AclOperationTypes.READ), resourceName: "" }] });
  } catch (error) {
    invalid = { type: error.type, message: error.message };
  }
  await admin.disconnect();
  return { created, literal, match, deleted, after, invalid };
}

function connection(bootstrap) {
  const settings = { clientId: "minikafka-test", brokers: bootstrap.split(","), logLevel: logLevel.WARN };
  if (process.env.KAFKAJS_SECURITY) {
    const security = JSON.parse(process.env.KAFKAJS_SECURITY);
    settings.ssl = { ca: [fs.readFileSync(security.ca, "utf-8")] };
    settings.sasl = { mechanism: "plain", username: security.username, password: security.password };
  }
  return new Kafka(settings);
}

async function main() {
  const [mode, bootstrap, topic, count] = process.argv.slice(2);
  const kafka = connection(bootstrap);
  const modes = { produce, consume, acls };
  const result = await modes[mode](kafka, topic, mode === "acls" ? count : Number(count));
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
