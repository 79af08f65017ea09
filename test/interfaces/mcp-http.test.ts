// The MCP contract over streamable HTTP: a node:http server on 127.0.0.1 routes every request to
// handleMcpRequest (stateless: a fresh server and transport per request), driven by the SDK's
// StreamableHTTPClientTransport.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { handleMcpRequest } from '../../src/interfaces/mcp/http.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { mcpContract } from './mcp-contract.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_AUDIT_KEY'] ??= 'b'.repeat(64);
const dir = tempDir('membrane-mcp-http-');
const databaseFile = join(dir, 'engine.sqlite');
const engine = testEngine({ poolSize: 1, brokers: { databaseFile } });
const TENANT = 'http-tenant';

let server: Server;
let url: URL;
let client: Client;

before(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (raw += d));
    req.on('end', () => {
      const body: unknown = raw ? JSON.parse(raw) : undefined;
      void handleMcpRequest(req, res, body, { engine, tenant: TENANT, profile: 'compute' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  assert.ok(addr && typeof addr === 'object');
  url = new URL(`http://127.0.0.1:${addr.port}/mcp`);
  client = new Client({ name: 'membrane-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
});

after(async () => {
  await client?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

mcpContract(
  'http',
  () => client,
  {
    denied: async (tenant) => {
      const log = AuditLog.open(databaseFile);
      try {
        return log.tail({ tenant, kind: 'denied', limit: 1000 }).map((r) => ({ kind: r.kind, detail: r.detail as Record<string, unknown> }));
      } finally {
        log.close();
      }
    },
  },
  TENANT,
);

test('http: GET and DELETE are 405 on a stateless endpoint; no session id is ever issued', async () => {
  for (const method of ['GET', 'DELETE']) {
    const r = await fetch(url, { method, headers: { accept: 'text/event-stream' } });
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'POST');
    const body = (await r.json()) as { error: { code: number } };
    assert.equal(body.error.code, -32019);
  }
  const init = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }),
  });
  assert.equal(init.status, 200);
  assert.equal(init.headers.get('mcp-session-id'), null);
  const msg = (await init.json()) as { result: { serverInfo: { name: string } } };
  assert.equal(msg.result.serverInfo.name, 'membrane');
});

test('http: a tools/call without initialize works (stateless) and garbage JSON-RPC gets a JSON-RPC error', async () => {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const call = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_profiles', arguments: {} } }) });
  assert.equal(call.status, 200);
  const r = (await call.json()) as { result: { structuredContent: { granted: string } } };
  assert.equal(r.result.structuredContent.granted, 'compute');
  const junk = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ hello: 'world' }) });
  assert.equal(junk.status, 400);
  const j = (await junk.json()) as { error: { code: number; message: string } };
  assert.equal(typeof j.error.code, 'number');
});
