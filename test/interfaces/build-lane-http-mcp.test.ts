// C and C++ through the interfaces (issue #16): POST /v1/exec and MCP's sandbox_execute take
// `language: "c" | "cpp"`; the program is compiled inside the sandbox and run under the token's
// grant; a compile error is BUILD_FAILED (HTTP 422 mapping in the body's error) with diagnostics in
// guest paths only.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call, testServer } from '../helpers/http.ts';
import { testEngine } from '../helpers/engine.ts';
import { TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';
import { structured, text } from './mcp-contract.ts';
import { tempDir } from '../helpers/tmp.ts';

/**
 * A test engine on the shared toolchain cache, with its own engine database (audit log). A C++
 * compile takes seconds on a quiet machine and far longer on a loaded 2-core runner: the token's
 * profile (compute) gets the time here, so the test checks the lane, not the load.
 */
const engine = () =>
  testEngine({
    cacheDir: TOOLCHAIN_CACHE,
    operatorLimits: { compute: { timeoutMs: 120_000 } },
    brokers: { databaseFile: join(tempDir('membrane-build-http-'), 'engine.sqlite') },
  });

const HELLO = '#include <stdio.h>\nint main(void) { puts("hello over http"); return 0; }\n';

test('HTTP: POST /v1/exec with language c runs the program; a compile error is BUILD_FAILED with diagnostics', async () => {
  const s = await testServer({ engine: engine() });
  const token = s.token('build-http');
  const ok = await call(s.url, '/v1/exec', token, 'POST', { language: 'c', code: HELLO });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.ok, true, ok.text);
  assert.equal(ok.body.stdout, 'hello over http\n');
  assert.equal(ok.body.result, 0);
  const bad = await call(s.url, '/v1/exec', token, 'POST', { language: 'c', code: 'int main(void) {\n  return nope;\n}\n' });
  assert.equal(bad.body.ok, false);
  assert.equal(bad.body.error.code, 'BUILD_FAILED');
  const d = bad.body.error.details.diagnostics[0];
  assert.deepEqual([d.file, d.line, d.column, d.severity], ['main.c', 2, 10, 'error']);
  assert.doesNotMatch(bad.text, /\/work\/|\/tmp\/|node_modules|\/home\//, 'no host path in the answer');
  const other = await call(s.url, '/v1/exec', token, 'POST', { language: 'fortran', code: 'x' });
  assert.equal(other.status, 400);
});

test('MCP: sandbox_execute with language cpp', async () => {
  const s = await testServer({ engine: engine() });
  const token = s.token('build-mcp');
  const client = new Client({ name: 'membrane-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    const r = await client.callTool({ name: 'sandbox_execute', arguments: { language: 'cpp', code: '#include <cstdio>\nint main() { std::puts("cpp over mcp"); return 0; }\n' } });
    assert.equal(structured(r)['stdout'], 'cpp over mcp\n', text(r));
    assert.equal(structured(r)['result'], 0);
  } finally {
    await client.close();
  }
});
