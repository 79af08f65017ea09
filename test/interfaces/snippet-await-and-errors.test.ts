// Top-level await and GUEST_EXCEPTION reports as HTTP and MCP clients see them (the lanes' own
// tests cover the library): `await` at a snippet's top level works in JS and Python, and an
// uncaught TypeError on line 3 comes back as GUEST_EXCEPTION with its name, line and a
// snippet-relative stack — in the JSON answer, in MCP's structured content and in its text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call, testServer } from '../helpers/http.ts';
import { structured, text } from './mcp-contract.ts';

const THROWS_ON_LINE_3 = "const a = 1;\nconst b = 2;\nthrow new TypeError('bad');";
const PY_RAISES_ON_LINE_3 = "a = 1\nb = 2\nraise TypeError('bad')";

test('HTTP: top-level await in JS and Python; a TypeError on line 3 is GUEST_EXCEPTION with name and line', async () => {
  const s = await testServer();
  const token = s.token('snippet-errors');
  const js = await call(s.url, '/v1/exec', token, 'POST', { language: 'js', code: 'const v = await Promise.resolve(6);\nv * 7' });
  assert.equal(js.status, 200);
  assert.equal(js.body.ok, true, JSON.stringify(js.body));
  assert.equal(js.body.result, 42);
  const py = await call(s.url, '/v1/exec', token, 'POST', { language: 'python', code: 'import asyncio\nawait asyncio.sleep(0)\n6 * 7' });
  assert.equal(py.body.ok, true, JSON.stringify(py.body));
  assert.equal(py.body.result, 42);

  const thrown = await call(s.url, '/v1/exec', token, 'POST', { language: 'js', code: THROWS_ON_LINE_3 });
  assert.equal(thrown.status, 200);
  assert.equal(thrown.body.error.code, 'GUEST_EXCEPTION');
  assert.equal(thrown.body.error.details.name, 'TypeError');
  assert.equal(thrown.body.error.details.message, 'bad');
  assert.equal(thrown.body.error.details.stack[0].file, '<snippet>');
  assert.equal(thrown.body.error.details.stack[0].line, 3);

  const raised = await call(s.url, '/v1/exec', token, 'POST', { language: 'python', code: PY_RAISES_ON_LINE_3 });
  assert.equal(raised.body.error.code, 'GUEST_EXCEPTION');
  assert.equal(raised.body.error.details.name, 'TypeError');
  assert.equal(raised.body.error.details.stack[0].line, 3);
  assert.match(raised.body.error.details.traceback, /line 3/);
  for (const body of [thrown.text, raised.text]) assert.doesNotMatch(body, /\/work\/|\/tmp\/|node_modules|\/home\//, 'no host path in the answer');
});

test('MCP: the same report in structured content, and the place in the text the model reads', async () => {
  const s = await testServer();
  const token = s.token('snippet-errors-mcp');
  const client = new Client({ name: 'membrane-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    const awaited = await client.callTool({ name: 'sandbox_execute', arguments: { language: 'ts', code: 'const v: number = await Promise.resolve(6);\nv * 7' } });
    assert.equal(structured(awaited)['result'], 42, text(awaited));

    const r = await client.callTool({ name: 'sandbox_execute', arguments: { language: 'js', code: THROWS_ON_LINE_3 } });
    assert.notEqual(r.isError, true, 'a snippet that ran and failed is a result, not a refusal');
    const e = structured(r)['error'] as unknown as { code: string; details: { name: string; stack: { file: string; line: number }[] } };
    assert.equal(e.code, 'GUEST_EXCEPTION');
    assert.equal(e.details.name, 'TypeError');
    assert.equal(e.details.stack[0]!.line, 3);
    assert.match(text(r), /GUEST_EXCEPTION: TypeError: bad \(at <snippet>:3:\d+/);

    const py = await client.callTool({ name: 'sandbox_execute', arguments: { language: 'python', code: PY_RAISES_ON_LINE_3 } });
    assert.match(text(py), /GUEST_EXCEPTION/);
    assert.match(text(py), /line 3/);
    assert.doesNotMatch(text(py), /\/work\/|\/tmp\/|node_modules/);
  } finally {
    await client.close();
  }
});
