// Attack: one tenant floods the API — more requests at once than the server serves, more per
// minute than a tenant may send, more instances than a tenant may hold. Each bound answers with
// its declared refusal (503 OVERLOADED, 429 RATE_LIMITED, 413 MEMORY_LIMIT) and other tenants
// are still served.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat } from '../helpers/wat.ts';
import { call, testServer } from '../helpers/http.ts';

const spin = 'let t = Date.now(); while (Date.now() - t < 600) {} 1';

test('past maxInFlight, requests get 503 OVERLOADED (declared, retryable) until the load drains', async () => {
  const t = await testServer({ limits: { maxInFlight: 2 } });
  const token = t.token('busy');
  const slow = [call(t.url, '/v1/exec', token, 'POST', { code: spin, language: 'js' }), call(t.url, '/v1/exec', token, 'POST', { code: spin, language: 'js' })];
  await new Promise((r) => setTimeout(r, 150));
  const refused = await call(t.url, '/v1/whoami', token);
  assert.equal(refused.status, 503);
  assert.equal(refused.body.error.code, 'OVERLOADED');
  for (const r of await Promise.all(slow)) assert.equal(r.status, 200, r.text);
  assert.equal((await call(t.url, '/v1/whoami', token)).status, 200);
});

test('past requestsPerMinute, a tenant gets 429 RATE_LIMITED; another tenant is not affected', async () => {
  const t = await testServer({ limits: { requestsPerMinute: 5 } });
  const noisy = t.token('noisy');
  const quiet = t.token('quiet');
  const replies = [];
  for (let i = 0; i < 12; i++) replies.push(await call(t.url, '/v1/whoami', noisy));
  // At most 5 pass per minute; a minute boundary inside the loop allows 10, so at least 2 are refused.
  const refused = replies.filter((r) => r.status === 429);
  assert.ok(replies.filter((r) => r.status === 200).length <= 10);
  assert.ok(refused.length >= 2, replies.map((r) => r.status).join(','));
  assert.equal(refused[0]!.body.error.code, 'RATE_LIMITED');
  assert.equal((await call(t.url, '/v1/whoami', quiet)).status, 200);
});

test('past maxInstancesPerTenant, starting another is refused; another tenant can still start one', async () => {
  const t = await testServer({ config: { baseDir: '.', limits: { maxInstancesPerTenant: 2 } } });
  const hoarder = t.token('hoarder');
  const other = t.token('other');
  const module = Buffer.from(await wat('noop')).toString('base64');
  for (const id of ['i1', 'i2']) assert.equal((await call(t.url, '/v1/instances', hoarder, 'POST', { id, module })).status, 201);
  const third = await call(t.url, '/v1/instances', hoarder, 'POST', { id: 'i3', module });
  assert.equal(third.status, 413);
  assert.equal(third.body.error.code, 'MEMORY_LIMIT');
  assert.match(third.body.error.message, /at most 2 instances/);
  assert.equal((await call(t.url, '/v1/instances', other, 'POST', { id: 'i1', module })).status, 201);
  // Stopping one frees a slot.
  await call(t.url, '/v1/instances/i1', hoarder, 'DELETE');
  assert.equal((await call(t.url, '/v1/instances', hoarder, 'POST', { id: 'i3', module })).status, 201);
});
