// The audit log: appending, tail queries, the canonical encoding, concurrency and the audit key.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import {
  AuditLog,
  AUDIT_KEY_ENV,
  MAX_DETAIL_BYTES,
  MAX_DETAIL_STRING_BYTES,
  auditDetail,
  canonicalJson,
  engineDatabaseFile,
  loadAuditKey,
  parseAuditKey,
} from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { tempDir } from './helpers.ts';

const KEY = Buffer.alloc(32, 7);
const AUDIT_TS = new URL('../../src/storage/audit.ts', import.meta.url).href;

/** A fresh `$MEMBRANE_HOME` with no env key, for the duration of `fn`. */
async function withHome(fn: (home: string) => Promise<void> | void): Promise<void> {
  const { dir, cleanup } = tempDir();
  const saved = { home: process.env['MEMBRANE_HOME'], key: process.env[AUDIT_KEY_ENV] };
  process.env['MEMBRANE_HOME'] = dir;
  delete process.env[AUDIT_KEY_ENV];
  try {
    await fn(dir);
  } finally {
    if (saved.home === undefined) delete process.env['MEMBRANE_HOME'];
    else process.env['MEMBRANE_HOME'] = saved.home;
    if (saved.key === undefined) delete process.env[AUDIT_KEY_ENV];
    else process.env[AUDIT_KEY_ENV] = saved.key;
    cleanup();
  }
}

function memoryLog(): AuditLog {
  return new AuditLog(openDatabase(':memory:'), { key: KEY }, true);
}

