// mcap_read.mjs — reads an MCAP file with the npm registry's @mcap/core
// (an implementation independent of khz's writer) and prints what a test
// checks, as JSON: header, schemas, channels, statistics, chunk count, and
// per channel its messages' log times, publish times, sequence numbers and
// the SHA-1 of each message's bytes. Both of the library's readers run: the
// indexed one (summary, chunk indexes, message indexes, CRCs: what Foxglove
// seeks with) and the streaming one (every record in file order).
//
//   node tests/viewer/mcap_read.mjs FILE.mcap VIEWER_DIR [DUMP_PREFIX]
//
// With DUMP_PREFIX, each topic's messages are also written, in read order, to
// DUMP_PREFIX + topic with '/' as '_' + '.bin' (uint32 length + bytes each),
// and the JSON carries each schema's data (base64) by name.
import { createRequire } from 'node:module';
import { open, readFile, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [file, viewerDir, dumpPrefix] = process.argv.slice(2);
const require = createRequire(join(resolve(viewerDir), 'package.json'));
const mcapEntry = require.resolve('@mcap/core').replace('/cjs/', '/esm/');
const { McapIndexedReader, McapStreamReader } = await import(pathToFileURL(mcapEntry).href);

const fh = await open(file, 'r');
const size = (await fh.stat()).size;
const readable = {
  size: async () => BigInt(size),
  read: async (offset, length) => {
    const buf = new Uint8Array(Number(length));
    await fh.read(buf, 0, buf.length, Number(offset));
    return buf;
  },
};
const reader = await McapIndexedReader.Initialize({ readable });
const out = {
  header: reader.header,
  schemas: [...reader.schemasById.values()].map((s) => ({ id: s.id, name: s.name, encoding: s.encoding, bytes: s.data.length })),
  channels: [...reader.channelsById.values()].map((c) => ({ id: c.id, topic: c.topic, schemaId: c.schemaId, messageEncoding: c.messageEncoding })),
  statistics: reader.statistics && {
    messageCount: Number(reader.statistics.messageCount),
    channelMessageCounts: Object.fromEntries([...reader.statistics.channelMessageCounts].map(([k, v]) => [k, Number(v)])),
    messageStartTime: reader.statistics.messageStartTime.toString(),
    messageEndTime: reader.statistics.messageEndTime.toString(),
  },
  chunks: reader.chunkIndexes.length,
  messages: {},
};
const dumps = {};
if (dumpPrefix) {
  out.schema_data = Object.fromEntries([...reader.schemasById.values()].map((s) => [s.name, Buffer.from(s.data).toString('base64')]));
}
for await (const m of reader.readMessages({ validateCrcs: true })) {
  const topic = reader.channelsById.get(m.channelId).topic;
  const t = (out.messages[topic] ??= { log: [], publish: [], sequence: [], sha1: [] });
  t.log.push(m.logTime.toString());
  t.publish.push(m.publishTime.toString());
  t.sequence.push(m.sequence);
  t.sha1.push(createHash('sha1').update(m.data).digest('hex'));
  if (dumpPrefix) {
    const len = Buffer.alloc(4);
    len.writeUInt32LE(m.data.length);
    (dumps[topic] ??= []).push(len, Buffer.from(m.data));
  }
}
for (const [topic, parts] of Object.entries(dumps)) {
  await writeFile(dumpPrefix + topic.replaceAll('/', '_') + '.bin', Buffer.concat(parts));
}
await fh.close();

// the streaming reader over the whole file: record counts by type
const stream = new McapStreamReader({ validateCrcs: true });
stream.append(await readFile(file));
const kinds = {};
for (let r; (r = stream.nextRecord()); ) kinds[r.type] = (kinds[r.type] ?? 0) + 1;
out.stream = { records: kinds, done: stream.done() };
process.stdout.write(JSON.stringify(out));
