/**
 * What each SQLite binding can do on the running Node, found by running it: every feature
 * Membrane's storage uses today through better-sqlite3 (src/storage/sqlite.ts, query-child.mjs,
 * vfs-*.ts, kv.ts, queue.ts, audit.ts), checked on better-sqlite3 and on `node:sqlite` where it
 * exists. Prints one markdown table for this Node; docs/storage.md merges the tables of 20, 22
 * and 24.
 *
 *   node --import tsx bench/sqlite-features.ts [--bs3-binding=PATH/better_sqlite3.node | --bs3-module=DIR]
 *
 * Every cell is the outcome of code run just now ("yes"/"no" plus what was seen); a probe that
 * throws prints what it threw. Files live in a private temp directory removed at the end.
 */

import { loadBetterSqlite3, loadNodeSqlite } from './sqlite-bindings.ts';
import { bs3Features } from './sqlite-probes-bs3.ts';
import { nodeFeatures } from './sqlite-probes-node.ts';
import { attempt, errorText, removeProbeFiles, type Probe } from './sqlite-probes.ts';

const ROWS: readonly [key: string, label: string][] = [
  ['version', 'SQLite version'],
  ['warning', 'ExperimentalWarning printed on load'],
  ['gcIdle', 'survives GC of a closed connection while idle'],
  ['readonlyOpen', 'open read-only (O_RDONLY)'],
  ['busy', 'busy timeout'],
  ['pragma', 'pragma results'],
  ['transactions', 'transactions'],
  ['safeIntegers', 'safe integers / BigInt (2^53+1)'],
  ['raw', 'raw (array) rows'],
  ['columns', 'columns()'],
  ['iterate', 'iterate()'],
  ['readerReadonly', 'statement reader / readonly flags'],
  ['authorizer', 'setAuthorizer (substitute for the flags)'],
  ['multiStatement', 'prepare() of two statements'],
  ['blobType', 'BLOB read as'],
  ['serialize', 'serialize'],
  ['deserialize', 'deserialize from bytes, read-only'],
  ['loadExtensionApi', 'loadExtension disabled by default (JS API)'],
  ['loadExtensionSql', 'SQL load_extension() disabled'],
  ['errors', 'error shape'],
  ['heapLimit', 'hard_heap_limit enforced'],
];

function cell(probes: Record<string, Probe> | string, key: string): string {
  if (typeof probes === 'string') return probes;
  const probe = probes[key];
  if (probe === undefined) return '?';
  const r = attempt(probe);
  return (r.ok ? String(r.value) : `probe threw ${r.error}`).replaceAll('|', '\\|');
}

let bs3: Record<string, Probe> | string;
let bs3Source = 'better-sqlite3';
try {
  const loaded = loadBetterSqlite3();
  bs3Source = loaded.source;
  bs3 = bs3Features(loaded);
} catch (err) {
  bs3 = `does not load: ${errorText(err)}`;
}
const sqlite = await loadNodeSqlite();
const node: Record<string, Probe> | string = sqlite === null ? 'absent (no node:sqlite module)' : nodeFeatures(sqlite);

console.log(`# SQLite binding features — node ${process.version}; ${bs3Source}\n`);
console.log('| feature | better-sqlite3 | node:sqlite |');
console.log('|---|---|---|');
try {
  for (const [key, label] of ROWS) console.log(`| ${label} | ${cell(bs3, key)} | ${cell(node, key)} |`);
} finally {
  removeProbeFiles();
}
