// foxglove_schemas.mjs — Foxglove's own message definitions (the npm registry's
// @foxglove/schemas, pinned in clients/viewer/package-lock.json) as the .proto
// text its generateProto writes, for test_mcap to compare with the descriptors
// khz writes (clients/python/khz/mcap.py). Prints {"Name": "proto text", ...}.
//
//   node foxglove_schemas.mjs VIEWER_DIR NAME...
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [viewerDir, ...names] = process.argv.slice(2);
const require = createRequire(join(resolve(viewerDir), 'package.json'));
const { foxgloveMessageSchemas, generateProto } = require('@foxglove/schemas/internal');
const out = {};
for (const name of names) {
  const schema = foxgloveMessageSchemas[name];
  if (!schema) throw new Error(`@foxglove/schemas has no message ${name}`);
  // (the enums its fields use are nested in it, as Foxglove's own files have them)
  const enums = [...new Set(schema.fields.filter((f) => f.type.type === 'enum').map((f) => f.type.enum))];
  out[name] = generateProto(schema, enums);
}
process.stdout.write(JSON.stringify(out));
