// `membrane audit verify|tail` end to end: a log prepared with AuditLog under a temp
// $MEMBRANE_HOME, then read (and, after tampering, rejected) by the real CLI.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AuditLog, AUDIT_KEY_ENV } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { tempDir } from '../helpers/tmp.ts';

const BIN = new URL('../../bin/membrane.js', import.meta.url).pathname;
const HOME = tempDir('membrane-cli-audit-');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function membrane(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const base: NodeJS.ProcessEnv = { ...process.env, MEMBRANE_HOME: HOME };
    delete base[AUDIT_KEY_ENV];
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

function prepare(): void {
  process.env['MEMBRANE_HOME'] = HOME;
  delete process.env[AUDIT_KEY_ENV];
  const log = AuditLog.open();
  log.append({ tenant: 'acme', instance: 'p1', kind: 'net.denied', detail: { host: '169.254.169.254' } });
  log.append({ tenant: 'beta', kind: 'engine.start', detail: {} });
  log.append({ tenant: 'acme', instance: 'p2', kind: 'rate.limited', detail: { n: 120000 } });
  log.append({ tenant: 'evil\u001b[2J', instance: 'p\u009b31m', kind: 'kv.quota', detail: { key: 'x\u202Ey' } });
  log.close();
}

test('audit verify, tail, tampering and the exit codes, end to end', async () => {
  prepare();
  const key = readFileSync(join(HOME, 'audit.key'), 'utf8').trim();

  const ok = await membrane(['audit', 'verify']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, 'ok: 5 records\n');
  const okJson = await membrane(['audit', 'verify', '--json']);
  assert.equal(okJson.code, 0, okJson.stderr);
  assert.deepEqual(JSON.parse(okJson.stdout), { ok: true, records: 5 });

  const tail = await membrane(['audit', 'tail']);
  assert.equal(tail.code, 0, tail.stderr);
  const lines = tail.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 5);
  assert.match(lines[0]!, /^1 \S+ "" genesis \{"keyId":"[0-9a-f]{16}"\}$/);
  assert.match(lines[1]!, /^2 \d{4}-\d\d-\d\dT[\d:.]+Z acme\/p1 net\.denied \{"host":"169\.254\.169\.254"\}$/);
  assert.match(lines[2]!, /^3 \S+ beta engine\.start \{\}$/);
  assert.doesNotMatch(tail.stdout, /[\u001b\u009b\u202e]/, 'terminal control characters are escaped');
  assert.match(lines[4]!, /"evil\\u001b\[2J"\/"p\\u009b31m" kv\.quota \{"key":"x\\u202ey"\}$/);

  const acme = await membrane(['audit', 'tail', '--tenant', 'acme', '--json']);
  assert.equal(acme.code, 0, acme.stderr);
  const records = acme.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { seq: number; tenant: string; kind: string; v: number });
  assert.deepEqual(records.map((r) => [r.seq, r.tenant, r.kind, r.v]), [[2, 'acme', 'net.denied', 1], [4, 'acme', 'rate.limited', 1]]);
  const kind = await membrane(['audit', 'tail', '--kind', 'engine.start', '--json']);
  assert.deepEqual(kind.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq), [3]);
  const limited = await membrane(['audit', 'tail', '--limit', '2', '--json']);
  assert.deepEqual(limited.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq), [4, 5]);

  for (const r of [ok, okJson, tail, acme]) assert.ok(!r.stdout.includes(key) && !r.stderr.includes(key), 'the key is never printed');

  // Tamper: edit seq 3's detail directly in the engine database.
  const db = openDatabase(join(HOME, 'engine.sqlite'));
  db.prepare('UPDATE audit SET detail = ? WHERE seq = 3').run('{"edited":true}');
  db.close();
  const bad = await membrane(['audit', 'verify']);
  assert.equal(bad.code, 1, bad.stderr);
  assert.match(bad.stdout, /^tampered at seq 3: edited/);
  const badJson = await membrane(['audit', 'verify', '--json']);
  assert.equal(badJson.code, 1);
  const out = JSON.parse(badJson.stdout) as { ok: boolean; seq: number; problem: string; reason: string };
  assert.deepEqual([out.ok, out.seq, out.problem], [false, 3, 'edited']);
  assert.ok(!badJson.stdout.includes(key));
});

test('a malformed MEMBRANE_AUDIT_KEY is POLICY_INVALID (64) and not echoed; usage errors exit 2', async () => {
  const secret = 'not-a-valid-key-but-still-secret';
  const r = await membrane(['audit', 'verify'], { [AUDIT_KEY_ENV]: secret });
  assert.equal(r.code, 64);
  assert.match(r.stderr, /POLICY_INVALID/);
  assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret));
  assert.equal((await membrane(['audit'])).code, 2);
  assert.equal((await membrane(['audit', 'rewrite'])).code, 2);
  assert.equal((await membrane(['audit', 'tail', '--limit', '0'])).code, 2);
  const usage = await membrane(['audit', '--help']);
  assert.match(usage.stdout, /membrane audit verify \[--checkpoint FILE\] \[--json\]/);
  assert.match(usage.stdout, /membrane audit checkpoint \[--json\]/);
  assert.match(usage.stdout, /membrane audit tail \[--tenant T\] \[--kind K\] \[--limit COUNT\] \[--json\]/);
  const help = await membrane(['--help']);
  assert.match(help.stdout, /\n {4}1 {2}audit verify\/checkpoint: the audit log was tampered with/);
});
