// Attack: clients flood a guest served over HTTP, send oversized bodies, and keep coming after the
// operator revokes the principal. The per-client rate answers 429 at the configured count, the
// size cap 413, and revocation 403 — for the request in flight and every one after it (issue #5
// must-show 4). test/fixtures/c/server.c is the handler guest.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SandboxError, createEngine, type Engine } from '../../src/index.ts';
import { watText } from '../helpers/wat.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/server.wasm', import.meta.url)));
let engine: Engine;
let home: string;

before(() => {
  home = tempDir('membrane-serve-');
  process.env['MEMBRANE_HOME'] = home;
  engine = createEngine({ poolSize: 1 });
});
after(() => engine.close());

const get = async (url: string, init?: RequestInit): Promise<{ status: number; body: string }> => {
  const r = await fetch(url, init);
  return { status: r.status, body: await r.text() };
};

test('requests reach the guest as JSON and its answer comes back; state persists across requests', async () => {
  await engine.start('web-1', guest, { profile: 'network', tenant: 'site' });
  const s = await engine.serve('web-1');
  try {
    assert.match(s.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual(await get(`${s.url}/hello`), { status: 200, body: 'hello from wasm GET /hello' });
    assert.deepEqual(await get(`${s.url}/nope`), { status: 404, body: 'no route /nope' });
    assert.deepEqual(await get(`${s.url}/count`), { status: 200, body: '3' });
    assert.deepEqual(await get(`${s.url}/big`), { status: 502, body: 'NO_RESPONSE\n' });
  } finally {
    await s.close();
  }
});

test('a client past its rate gets 429 at the configured count (audited once per window)', async () => {
  await engine.start('web-2', guest, { profile: 'network', tenant: 'rated' });
  const s = await engine.serve('web-2', { perClientRate: { limit: 5, windowMs: 60_000 } });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await get(`${s.url}/hello`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
    const big = await get(`${s.url}/hello`, { method: 'POST', body: 'x' });
    assert.equal(big.status, 429);
  } finally {
    await s.close();
  }
  const log = new AuditLog(openDatabase(join(home, 'engine.sqlite')));
  const denied = log.tail({ tenant: 'rated', kind: 'denied' });
  log.close();
  assert.deepEqual(denied.map((r) => r.detail['code']), ['RATE_LIMITED']);
});

test('an oversized body is 413 and never reaches the guest', async () => {
  await engine.start('web-3', guest, { profile: 'network', tenant: 'sizer' });
  const s = await engine.serve('web-3', { maxBodyBytes: 1024 });
  try {
    assert.equal((await get(`${s.url}/hello`, { method: 'POST', body: 'y'.repeat(4096) })).status, 413);
    assert.deepEqual(await get(`${s.url}/count`), { status: 200, body: '1' });
  } finally {
    await s.close();
  }
});

test('revoking the principal mid-serve: the request in flight gets 403 and the next never reaches the guest', async () => {
  const instance = await engine.start('web-4', guest, { profile: 'network', tenant: 'revokee', timeoutMs: 10_000 });
  const s = await engine.serve('web-4');
  try {
    assert.equal((await get(`${s.url}/hello`)).status, 200);
    const inFlight = get(`${s.url}/spin`);
    await new Promise((r) => setTimeout(r, 300));
    const t = Date.now();
    engine.revoke({ tenant: 'revokee', instance: 'web-4' });
    assert.deepEqual(await inFlight, { status: 403, body: 'REVOKED\n' });
    assert.ok(Date.now() - t < LOAD_SLACK_MS, 'the in-flight request was answered at once, not at its 10 s budget');
    const callsBefore = instance.info().calls;
    assert.deepEqual(await get(`${s.url}/hello`), { status: 403, body: 'REVOKED\n' });
    assert.equal(instance.info().calls, callsBefore, 'the next request never reached the guest');
  } finally {
    await s.close();
  }
  const log = new AuditLog(openDatabase(join(home, 'engine.sqlite')));
  const kinds = log.tail({ tenant: 'revokee' }).map((r) => `${r.kind}:${String(r.detail['code'] ?? '')}`);
  log.close();
  assert.deepEqual(kinds, ['revoke:', 'denied:REVOKED', 'denied:REVOKED']);
});

test('serving needs the net cap: an instance without it is NOT_CAPABLE, an unknown one INSTANCE_DEAD', async () => {
  const plain = await watText('(module (func (export "serve_handle") (param i32) (result i32) (i32.const 0)))');
  await engine.start('web-5', plain, { profile: 'minimal' });
  await assert.rejects(engine.serve('web-5'), (e: unknown) => e instanceof SandboxError && e.code === 'NOT_CAPABLE');
  await assert.rejects(engine.serve('nosuch'), (e: unknown) => e instanceof SandboxError && e.code === 'INSTANCE_DEAD');
});
