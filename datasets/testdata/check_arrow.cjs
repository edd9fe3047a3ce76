// check_arrow.cjs reads tegrl dataset files with a second Arrow
// implementation, the apache-arrow npm package, and prints for each file
// one JSON object: its tegrl metadata, row count, fields, and per numeric
// column (list columns: their items; booleans as 0/1) the count, nulls,
// NaNs, infinities, min, max and sum of the finite values, and the first
// value of each string column. interop_test.go compares it with what the
// Go reader says (datasets.Inspect).
//
//   NODE_PATH=/path/to/node_modules node check_arrow.cjs FILE...
'use strict';

const fs = require('fs');
const arrow = require('apache-arrow');

function numericTypeId(t) {
  return t.typeId === arrow.Type.Int || t.typeId === arrow.Type.Float || t.typeId === arrow.Type.Bool;
}

function statsOf(name) {
  return { name, count: 0, nulls: 0, nans: 0, infs: 0, min: null, max: null, sum: 0 };
}

function add(s, v) {
  if (v === null || v === undefined) {
    s.nulls++;
    return;
  }
  s.count++;
  let x;
  if (typeof v === 'bigint') x = Number(v);
  else if (typeof v === 'boolean') x = v ? 1 : 0;
  else x = v;
  if (Number.isNaN(x)) { s.nans++; return; }
  if (!Number.isFinite(x)) { s.infs++; return; }
  if (s.min === null || x < s.min) s.min = x;
  if (s.max === null || x > s.max) s.max = x;
  s.sum += x;
}

function inspect(path) {
  const table = arrow.tableFromIPC(fs.readFileSync(path));
  const meta = {};
  for (const [k, v] of table.schema.metadata) meta[k] = v;
  const out = {
    file: path,
    kind: meta['tegrl.kind'] || '',
    observation_schema_hash: meta['tegrl.observation_schema_hash'] || '',
    rows: table.numRows,
    batches: table.batches.length,
    fields: table.schema.fields.map((f) => f.name),
    columns: [],
    first_strings: {},
  };
  for (const f of table.schema.fields) {
    const col = table.getChild(f.name);
    const t = f.type;
    if (t.typeId === arrow.Type.Utf8) {
      out.first_strings[f.name] = table.numRows > 0 ? col.get(0) : null;
      continue;
    }
    const isList = t.typeId === arrow.Type.List;
    const item = isList ? t.children[0].type : t;
    if (!numericTypeId(item)) continue;
    const s = statsOf(f.name);
    for (let i = 0; i < table.numRows; i++) {
      const v = col.get(i);
      if (!isList) { add(s, v); continue; }
      if (v === null) { s.nulls++; continue; }
      for (const x of v) add(s, x);
    }
    out.columns.push(s);
  }
  return out;
}

for (const path of process.argv.slice(2)) {
  process.stdout.write(JSON.stringify(inspect(path)) + '\n');
}
