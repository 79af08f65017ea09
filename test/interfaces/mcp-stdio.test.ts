// The MCP contract over stdio, as a client sees it: the SDK's Client + StdioClientTransport spawn
// `node bin/membrane.js mcp` (fresh $MEMBRANE_HOME, a fixed audit key); audit records are read
// back with `membrane audit tail --json`. Then the raw protocol: junk lines on stdin are skipped,
// stdout carries only JSON-RPC, logs go to stderr, and the server exits 0 when stdin ends.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, runCli } from '../helpers/cli.ts';
import { auditViaCli, mcpContract } from './mcp-contract.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-mcp-stdio-');
const env: Record<string, string> = {
  ...(Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string')) as Record<string, string>),
  MEMBRANE_HOME: home,
  MEMBRANE_AUDIT_KEY: 'c'.repeat(64),
};
let stderr = '';
let client: Client;

before(async () => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', '--tenant', 'stdio-tenant'], env, stderr: 'pipe' });
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  client = new Client({ name: 'membrane-test', version: '1.0.0' });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
});

mcpContract(
  'stdio',
  () => client,
  auditViaCli(env),
  'stdio-tenant',
);

test('stdio: the server logs JSON lines on stderr (tool, tenant, outcome), never the code', () => {
  const lines = stderr.split('\n').filter((l) => l.startsWith('{'));
  assert.ok(lines.length > 0, stderr);
  const calls = lines.map((l) => JSON.parse(l) as { msg: string; tool?: string; tenant?: string }).filter((l) => l.msg === 'mcp tool call');
  assert.ok(calls.some((c) => c.tool === 'sandbox_execute' && c.tenant === 'stdio-tenant'));
  assert.ok(!stderr.includes('print(6*7)'), 'a snippet never appears in the logs');
});

interface Rpc {
  id?: number;
  result?: { structuredContent?: { granted?: string; stdout?: string } };
  error?: { code: number };
}

test('stdio: junk on stdin is skipped, stdout carries only JSON-RPC, and the server exits 0 when stdin ends', async () => {
  const p = spawn(process.execPath, [BIN, 'mcp'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => p.on('close', resolve));
  const send = (m: unknown): void => void p.stdin.write(`${typeof m === 'string' ? m : JSON.stringify(m)}\n`);
  send('hello, this is not JSON');
  send('{"half": ');
  send({ not: 'json-rpc' });
  send('\u0000\u0001\u00ff');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_profiles', arguments: {} } });
  send({ jsonrpc: '2.0', id: 3, method: 'no/such/method' });
  send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'run_wasm', arguments: { module: 'echo', args: ['still', 'here'] } } });
  const deadline = Date.now() + 60_000;
  while (!out.includes('"id":4') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  p.stdin.end();
  const code = await exited;
  assert.equal(code, 0, err);
  const msgs = out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Rpc)
    .sort((a, b) => (a.id ?? 0) - (b.id ?? 0));
  assert.deepEqual(msgs.map((m) => m.id), [1, 2, 3, 4], out);
  assert.equal(msgs[1]!.result?.structuredContent?.granted, 'compute');
  assert.equal(msgs[2]!.error?.code, -32601);
  assert.equal(msgs[3]!.result?.structuredContent?.stdout, 'still here\n');
  assert.match(err, /a line that is not JSON/);
  assert.match(err, /a message that is not JSON-RPC/);
});

test('stdio: --profile outside the ladder is a usage error; --profile network is granted', async () => {
  const bad = await runCli(['mcp', '--profile', 'root'], env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--profile must be one of compute, minimal, network, posix/);
  const p = spawn(process.execPath, [BIN, 'mcp', '--profile', 'network'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => p.on('close', resolve));
  p.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_profiles', arguments: {} } })}\n`);
  p.stdin.end();
  assert.equal(await exited, 0);
  assert.equal((JSON.parse(out.trim()) as Rpc).result?.structuredContent?.granted, 'network');
});

test("stdio: --config's profile is the grant when --profile is absent; a config typo is refused", async () => {
  const good = join(home, 'mcp.toml');
  writeFileSync(good, 'profile = "minimal"\n[limits.operatorLimits.minimal]\ntimeoutMs = 7000\n');
  const p = spawn(process.execPath, [BIN, 'mcp', '--config', good], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => p.on('close', resolve));
  p.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_profiles', arguments: {} } })}\n`);
  p.stdin.end();
  assert.equal(await exited, 0);
  const s = (JSON.parse(out.trim()) as { result: { structuredContent: { granted: string; profiles: { name: string; timeoutMs: number }[] } } }).result.structuredContent;
  assert.equal(s.granted, 'minimal');
  assert.equal(s.profiles.find((x) => x.name === 'minimal')?.timeoutMs, 7000);
  const typo = join(home, 'typo.toml');
  writeFileSync(typo, 'profil = "posix"\n');
  const r = await runCli(['mcp', '--config', typo], env);
  assert.equal(r.code, 64);
  assert.match(r.stderr, /unknown key "profil"/);
  assert.equal(r.stdout, '');
});

test('stdio: SIGTERM lets an in-flight call finish and answer, then exits 0', async () => {
  const p = spawn(process.execPath, [BIN, 'mcp'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => p.on('close', resolve));
  // Wait until the server answers (it is up and its signal handlers are installed).
  p.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })}\n`);
  for (let i = 0; i < 1200 && !out.includes('"id":1'); i++) await new Promise((r) => setTimeout(r, 50));
  out = '';
  const code = 'const t = Date.now(); while (Date.now() - t < 800) {} "done"';
  p.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { code, language: 'js' } } })}\n`);
  await new Promise((r) => setTimeout(r, 300));
  p.kill('SIGTERM');
  assert.equal(await exited, 0);
  const msg = JSON.parse(out.trim()) as { id: number; result: { structuredContent: { ok: boolean; result: string } } };
  assert.equal(msg.id, 9);
  assert.equal(msg.result.structuredContent.result, 'done');
});
