// parquet_read.mjs — reads a Parquet file with the npm registry's hyparquet
// (a reader independent of khz.parquet's writer) and prints, as JSON, what
// tests/python/test_campaign.py compares with runs.csv: the footer (rows,
// schema, key-value metadata, created_by, per column chunk its type, codec
// and encodings) and every row as {column: value}, int64 values as strings
// (BigInt), doubles as JSON numbers (shortest round-trip form), nulls as null.
//
//   node tests/python/parquet_read.mjs FILE.parquet VIEWER_DIR
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [file, viewerDir] = process.argv.slice(2);
const require = createRequire(join(resolve(viewerDir), 'package.json'));
const entry = require.resolve('hyparquet'); // its node entry (asyncBufferFromFile)
const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } =
  await import(pathToFileURL(entry).href);

const buf = await asyncBufferFromFile(file);
const md = await parquetMetadataAsync(buf);
const rows = await parquetReadObjects({ file: buf, metadata: md });
const plain = (v) => (typeof v === 'bigint' ? v.toString() : v);
const out = {
  num_rows: plain(md.num_rows),
  created_by: md.created_by ?? null,
  key_value_metadata: Object.fromEntries((md.key_value_metadata ?? []).map((kv) => [kv.key, kv.value])),
  schema: md.schema.slice(1).map((s) => ({
    name: s.name, type: s.type, repetition_type: s.repetition_type,
    converted_type: s.converted_type ?? null, logical_type: s.logical_type?.type ?? null,
  })),
  chunks: (md.row_groups ?? []).flatMap((g) => g.columns.map((c) => ({
    path: c.meta_data.path_in_schema.join('.'), type: c.meta_data.type,
    codec: c.meta_data.codec, encodings: c.meta_data.encodings,
    num_values: plain(c.meta_data.num_values),
  }))),
  rows: rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, plain(v)]))),
};
process.stdout.write(JSON.stringify(out));
