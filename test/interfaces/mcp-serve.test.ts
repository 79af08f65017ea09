// MCP through the real `membrane serve` (spawned from the CLI): /mcp requires a bearer token; the
// token's tenant and profile are the grant. The whole MCP contract runs through it, with tokens
// made by `membrane token create` and audit records read back with `membrane audit tail`.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BIN, runCli } from '../helpers/cli.ts';
import { auditViaCli, mcpContract, structured } from './mcp-contract.ts';
import { tempDir } from '../helpers/tmp.ts';

const env = { MEMBRANE_HOME: tempDir('membrane-mcp-serve-'), MEMBRANE_AUDIT_KEY: 'f'.repeat(64) };
let server: ChildProcess;
let exited: Promise<number | null>;
let url: URL;
let client: Client;

async function token(tenant: string, profile: string): Promise<string> {
  const r = await runCli(['token', 'create', '--tenant', tenant, '--profile', profile, '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { token: string }).token;
}

async function connect(bearer: string): Promise<Client> {
  const c = new Client({ name: 'membrane-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  return c;
}

before(async () => {
  const bearer = await token('serve-tenant', 'compute');
  server = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  exited = new Promise((resolve) => server.on('close', resolve));
  server.stderr!.resume();
  const first = await new Promise<string>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    server.on('close', () => reject(new Error('membrane serve exited before listening')));
  });
  url = new URL('/mcp', (JSON.parse(first) as { listening: string }).listening);
  client = await connect(bearer);
});

after(async () => {
  await client?.close();
  server?.kill('SIGTERM');
  assert.equal(await exited, 0);
});

mcpContract(
  'serve',
  () => client,
  auditViaCli(env),
  'serve-tenant',
);

test('serve: /mcp without a token, or with a bad one, is 401', async () => {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const none = await fetch(url, { method: 'POST', headers, body });
  assert.equal(none.status, 401);
  const bad = await fetch(url, { method: 'POST', headers: { ...headers, authorization: `Bearer mbt_${'x'.repeat(43)}` }, body });
  assert.equal(bad.status, 401);
  await assert.rejects(connect(`mbt_${'y'.repeat(43)}`));
});

test("serve: the grant is the token's profile — a network token may ask for net, a compute token may not", async () => {
  const net = await connect(await token('net-tenant', 'network'));
  try {
    assert.equal(structured(await net.callTool({ name: 'list_profiles', arguments: {} }))['granted'], 'network');
    const ok = structured(await net.callTool({ name: 'sandbox_execute', arguments: { code: '1+1', language: 'js', capability_subset: ['net'], timeout_ms: 10_000_000 } }));
    assert.equal(ok['ok'], true, JSON.stringify(ok));
    assert.deepEqual(ok['caps'], ['net']);
    assert.deepEqual(ok['clamped'], ['timeout_ms 10000000 clamped to 30000']);
    const posix = structured(await net.callTool({ name: 'sandbox_execute', arguments: { code: '1', language: 'js', capability_subset: ['posix'] } }));
    assert.equal(posix.error?.code, 'NOT_CAPABLE');
  } finally {
    await net.close();
  }
});
