// Attack: exhaust `membrane serve`'s in-flight slots without holding any work. A stateless /mcp
// call that was cancelled (by its own `notifications/cancelled`) or whose client hung up was
// answered, but its request handler never returned: every such call leaked one in-flight slot
// for the life of the server. Past `maxInFlight` leaked slots every request of every tenant was
// OVERLOADED, and shutdown waited its whole grace period for requests that no longer existed.
// Each cancelled or abandoned call must give its slot back when its answer ends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testServer } from '../helpers/http.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const MAX_IN_FLIGHT = 3;

const post = (url: string, token: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${url}/mcp`, { method: 'POST', headers: { ...HEADERS, authorization: `Bearer ${token}` }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
const spin = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { language: 'js', code: 'while (true) {}', timeout_ms: 20_000 } } });
const hello = { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { language: 'js', code: '6 * 7' } } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('cancelled and abandoned /mcp calls give their in-flight slots back; the server still serves and closes at once', async () => {
  const s = await testServer({ limits: { maxInFlight: MAX_IN_FLIGHT } });
  const mallory = s.token('mallory-slots');
  const alice = s.token('alice-slots');
  // Warm the JS lane so each spin is running when it is cancelled.
  assert.equal((await post(s.url, alice, hello)).status, 200);

  // Twice the in-flight limit of calls, each cancelled by its own notification...
  for (let i = 0; i < 2 * MAX_IN_FLIGHT; i++) {
    const call = post(s.url, mallory, spin(100 + i)).then((r) => r.json() as Promise<Record<string, any>>);
    await sleep(150);
    await (await post(s.url, mallory, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 100 + i } })).text();
    assert.equal((await call)['error']?.data?.code, 'CANCELLED');
  }
  // ...and as many whose client hung up mid-call.
  for (let i = 0; i < 2 * MAX_IN_FLIGHT; i++) {
    const ac = new AbortController();
    const call = post(s.url, mallory, spin(200 + i), ac.signal).catch((e: Error) => e);
    await sleep(150);
    ac.abort();
    assert.ok((await call) instanceof Error);
  }
  await sleep(200);

  // Another tenant is served, not OVERLOADED.
  const r = await post(s.url, alice, hello);
  assert.equal(r.status, 200, await r.clone().text());
  assert.equal(((await r.json()) as Record<string, any>)['result']?.structuredContent?.result, 42);

  // Nothing is left in flight: shutdown does not wait out its grace period.
  const t0 = performance.now();
  await s.server.close();
  const ms = performance.now() - t0;
  assert.ok(ms < 5_000 + LOAD_SLACK_MS, `close took ${ms.toFixed(0)} ms`);
  assert.ok(!s.logs.some((l) => l.includes('"draining"')), 'close found requests still in flight');
});
