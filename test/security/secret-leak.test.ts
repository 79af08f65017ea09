// Attack: get a secret's bytes out by any surface — the import's answer, errors, results,
// info(), stats, logs, audit records, the engine database on disk, the CLI's output. Only its
// HMAC ever leaves (DESIGN §4: there is no read operation of any kind).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, createHmac } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createEngine, type LogEntry } from '../../src/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { tempDir } from '../helpers/tmp.ts';

const guestFile = new URL('../fixtures/c/brokers.wasm', import.meta.url);
const guest = new Uint8Array(readFileSync(guestFile));
const BIN = new URL('../../bin/membrane.js', import.meta.url).pathname;

function forms(secret: string): string[] {
  const b = Buffer.from(secret);
  return [secret, b.toString('hex'), b.toString('base64'), b.toString('base64url'), secret.slice(4, 20)];
}

function assertClean(surface: string, text: string, secret: string): void {
  for (const f of forms(secret)) assert.ok(!text.includes(f), `${surface} contains the secret (${f.length} chars)`);
}

test('no engine surface yields a secret: results, errors, info, stats, logs, audit, database files', async () => {
  const home = tempDir('membrane-secret-');
  process.env['MEMBRANE_HOME'] = home;
  const secret = randomBytes(24).toString('hex');
  const logs: LogEntry[] = [];
  const engine = createEngine({ poolSize: 1, onLog: (e) => logs.push(e), brokers: { secrets: { api: secret } } });
  const surfaces: [string, string][] = [];
  try {
    const signed = await engine.run(guest, { profile: 'minimal', argv: ['sign', 'api', 'payload'] });
    assert.equal(signed.stdout, `${createHmac('sha256', secret).update('payload').digest('hex')}\n`);
    surfaces.push(['signed result', JSON.stringify(signed)]);
    for (const argv of [['sign', 'API', 'x'], ['sign', 'api/../api', 'x'], ['kv', 'get', 'api'], ['sign', '', 'x']]) {
      surfaces.push([`run ${argv.join(' ')}`, JSON.stringify(await engine.run(guest, { profile: 'minimal', argv }))]);
    }
    const denied = await engine.run(guest, { profile: 'compute', argv: ['sign', 'api', 'x'] });
    surfaces.push(['link error', JSON.stringify(denied)]);
    engine.revoke({ tenant: 'default' });
    surfaces.push(['revoked', JSON.stringify(await engine.run(guest, { profile: 'minimal', argv: ['sign', 'api', 'x'] }))]);
    engine.restore({ tenant: 'default' });
    surfaces.push(['stats', JSON.stringify(engine.stats())]);
    surfaces.push(['logs', JSON.stringify(logs)]);
  } finally {
    await engine.close();
  }
  const log = new AuditLog(openDatabase(join(home, 'engine.sqlite')));
  surfaces.push(['audit', JSON.stringify(log.tail({ limit: 1000 }))]);
  log.close();
  for (const f of readdirSync(home, { recursive: true }) as string[]) {
    try {
      surfaces.push([`file ${f}`, readFileSync(join(home, f)).toString('latin1')]);
    } catch {
      // a directory
    }
  }
  for (const [surface, text] of surfaces) assertClean(surface, text, secret);
});

test('the CLI takes secrets from MEMBRANE_SECRET_* and never prints them, human or --json', () => {
  const home = tempDir('membrane-secret-cli-');
  const secret = randomBytes(24).toString('base64');
  const env = { ...process.env, MEMBRANE_HOME: home, MEMBRANE_SECRET_API: secret };
  for (const extra of [[], ['--json']]) {
    const r = spawnSync(process.execPath, [BIN, 'run', guestFile.pathname, '--profile', 'minimal', ...extra, '--', 'sign', 'api', 'payload'], { env, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.includes(createHmac('sha256', secret).update('payload').digest('hex')));
    assertClean(`cli ${extra.join(' ')}`, r.stdout + r.stderr, secret);
  }
  const inspect = spawnSync(process.execPath, [BIN, 'inspect', guestFile.pathname, '--json'], { env, encoding: 'utf8' });
  assertClean('inspect', inspect.stdout + inspect.stderr, secret);
});
