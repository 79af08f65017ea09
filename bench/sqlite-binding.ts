/**
 * better-sqlite3 against `node:sqlite` on the workloads Membrane's storage runs (issue #14).
 *
 *   node --import tsx bench/sqlite-binding.ts [--bs3-binding=PATH/better_sqlite3.node] [--rounds=N]
 *
 * On Node 22/24 better-sqlite3 12.x needs an addon built for that Node's ABI (MEMBRANE_BS3_BINDING
 * or the flag), or point `--bs3-module=DIR` (MEMBRANE_BS3_MODULE) at another copy of the package,
 * e.g. 13.x with its prebuilt N-API addon; see docs/storage.md, "The SQLite binding". Where
 * node:sqlite is absent (Node 20) only better-sqlite3 runs.
 *
 * Each side (bench/sqlite-sides.ts) opens its connections the way src/storage/sqlite.ts does
 * (busy timeout 5 s, trusted_schema=OFF, foreign_keys=ON, WAL checked, synchronous per workload)
 * and runs:
 * a) 10 000 small files (an inode row, a directory entry, a 200 B chunk, the usage counter) in
 *    transactions of 100, synchronous=FULL and NORMAL; b) 64 MiB written as 1 MiB blobs, one
 *    transaction each, then read back; c) 100 000 point selects by primary key (one prepared
 *    statement, shuffled keys); d) iterating 100 000 rows; e) serializing a 16 MiB database and
 *    opening a read-only connection on the bytes (how the vfs_query child gets an in-memory VFS),
 *    and e') the substitute where serialize is missing: VACUUM INTO a file, open it read-only;
 *    f) open + configure + close of a file connection, ×200.
 *
 * One warm-up round, then `--rounds` (default 7, at least 5) rounds; each round runs both sides,
 * in an order that alternates by round. Reported: the median wall time per side, the ratio of
 * medians node:sqlite / better-sqlite3 (< 1: node:sqlite faster) with the range of the per-round
 * ratios, for wall time and for the process's CPU time (user + system, which a busy machine
 * disturbs less; for the fsync-bound workloads wall time is the one that matters).
 * Files live on the disk of `os.tmpdir()` in a directory removed at the end.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, median } from './lib.ts';
import { loadBetterSqlite3, loadNodeSqlite, type Bs3 } from './sqlite-bindings.ts';
import { bs3Side, nodeSide, type Side, type Sync } from './sqlite-sides.ts';

const SMALL_FILES = 10_000;
const TX_FILES = 100;
const SMALL_BYTES = 200;
const BIG_BLOBS = 64;
const MIB = 1024 * 1024;
const POINT_ROWS = 100_000;
const SNAPSHOT_BYTES = 16 * MIB;
const OPENS = 200;

const VFS_DDL = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
CREATE TABLE inodes (ino INTEGER PRIMARY KEY, kind TEXT NOT NULL, mode INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL) STRICT;
CREATE TABLE dirents (seq INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE,
  name TEXT NOT NULL, ino INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE, UNIQUE (parent, name)) STRICT;
CREATE TABLE chunks (ino INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE, idx INTEGER NOT NULL, data BLOB NOT NULL,
  PRIMARY KEY (ino, idx)) STRICT;
INSERT INTO meta VALUES ('used_bytes', 0);
INSERT INTO inodes VALUES (1, 'dir', 493, 0, 0);
`;

interface Workload {
  readonly name: string;
  /** One timed run on a fresh directory; returns elapsed ms. */
  run(side: Side, dir: string, fixtures: Fixtures): number;
}

/** Databases built once per side and reused by every round (the timed part only reads them). */
interface Fixtures {
  points: string;
  snapshot: string;
}

/** CPU time (user + system, all threads) of the last `time()` call, ms. */
let lastCpuMs = 0;
const time = (fn: () => void): number => {
  const cpu = process.cpuUsage();
  const t = performance.now();
  fn();
  const wall = performance.now() - t;
  const used = process.cpuUsage(cpu);
  lastCpuMs = (used.user + used.system) / 1000;
  return wall;
};

function smallFiles(sync: Sync): Workload {
  return {
    name: `a) ${SMALL_FILES} small files (${SMALL_BYTES} B) in tx of ${TX_FILES}, synchronous=${sync}`,
    run(side, dir) {
      const db = side.open(join(dir, 'small.sqlite'), sync);
      db.exec(VFS_DDL);
      const inode = db.prepare('INSERT INTO inodes (kind, mode, size, mtime_ns) VALUES (\'file\', 420, ?, ?)');
      const dirent = db.prepare('INSERT INTO dirents (parent, name, ino) VALUES (1, ?, ?)');
      const chunk = db.prepare('INSERT INTO chunks (ino, idx, data) VALUES (?, 0, ?)');
      const used = db.prepare("UPDATE meta SET value = value + ? WHERE key = 'used_bytes'");
      const data = new Uint8Array(SMALL_BYTES).fill(0x61);
      const ms = time(() => {
        for (let b = 0; b < SMALL_FILES / TX_FILES; b++) {
          db.tx(() => {
            for (let i = 0; i < TX_FILES; i++) {
              const n = b * TX_FILES + i;
              const ino = (inode.run(SMALL_BYTES, n) as { lastInsertRowid: number | bigint }).lastInsertRowid;
              dirent.run(`file-${n}.txt`, ino);
              chunk.run(ino, data);
              used.run(SMALL_BYTES);
            }
          });
        }
      });
      db.close();
      return ms;
    },
  };
}

