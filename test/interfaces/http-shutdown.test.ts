// Graceful shutdown in process: `close()` stops accepting, lets an in-flight exec finish, answers
// new requests on open connections with OVERLOADED, ends audit streams, then closes the engine.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createEngine } from '../../src/index.ts';
import { TEST_CACHE } from '../helpers/engine.ts';
import { call, testServer } from '../helpers/http.ts';

test('close(): in-flight exec finishes, the audit stream ends, new connections are refused, the engine closes', async () => {
  const engine = createEngine({ poolSize: 1, cacheDir: TEST_CACHE });
  const t = await testServer({ engine });
  const token = t.token('acme');
  assert.equal((await call(t.url, '/v1/exec', token, 'POST', { code: '1', language: 'js' })).status, 200);
  const stream = await fetch(`${t.url}/v1/audit/stream`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(stream.status, 200);
  const streamEnded = (async () => {
    for await (const _ of stream.body!) void _;
    return true;
  })();
  const inflight = call(t.url, '/v1/exec', token, 'POST', { code: 'let t = Date.now(); while (Date.now() - t < 800) {} "done"', language: 'js' });
  await new Promise((r) => setTimeout(r, 200));
  const closing = t.server.close();
  assert.equal(await streamEnded, true);
  const r = await inflight;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.result, 'done');
  await closing;
  await assert.rejects(fetch(`${t.url}/health`));
  // The server did not own this engine: it is still usable, and the caller closes it.
  assert.equal((await engine.exec({ language: 'js', code: '2+2' })).result, 4);
  await engine.close();
});

test('a server that owns its engine closes it; close() twice is one close', async () => {
  const t = await testServer({ engine: undefined as never });
  const first = t.server.close();
  const second = t.server.close();
  assert.equal(first, second);
  await first;
  assert.equal(t.server.api.engine.stats().instances, 0);
  await assert.rejects(async () => t.server.api.engine.exec({ language: 'js', code: '1' }), /closed/);
});