test('append returns the record; tail returns the newest, oldest first; count counts', () => {
  const log = memoryLog();
  const before = Date.now();
  const r = log.append({ tenant: 'acme', instance: 'p1', kind: 'net.denied', detail: { host: '169.254.169.254', port: 80 } });
  assert.equal(r.v, 1);
  assert.equal(r.seq, 2, 'record 1 is the genesis');
  assert.match(r.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.ok(Date.parse(r.time) >= before - 1);
  assert.deepEqual(r.detail, { host: '169.254.169.254', port: 80 });
  for (let i = 2; i <= 10; i++) log.append({ tenant: i % 2 ? 'acme' : 'beta', kind: i % 3 ? 'kv.quota' : 'rate.limited', detail: { i } });
  assert.equal(log.count(), 11);
  assert.deepEqual(log.tail({ limit: 3 }).map((x) => x.seq), [9, 10, 11]);
  assert.deepEqual(log.tail().map((x) => x.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  assert.deepEqual(log.tail({ tenant: 'beta' }).map((x) => x.seq), [3, 5, 7, 9, 11]);
  assert.deepEqual(log.tail({ kind: 'rate.limited' }).map((x) => x.seq), [4, 7, 10]);
  assert.deepEqual(log.tail({ tenant: 'acme', kind: 'kv.quota', limit: 2 }).map((x) => x.seq), [6, 8]);
  assert.deepEqual(log.tail({ afterSeq: 4, limit: 3 }).map((x) => x.seq), [5, 6, 7], 'paging forward takes the oldest after the cursor');
  assert.deepEqual(log.tail({ afterSeq: 11 }), []);
  assert.equal(log.tail({ limit: 1 })[0]!.instance, '', 'engine-level events have instance ""');
  assert.deepEqual(log.tail({ limit: 10 })[0], r);
  assert.deepEqual(log.verify(), { ok: true, records: 11 });
  log.close();
});

test('a new log holds its genesis record (seq 1, kind genesis, the key\'s id) and verifies with 1 record', () => {
  const log = memoryLog();
  assert.deepEqual(log.verify(), { ok: true, records: 1 });
  assert.equal(log.count(), 1);
  const [genesis] = log.tail();
  assert.deepEqual([genesis!.seq, genesis!.kind, genesis!.tenant, genesis!.instance, genesis!.detail], [1, 'genesis', '', '', { keyId: log.keyId() }]);
  assert.match(log.keyId(), /^[0-9a-f]{16}$/);
  log.close();
});

test('the canonical encoding is independent of key order and has no whitespace', () => {
  const a = { b: [1, { z: true, a: null }], a: 'x', é: -0.5, '\u0000': 'nul', A: 1e21 };
  const b = { A: 1e21, '\u0000': 'nul', é: -0.5, a: 'x', b: [1, { a: null, z: true }] };
  assert.equal(canonicalJson(a), canonicalJson(b));
  assert.equal(canonicalJson(a), '{"\\u0000":"nul","A":1e+21,"a":"x","b":[1,{"a":null,"z":true}],"é":-0.5}');
  assert.equal(canonicalJson({ s: 'line\nbreak "q"', n: 0 }), '{"n":0,"s":"line\\nbreak \\"q\\""}');
});

test('records built in different key orders get the same MAC chain', () => {
  const one = memoryLog();
  const two = memoryLog();
  one.append({ tenant: 't', kind: 'k', detail: { x: 1, y: { p: 1, q: 2 } } });
  two.append({ tenant: 't', kind: 'k', detail: { y: { q: 2, p: 1 }, x: 1 } });
  assert.deepEqual(one.tail()[0]!.detail, two.tail()[0]!.detail);
  one.close();
  two.close();
});

test('details: long strings are cut with a marker, oversized details replaced, non-JSON refused', () => {
  const long = 'é'.repeat(5000);
  const d = auditDetail({ url: long, ok: true });
  assert.ok(Buffer.byteLength(d['url'] as string) <= MAX_DETAIL_STRING_BYTES);
  assert.match(d['url'] as string, /…\[truncated 10000 bytes\]$/);
  const big = auditDetail(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'x'.repeat(4000)])));
  assert.equal(big['…truncated'], true);
  assert.ok((big['bytes'] as number) > MAX_DETAIL_BYTES);
  for (const bad of [{ n: NaN }, { f: () => 1 }, { b: Buffer.from('secret') }, { d: new Date() }, { big: 1n }]) {
    assert.throws(() => auditDetail(bad), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  }
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 20; i++) deep = { deep };
  assert.throws(() => auditDetail(deep), /deeper/);
  const log = memoryLog();
  assert.throws(() => log.append({ tenant: 't', kind: 'Bad Kind!' }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  const r = log.append({ tenant: 't'.repeat(1000), kind: 'k', detail: { u: undefined, v: 1 } });
  assert.deepEqual(r.detail, { v: 1 });
  assert.ok(Buffer.byteLength(r.tenant) <= 256);
  assert.deepEqual(log.verify(), { ok: true, records: 2 });
  log.close();
});

test('appends from two connections interleave into one gap-free chain', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'engine.sqlite');
  const a = AuditLog.open(file, { key: KEY });
  const b = AuditLog.open(file, { key: KEY });
  for (let i = 0; i < 50; i++) (i % 3 ? a : b).append({ tenant: i % 3 ? 'a' : 'b', kind: 'k', detail: { i } });
  assert.deepEqual(a.verify(), { ok: true, records: 51 });
  assert.deepEqual(b.tail({ limit: 51 }).map((r) => r.seq), Array.from({ length: 51 }, (_, i) => i + 1));
  a.close();
  b.close();
  cleanup();
});

test('appends from three processes at once: seqs strictly increasing, no gaps, chain verifies', async () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'engine.sqlite');
  AuditLog.open(file, { key: KEY }).close(); // create the tables before the race
  const script = `const { AuditLog } = await import(${JSON.stringify(AUDIT_TS)});
    const log = AuditLog.open(${JSON.stringify(file)}, { key: Buffer.alloc(32, 7) });
    for (let i = 0; i < 60; i++) log.append({ tenant: String(process.pid), kind: 'k', detail: { i } });
    log.close();`;
  const run = () =>
    new Promise<number>((resolve, reject) => {
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
      p.on('error', reject);
      p.on('close', (code) => resolve(code ?? -1));
    });
  assert.deepEqual(await Promise.all([run(), run(), run()]), [0, 0, 0]);
  const log = AuditLog.open(file, { key: KEY });
  assert.deepEqual(log.verify(), { ok: true, records: 181 });
  const records = log.tail({ limit: 1000 }).slice(1);
  assert.deepEqual(records.map((r) => r.seq), Array.from({ length: 180 }, (_, i) => i + 2));
  for (const pid of new Set(records.map((r) => r.tenant))) {
    assert.deepEqual(records.filter((r) => r.tenant === pid).map((r) => r.detail['i']), Array.from({ length: 60 }, (_, i) => i), 'each writer\'s records keep its order');
  }
  log.close();
  cleanup();
});