const bigWrite: Workload = {
  name: `b) ${BIG_BLOBS} MiB as 1 MiB blobs: write (one tx each) + read back`,
  run(side, dir) {
    const db = side.open(join(dir, 'big.sqlite'), 'NORMAL');
    db.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT');
    const ins = db.prepare('INSERT INTO blobs (id, data) VALUES (?, ?)');
    const get = db.prepare('SELECT data FROM blobs WHERE id = ?');
    const blob = new Uint8Array(MIB).fill(0x5a);
    let sum = 0;
    const ms = time(() => {
      for (let i = 0; i < BIG_BLOBS; i++) db.tx(() => ins.run(i, blob));
      for (let i = 0; i < BIG_BLOBS; i++) {
        const row = get.get(i) as { data: Uint8Array };
        sum += row.data.byteLength;
      }
    });
    db.close();
    if (sum !== BIG_BLOBS * MIB) throw new Error(`read back ${sum} bytes`);
    return ms;
  },
};

/** Keys in a fixed shuffled order, the same for both sides. */
const KEYS = (() => {
  const keys = Array.from({ length: POINT_ROWS }, (_, i) => i + 1);
  let s = 0x9e3779b9;
  for (let i = keys.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  return keys;
})();

const pointSelects: Workload = {
  name: `c) ${POINT_ROWS} point selects by primary key (prepared)`,
  run(side, _dir, fx) {
    const db = side.open(fx.points, 'NORMAL');
    const get = db.prepare('SELECT name, size FROM files WHERE id = ?');
    let found = 0;
    const ms = time(() => {
      for (const k of KEYS) if (get.get(k) !== undefined) found++;
    });
    db.close();
    if (found !== POINT_ROWS) throw new Error(`found ${found} rows`);
    return ms;
  },
};

const iterateRows: Workload = {
  name: `d) iterate ${POINT_ROWS} rows`,
  run(side, _dir, fx) {
    const db = side.open(fx.points, 'NORMAL');
    const all = db.prepare('SELECT id, name, size FROM files ORDER BY id');
    let total = 0;
    const ms = time(() => {
      for (const row of all.iterate()) total += (row as { size: number }).size;
    });
    db.close();
    if (total !== (POINT_ROWS * (POINT_ROWS - 1)) / 2) throw new Error(`sum ${total}`);
    return ms;
  },
};

function snapshot(part: 'serialize' | 'reopen'): Workload {
  return {
    name: part === 'serialize' ? 'e) serialize a 16 MiB database' : 'e) open read-only from those bytes + count(*)',
    run(side, _dir, fx) {
      const db = side.open(fx.snapshot, 'NORMAL');
      let bytes: Uint8Array | null = null;
      const ser = time(() => {
        bytes = db.serialize();
      });
      db.close();
      if (bytes === null) return Number.NaN;
      if ((bytes as Uint8Array).byteLength < SNAPSHOT_BYTES) throw new Error(`serialized ${(bytes as Uint8Array).byteLength} bytes`);
      if (part === 'serialize') return ser;
      let rows = -1;
      const ms = time(() => {
        const copy = side.fromBytes(bytes!);
        if (copy === null) return;
        rows = (copy.prepare('SELECT count(*) AS n FROM blobs').get() as { n: number }).n;
        copy.close();
      });
      if (rows === -1) return Number.NaN;
      if (rows !== SNAPSHOT_BYTES / 4096) throw new Error(`${rows} rows`);
      return ms;
    },
  };
}

/** What a binding without serialize (node:sqlite on 22) can do instead: copy to a file, open it read-only. */
const snapshotViaFile: Workload = {
  name: "e') the same copy through VACUUM INTO a file + open read-only + count(*)",
  run(side, dir, fx) {
    const db = side.open(fx.snapshot, 'NORMAL');
    const copy = join(dir, 'copy.sqlite');
    let rows = -1;
    const ms = time(() => {
      db.exec(`VACUUM INTO '${copy}'`);
      const ro = side.openReadOnly(copy);
      rows = (ro.prepare('SELECT count(*) AS n FROM blobs').get() as { n: number }).n;
      ro.close();
    });
    db.close();
    if (rows !== SNAPSHOT_BYTES / 4096) throw new Error(`${rows} rows`);
    return ms;
  },
};

const openClose: Workload = {
  name: `f) open + configure + close a file connection, ×${OPENS}`,
  run(side, _dir, fx) {
    return time(() => {
      for (let i = 0; i < OPENS; i++) side.open(fx.points, 'FULL').close();
    });
  },
};

const WORKLOADS: readonly Workload[] = [
  smallFiles('FULL'),
  smallFiles('NORMAL'),
  bigWrite,
  pointSelects,
  iterateRows,
  snapshot('serialize'),
  snapshot('reopen'),
  snapshotViaFile,
  openClose,
];

function buildFixtures(side: Side, dir: string): Fixtures {
  const points = join(dir, `points-${side.name.replace(':', '-')}.sqlite`);
  let db = side.open(points, 'NORMAL');
  db.exec('CREATE TABLE files (id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER NOT NULL) STRICT');
  const ins = db.prepare('INSERT INTO files (id, name, size) VALUES (?, ?, ?)');
  db.tx(() => {
    for (let i = 1; i <= POINT_ROWS; i++) ins.run(i, `workspace/dir-${i % 97}/file-${i}.txt`, i - 1);
  });
  db.close();
  const snap = join(dir, `snapshot-${side.name.replace(':', '-')}.sqlite`);
  db = side.open(snap, 'NORMAL');
  db.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT');
  const blob = db.prepare('INSERT INTO blobs (data) VALUES (randomblob(3000))');
  db.tx(() => {
    for (let i = 0; i < SNAPSHOT_BYTES / 4096; i++) blob.run();
  });
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
  return { points, snapshot: snap };
}

export async function sqliteBinding(rounds = 7): Promise<void> {
  const bs3 = loadBetterSqlite3();
  const sqlite = await loadNodeSqlite();
  const sides: Side[] = [bs3Side(bs3), ...(sqlite === null ? [] : [nodeSide(sqlite)])];
  const root = mkdtempSync(join(tmpdir(), 'membrane-sqlite-bench-'));
  try {
    const fixtures = new Map(sides.map((s) => [s.name, buildFixtures(s, root)]));
    const times = new Map<string, number[]>(WORKLOADS.flatMap((w) => sides.flatMap((s) => [[`${w.name}|${s.name}`, []], [`${w.name}|${s.name}|cpu`, []]])));
    for (let round = 0; round <= rounds; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const w of WORKLOADS) {
        for (const side of order) {
          const dir = mkdtempSync(join(root, 'r-'));
          const ms = w.run(side, dir, fixtures.get(side.name)!);
          rmSync(dir, { recursive: true, force: true });
          if (round > 0) {
            times.get(`${w.name}|${side.name}`)!.push(ms);
            times.get(`${w.name}|${side.name}|cpu`)!.push(Number.isNaN(ms) ? ms : lastCpuMs);
          }
        }
      }
    }
    report(bs3, sqlite !== null, rounds, times);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Median of node:sqlite over median of better-sqlite3, with the range of the per-round ratios. */
function ratio(b: readonly number[], n: readonly number[]): string {
  const nm = n.length > 0 ? median(n) : Number.NaN;
  if (!Number.isFinite(nm)) return '—';
  const paired = n.map((x, i) => x / b[i]!);
  return `${(nm / median(b)).toFixed(2)}× (${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)})`;
}

function report(bs3: Bs3, hasNode: boolean, rounds: number, times: Map<string, number[]>): void {
  const nodeSqlite = hasNode ? 'node:sqlite present' : 'node:sqlite absent';
  console.log(`\n## SQLite binding — node ${process.version} (${nodeSqlite}); ${bs3.source}, SQLite ${bs3.sqliteVersion}`);
  console.log(`median of ${rounds} rounds after one warm-up; ratio = node:sqlite / better-sqlite3 (< 1: node:sqlite faster),`);
  console.log('in brackets the range of the per-round ratios; cpu = user + system time of the process (steadier than wall on a shared machine)\n');
  const head = ['workload', 'better-sqlite3 wall', 'node:sqlite wall', 'wall ratio', 'cpu ratio'];
  const rows = WORKLOADS.map((w) => {
    const series = (side: string, cpu = false) => times.get(`${w.name}|${side}${cpu ? '|cpu' : ''}`) ?? [];
    const n = series('node:sqlite');
    const nm = n.length > 0 ? median(n) : Number.NaN;
    return [
      w.name,
      `${fmt(median(series('better-sqlite3')), 'ms')} ms`,
      Number.isFinite(nm) ? `${fmt(nm, 'ms')} ms` : hasNode ? 'unsupported' : '—',
      ratio(series('better-sqlite3'), n),
      ratio(series('better-sqlite3', true), series('node:sqlite', true)),
    ];
  });
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(w[i]!)).join('  ').trimEnd();
  console.log(line(head));
  console.log(w.map((n) => '-'.repeat(n)).join('  '));
  for (const r of rows) console.log(line(r));
}

if (process.argv[1]?.endsWith('sqlite-binding.ts')) {
  const flag = process.argv.find((a) => a.startsWith('--rounds='));
  const rounds = flag === undefined ? 7 : Number(flag.slice('--rounds='.length));
  if (!Number.isInteger(rounds) || rounds < 5) throw new Error('--rounds must be an integer ≥ 5');
  await sqliteBinding(rounds);
}
