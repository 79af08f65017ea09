// Attack: a client opens audit streams until the server runs out of sockets or memory. Past
// MAX_STREAMS open streams, the next is refused with 503 OVERLOADED (declared, retryable); once
// streams close, a new one is served again.
import assert from 'node:assert/strict';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { MAX_STREAMS } from '../../src/interfaces/http/audit-feed.ts';
import { call, testServer } from '../helpers/http.ts';

function openStream(url: string, token: string): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/audit/stream`, { headers: { authorization: `Bearer ${token}` }, agent: false });
    req.on('response', (res) => resolve({ req, res }));
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.end();
  });
}

test(`past ${MAX_STREAMS} open audit streams, the next is 503 OVERLOADED; closing one frees a place`, async () => {
  const t = await testServer({ limits: { maxInFlight: MAX_STREAMS * 2 } });
  const token = t.token('watcher');
  const open: { req: ClientRequest; res: IncomingMessage }[] = [];
  try {
    for (let i = 0; i < MAX_STREAMS; i++) {
      const s = await openStream(t.url, token);
      assert.equal(s.res.statusCode, 200, `stream ${i + 1}`);
      open.push(s);
    }
    const refused = await call(t.url, '/v1/audit/stream', token);
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'OVERLOADED');
    assert.match(refused.body.error.message, /audit streams/);
    const one = open.pop()!;
    one.req.destroy();
    let again: { req: ClientRequest; res: IncomingMessage } | null = null;
    for (let i = 0; i < 50 && again === null; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const s = await openStream(t.url, token);
      if (s.res.statusCode === 200) again = s;
      else s.req.destroy();
    }
    assert.ok(again, 'a stream is served again once one closed');
    open.push(again);
  } finally {
    for (const s of open) s.req.destroy();
  }
});