test('the key file is created 0600 in a 0700 home on first use, and reused', () =>
  withHome((home) => {
    const key = loadAuditKey();
    assert.equal(key.length, 32);
    const file = join(home, 'audit.key');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(home).mode & 0o777, 0o700);
    assert.match(readFileSync(file, 'utf8'), /^[0-9a-f]{64}\n$/);
    assert.deepEqual(loadAuditKey(), key);
    const log = AuditLog.open();
    assert.equal(engineDatabaseFile(), join(home, 'engine.sqlite'));
    log.append({ tenant: 't', kind: 'k' });
    log.close();
    const again = AuditLog.open();
    assert.deepEqual(again.verify(), { ok: true, records: 2 }, 'a second open uses the same key');
    again.close();
  }));

test('MEMBRANE_AUDIT_KEY (hex or base64) overrides the key file; anything else is refused without echoing it', () =>
  withHome((home) => {
    const hex = 'ab'.repeat(32);
    process.env[AUDIT_KEY_ENV] = hex;
    assert.deepEqual(loadAuditKey(), Buffer.from(hex, 'hex'));
    assert.equal(existsSync(join(home, 'audit.key')), false, 'no key file is created when the env sets the key');
    process.env[AUDIT_KEY_ENV] = Buffer.alloc(32, 9).toString('base64');
    assert.deepEqual(loadAuditKey(), Buffer.alloc(32, 9));
    assert.deepEqual(parseAuditKey(Buffer.alloc(32, 9).toString('base64').replace(/=$/, ''), 'x'), Buffer.alloc(32, 9));
    const log = AuditLog.open();
    log.append({ tenant: 't', kind: 'k' });
    log.close();
    for (const bad of ['ab'.repeat(31), 'zz'.repeat(32), Buffer.alloc(31, 1).toString('base64'), Buffer.alloc(33, 1).toString('base64'), 'hunter2-secret-value']) {
      process.env[AUDIT_KEY_ENV] = bad;
      assert.throws(loadAuditKey, (e: unknown) => {
        assert.ok(e instanceof SandboxError);
        assert.equal(e.code, 'POLICY_INVALID');
        assert.ok(!e.message.includes(bad) && !JSON.stringify(e.details).includes(bad), 'the message never echoes the key');
        return true;
      });
    }
    process.env[AUDIT_KEY_ENV] = 'cd'.repeat(32);
    const other = AuditLog.open();
    const r = other.verify();
    assert.equal(r.ok, false, 'another key cannot vouch for the chain');
    assert.throws(() => other.append({ tenant: 't', kind: 'k' }), /head does not verify/);
    other.close();
  }));

test('a key file readable by group or others is refused with a clear message, never repaired', () =>
  withHome((home) => {
    const key = loadAuditKey();
    const file = join(home, 'audit.key');
    for (const mode of [0o640, 0o604, 0o660]) {
      chmodSync(file, mode);
      assert.throws(loadAuditKey, (e: unknown) => {
        assert.ok(e instanceof SandboxError);
        assert.equal(e.code, 'POLICY_INVALID');
        assert.match(e.message, /accessible by group or others/);
        assert.match(e.message, new RegExp(`mode 0${mode.toString(8)}`));
        assert.ok(!e.message.includes(key.toString('hex')));
        return true;
      });
      assert.equal(statSync(file).mode & 0o777, mode, 'the mode is left for the operator to judge');
    }
    chmodSync(file, 0o600);
    writeFileSync(file, 'not a key\n');
    assert.throws(loadAuditKey, (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID' && !e.message.includes('not a key'));
  }));
