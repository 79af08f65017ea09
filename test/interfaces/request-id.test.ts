// Request ids: every answer carries X-Request-Id — the client's own when it sent a sane one, a
// fresh UUID otherwise — and every log line of that request carries the same id, including the
// MCP tool-call line written deep inside /mcp and the line of a refused request.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, testServer } from '../helpers/http.ts';

const t = await testServer();
const token = t.token('rid-tenant', 'compute');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function linesWith(id: string): any[] {
  return t.logs.map((l) => JSON.parse(l)).filter((l) => l.requestId === id);
}

test('no X-Request-Id: a fresh UUID in the answer and on the request line; each request gets its own', async () => {
  const one = await call(t.url, '/v1/whoami', token);
  const two = await call(t.url, '/v1/whoami', token);
  const id = one.headers.get('x-request-id') ?? '';
  assert.match(id, UUID);
  assert.notEqual(two.headers.get('x-request-id'), id);
  const lines = linesWith(id);
  assert.equal(lines.length, 1);
  assert.deepEqual([lines[0].msg, lines[0].route, lines[0].status, lines[0].tenant], ['request', '/v1/whoami', 200, 'rid-tenant']);
});

test("a sane client id is kept: echoed on success, on refusals (401, 404, 405) and on /metrics", async () => {
  const cases: [string, string, string | null, string, number][] = [
    ['trace-0af7651916cd43dd8448eb211c80319c', '/v1/whoami', token, 'GET', 200],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', '/v1/whoami', null, 'GET', 401],
    ['req:42/b64+x=', '/v1/nothing', token, 'GET', 404],
    ['r.405', '/v1/exec', token, 'GET', 405],
    ['scrape-1', '/metrics', null, 'GET', 200],
  ];
  for (const [id, path, tok, method, status] of cases) {
    const r = await call(t.url, path, tok, method, undefined, { 'x-request-id': id });
    assert.equal(r.status, status, `${path}: ${r.text}`);
    assert.equal(r.headers.get('x-request-id'), id, path);
    assert.equal(linesWith(id).filter((l) => l.msg === 'request').length, 1, `${path}: one request line with the id`);
  }
});

test('every log line of an MCP request carries its id: the tool-call line and the request line', async () => {
  const id = 'mcp-call-7';
  const r = await call(t.url, '/mcp', token, 'POST', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { code: '6*7', language: 'js' } } }, { accept: 'application/json, text/event-stream', 'x-request-id': id });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.result.structuredContent.result, 42);
  assert.equal(r.headers.get('x-request-id'), id, 'the MCP transport keeps the header');
  const msgs = linesWith(id).map((l) => l.msg);
  assert.deepEqual(msgs.sort(), ['mcp tool call', 'request']);
});

test('the audit stream answers with the id too', async () => {
  const ac = new AbortController();
  const r = await fetch(`${t.url}/v1/audit/stream`, { headers: { authorization: `Bearer ${token}`, 'x-request-id': 'sse-1' }, signal: ac.signal });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-request-id'), 'sse-1');
  ac.abort();
});
