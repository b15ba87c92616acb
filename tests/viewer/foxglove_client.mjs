// foxglove_client.mjs — connects to `khz view`'s Foxglove endpoint with the npm
// registry's @foxglove/ws-protocol client (over the `ws` package), subscribes
// to every advertised channel for SECONDS and prints, as JSON, the server
// info, the channels (schemas base64) and per topic the messages' count,
// timestamps, the first and last payloads (base64) and the last 20 payloads
// by timestamp (to pair a state with its transforms and contacts).
//
//   node foxglove_client.mjs VIEWER_DIR ws://127.0.0.1:PORT/foxglove SECONDS
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [viewerDir, url, seconds] = process.argv.slice(2);
const require = createRequire(join(resolve(viewerDir), 'package.json'));
const wsp = await import(pathToFileURL(require.resolve('@foxglove/ws-protocol')).href);
const FoxgloveClient = wsp.FoxgloveClient ?? wsp.default.FoxgloveClient;
const WebSocket = (await import(pathToFileURL(require.resolve('ws')).href)).default;

const out = { serverInfo: null, channels: [], topics: {} };
const client = new FoxgloveClient({ ws: new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
const byId = new Map();
const subTopic = new Map();
client.on('serverInfo', (info) => { out.serverInfo = info; });
client.on('error', (e) => { out.error = String(e); });
client.on('advertise', (chans) => {
  for (const c of chans) {
    out.channels.push(c);
    byId.set(c.id, c);
    subTopic.set(client.subscribe(c.id), c.topic);
  }
});
client.on('message', ({ subscriptionId, timestamp, data }) => {
  const topic = subTopic.get(subscriptionId);
  const t = (out.topics[topic] ??= { count: 0, timestamps: [], first: null, last: null, recent: [] });
  const b64 = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  t.count++;
  t.timestamps.push(timestamp.toString());
  if (t.first === null) t.first = b64;
  t.last = b64;
  t.recent.push([timestamp.toString(), b64]);
  if (t.recent.length > 20) t.recent.shift();
});
await new Promise((r) => setTimeout(r, 1000 * parseFloat(seconds)));
client.close();
process.stdout.write(JSON.stringify(out));
