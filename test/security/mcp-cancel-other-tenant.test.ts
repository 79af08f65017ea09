// A stateless /mcp server matches a `notifications/cancelled` (its own POST) to the call it names
// by the caller's tenant and the JSON-RPC request id. Another tenant naming the same id must not
// reach that call: tenant B's cancel of id 7 leaves tenant A's call 7 running to its own end,
// while A's own cancel of it ends it CANCELLED at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testServer } from '../helpers/http.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const BUDGET_MS = 2_000;

function post(url: string, token: string, body: unknown): Promise<Response> {
  return fetch(`${url}/mcp`, { method: 'POST', headers: { ...HEADERS, authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
}
const spinCall = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { language: 'js', code: 'while (true) {}', timeout_ms: BUDGET_MS } } });
const cancelOf = (id: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'stop' } });

test("another tenant's notifications/cancelled for the same request id does not reach the call", async () => {
  const s = await testServer();
  const alice = s.token('alice-mcp');
  const mallory = s.token('mallory-mcp');
  // Warm the JS lane so the call is running when the cancels arrive.
  await (await post(s.url, alice, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { language: 'js', code: '1' } } })).text();

  const t0 = performance.now();
  const call = post(s.url, alice, spinCall(7)).then(async (r) => ({ at: performance.now() - t0, body: JSON.parse(await r.text()) as Record<string, any> }));
  await new Promise((r) => setTimeout(r, 300));
  const forged = await post(s.url, mallory, cancelOf(7));
  assert.ok(forged.status >= 200 && forged.status < 300, `status ${forged.status}`);
  const r = await call;
  // Alice's call ran to its own deadline and answered normally.
  assert.equal(r.body['id'], 7);
  assert.equal(r.body['result']?.structuredContent?.error?.code, 'TIMEOUT', JSON.stringify(r.body).slice(0, 300));
  assert.ok(r.at >= BUDGET_MS - 50, `answered after ${r.at.toFixed(0)} ms`);

  // Her own cancel of the same id reaches it.
  const t1 = performance.now();
  const own = post(s.url, alice, spinCall(7)).then(async (x) => ({ at: performance.now() - t1, body: JSON.parse(await x.text()) as Record<string, any> }));
  await new Promise((res) => setTimeout(res, 300));
  await post(s.url, alice, cancelOf(7));
  const o = await own;
  assert.equal(o.body['error']?.data?.code, 'CANCELLED', JSON.stringify(o.body).slice(0, 300));
  assert.ok(o.at < BUDGET_MS, `cancelled after ${o.at.toFixed(0)} ms`);
  assert.ok(o.at < 300 + LOAD_SLACK_MS);
});
