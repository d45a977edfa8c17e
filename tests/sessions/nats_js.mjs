// A nats.js (v3) session as applications run one: the same steps as nats_py.py, one at a
// time so the requests come in the same order on every run.
//
// Usage: node tests/sessions/nats_js.mjs nats://127.0.0.1:PORT   (after `npm ci` here)
// tests/client_sessions_vs_nats.rs runs it through a recording proxy, once against
// nats-server and once against jetcore, and compares the replies. Nothing here checks a
// reply: the comparison does. A step that throws ends the session with its error.
import { connect, headers } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";

const nc = await connect({ servers: process.argv[2] });
const jsm = await jetstreamManager(nc);
const js = jetstream(nc);
const api = (subject, body) => nc.request(subject, JSON.stringify(body), { timeout: 5000 });
const withHeaders = (pairs) => {
  const h = headers();
  for (const [name, value] of pairs) h.set(name, value);
  return h;
};

await jsm.getAccountInfo();
const config = { name: "ORDERS", subjects: ["orders.>"], max_msgs_per_subject: 10 };
await jsm.streams.add(config);
await jsm.streams.info("ORDERS");
for (let i = 0; i < 6; i++) {
  await js.publish(`orders.${i % 3}`, `order ${i}`);
}
await js.publish("orders.1", "once", { msgID: "m-1" });
await js.publish("orders.1", "once", { msgID: "m-1" });
await js.publish("orders.2", "wrong", { expect: { lastSequence: 1 } }).catch(() => {});
await jsm.streams.update("ORDERS", { ...config, description: "orders of the day" });
await jsm.streams.getMessage("ORDERS", { seq: 2 });
await jsm.streams.getMessage("ORDERS", { last_by_subj: "orders.1" });
await jsm.streams.deleteMessage("ORDERS", 3);
await jsm.streams.purge("ORDERS", { filter: "orders.0" });

// A durable pull consumer: fetch, acks that want an answer, naks, info.
await jsm.consumers.add("ORDERS", { durable_name: "WORKER", ack_policy: AckPolicy.Explicit });
const worker = await js.consumers.get("ORDERS", "WORKER");
for await (const message of await worker.fetch({ max_messages: 3, expires: 2000 })) {
  await message.ackAck();
}
for await (const message of await worker.fetch({ max_messages: 2, expires: 2000 })) {
  message.nak();
}
await worker.info();
await jsm.consumers.delete("ORDERS", "WORKER");

// KV.
const kv = await new Kvm(nc).create("PROFILE", { history: 3 });
await kv.put("alice", "1");
await kv.put("alice", "2");
const revision = await kv.put("bob", "1");
await kv.update("bob", "2", revision);
await kv.update("bob", "3", revision).catch(() => {});
await kv.get("alice");
await kv.create("carol", "x");
await kv.delete("carol");
for await (const _ of await kv.history({ key: "alice" })) {
  // read to the end
}
for await (const _ of await kv.keys()) {
  // read to the end
}
await kv.purge("bob");
await kv.status();

// Object store.
const files = await new Objm(nc).create("FILES");
const data = new Uint8Array(300_000).map((_, i) => i % 256);
await files.putBlob({ name: "report.csv" }, data);
await files.info("report.csv");
await files.getBlob("report.csv");
await files.list();
await files.delete("report.csv");
await files.status();

// Counters and schedules, through the API as raw requests.
await api("$JS.API.STREAM.CREATE.HITS", { name: "HITS", subjects: ["hits.>"], allow_msg_counter: true });
for (const increment of ["1", "41", "-2"]) {
  await js.publish("hits.page", "", { headers: withHeaders([["Nats-Incr", increment]]) });
}
await jsm.streams.getMessage("HITS", { last_by_subj: "hits.page" });
await api("$JS.API.STREAM.CREATE.LATER", { name: "LATER", subjects: ["later.>"], allow_msg_schedules: true });
const schedule = withHeaders([["Nats-Schedule", "@every 1h"], ["Nats-Schedule-Target", "later.ticks"]]);
await js.publish("later.every", "tick", { headers: schedule });
await jsm.streams.info("LATER");

// A snapshot, chunks acked as they come; the chunks' bytes depend on the compressor.
const chunks = nc.subscribe("snapshot.orders");
await api("$JS.API.STREAM.SNAPSHOT.ORDERS", { deliver_subject: "snapshot.orders", chunk_size: 1024 });
for await (const chunk of chunks) {
  if (chunk.data.length === 0) break;
  if (chunk.reply) nc.publish(chunk.reply);
}

await jsm.streams.names().next();
await jsm.streams.list().next();
for (const name of ["LATER", "HITS", "ORDERS", "KV_PROFILE", "OBJ_FILES"]) {
  await jsm.streams.delete(name);
}
await nc.drain();
