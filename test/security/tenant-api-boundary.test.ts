// Attack: tenant A, holding a valid token, reaches for tenant B's instances, runs and audit
// records through the HTTP API. Every read, call and stop of B's id answers exactly like an id
// that does not exist (404 NOT_FOUND); lists, runs and the audit stream hold only A's own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat } from '../helpers/wat.ts';
import { call, readAuditStream, testServer } from '../helpers/http.ts';

const t = await testServer();
const a = t.token('tenant-a', 'minimal');
const b = t.token('tenant-b', 'minimal');
const noop = Buffer.from(await wat('noop')).toString('base64');

test('both tenants may name an instance "p1"; each sees only its own', async () => {
  assert.equal((await call(t.url, '/v1/instances', b, 'POST', { id: 'p1', module: noop })).status, 201);
  assert.equal((await call(t.url, '/v1/instances', b, 'POST', { id: 'only-b', module: noop })).status, 201);
  assert.equal((await call(t.url, '/v1/instances', a, 'POST', { id: 'p1', module: noop })).status, 201);
  await call(t.url, '/v1/instances/p1/call', b, 'POST', { export: 'incr' });
  await call(t.url, '/v1/instances/p1/call', b, 'POST', { export: 'incr' });
  const mine = await call(t.url, '/v1/instances', a);
  assert.deepEqual(mine.body.instances.map((i: any) => [i.id, i.tenant, i.calls]), [['p1', 'tenant-a', 0]]);
  const theirs = await call(t.url, '/v1/instances', b);
  assert.deepEqual(theirs.body.instances.map((i: any) => i.id).sort(), ['only-b', 'p1']);
  // A's call reaches A's p1 (fresh counter), never B's (already at 2).
  assert.equal((await call(t.url, '/v1/instances/p1/call', a, 'POST', { export: 'incr' })).body.result, 1);
});

test("A cannot read, call or stop B's instance: 404 NOT_FOUND, the same answer as a missing id", async () => {
  const missing = await call(t.url, '/v1/instances/never-existed', a);
  for (const [path, method, body] of [
    ['/v1/instances/only-b', 'GET', undefined],
    ['/v1/instances/only-b/call', 'POST', { export: 'incr' }],
    ['/v1/instances/only-b', 'DELETE', undefined],
  ] as const) {
    const r = await call(t.url, path, a, method, body);
    assert.equal(r.status, 404, `${method} ${path}`);
    assert.deepEqual(r.body, missing.body, 'indistinguishable from an id that does not exist');
  }
  // B's instance is untouched.
  const still = await call(t.url, '/v1/instances/only-b', b);
  assert.equal(still.status, 200);
  assert.equal(still.body.calls, 0);
  assert.equal(still.body.state, 'running');
});

test("A cannot see B's runs", async () => {
  const run = await call(t.url, '/v1/runs', b, 'POST', { module: noop, invoke: 'add', args: [1, 2] });
  assert.equal(run.body.result, 3);
  assert.deepEqual((await call(t.url, '/v1/runs', a)).body.runs, []);
  const peek = await call(t.url, `/v1/runs/${run.body.id}`, a);
  assert.equal(peek.status, 404);
  assert.equal(peek.body.error.code, 'NOT_FOUND');
  assert.equal((await call(t.url, `/v1/runs/${run.body.id}`, b)).status, 200);
});

test("A cannot see B's audit records, by query or on the stream", async () => {
  // B's denial happens while A's stream is open; A must receive only its own record.
  const seen = await readAuditStream(t.url, a, '?backlog=50', (rs) => rs.some((r) => r.detail?.caps?.[0] === 'llm'), 10_000, async () => {
    assert.equal((await call(t.url, '/v1/exec', b, 'POST', { code: '1', language: 'js', capability_subset: ['net'] })).status, 403);
    assert.equal((await call(t.url, '/v1/exec', a, 'POST', { code: '1', language: 'js', capability_subset: ['llm'] })).status, 403);
  });
  assert.ok(seen.length >= 1);
  assert.ok(seen.every((r) => r.tenant === 'tenant-a'), 'only tenant-a records on tenant-a stream');
  const q = await call(t.url, '/v1/audit?limit=1000', a);
  assert.ok(q.body.records.length >= 1);
  assert.ok(q.body.records.every((r: any) => r.tenant === 'tenant-a'));
  const bs = await call(t.url, '/v1/audit?kind=denied', b);
  assert.ok(bs.body.records.some((r: any) => r.detail.caps?.[0] === 'net'));
  assert.ok(bs.body.records.every((r: any) => r.tenant === 'tenant-b'));
});

test('a query string cannot widen the view: unknown parameters are refused', async () => {
  const r = await call(t.url, '/v1/audit?tenant=tenant-b', a);
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /"tenant"/);
});
