// MCP cancellation and progress, over both transports: a client's notifications/cancelled (the
// SDK sends it when the call's AbortSignal fires) ends a spinning snippet at once — the server's
// own log line for the call says CANCELLED after about the time it was cancelled at, not the
// 5 s deadline — and a call that carries a progressToken gets the snippet's stdout as progress
// notifications before its result.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { handleMcpRequest } from '../../src/interfaces/mcp/http.ts';
import { BIN } from '../helpers/cli.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { structured } from './mcp-contract.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_AUDIT_KEY'] ??= 'b'.repeat(64);
const SPIN = 'while (true) {}';
/** Prints, then works for 800 ms, then answers. */
const PRINT_THEN_WORK = "console.log('first line'); const t = Date.now(); while (Date.now() - t < 800) {} 'done'";
const CANCEL_AT_MS = 500;
/** The compute grant's deadline: a cancellation that did nothing would end the call here. */
const DEADLINE_MS = 5_000;

interface Transport {
  client: Client;
  /** The server's log entries for tool calls (fields of the 'mcp tool call' lines). */
  calls(): Record<string, unknown>[];
}

const transports: Record<'stdio' | 'http', Transport> = {} as Record<'stdio' | 'http', Transport>;
let server: Server;
const engineDir = tempDir('membrane-mcp-cancel-http-');
const engine = testEngine({ poolSize: 1, brokers: { databaseFile: join(engineDir, 'engine.sqlite') } });

before(async () => {
  // stdio: `membrane mcp`, its log lines on stderr.
  const home = tempDir('membrane-mcp-cancel-');
  const env = { ...(Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string')) as Record<string, string>), MEMBRANE_HOME: home, MEMBRANE_AUDIT_KEY: 'c'.repeat(64) };
  let stderr = '';
  const stdio = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', '--tenant', 'cancel-tenant'], env, stderr: 'pipe' });
  stdio.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const stdioClient = new Client({ name: 'membrane-test', version: '1.0.0' });
  await stdioClient.connect(stdio);
  transports.stdio = {
    client: stdioClient,
    calls: () =>
      stderr
        .split('\n')
        .filter((l) => l.includes('mcp tool call'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };

  // streamable HTTP: handleMcpRequest with a logger that keeps the lines.
  const lines: Record<string, unknown>[] = [];
  const log = { info: (f: Record<string, unknown>, m: string) => lines.push({ ...f, msg: m }), warn: (f: Record<string, unknown>, m: string) => lines.push({ ...f, msg: m }) };
  server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (raw += d));
    req.on('end', () => void handleMcpRequest(req, res, raw ? JSON.parse(raw) : undefined, { engine, tenant: 'cancel-tenant', profile: 'compute', log }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  assert.ok(addr && typeof addr === 'object');
  const httpClient = new Client({ name: 'membrane-test', version: '1.0.0' });
  await httpClient.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${addr.port}/mcp`)));
  transports.http = { client: httpClient, calls: () => lines.filter((l) => l['msg'] === 'mcp tool call') };
});

after(async () => {
  await transports.stdio?.client.close();
  await transports.http?.client.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await engine.close();
});

async function until<T>(what: string, probe: () => T | undefined, limitMs: number): Promise<T> {
  const t0 = performance.now();
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (performance.now() - t0 > limitMs) assert.fail(`${what} did not happen within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

for (const name of ['stdio', 'http'] as const) {
  test(`${name}: notifications/cancelled ends a spinning snippet at once, not at its deadline`, async () => {
    const t = transports[name];
    const before = t.calls().length;
    const ac = new AbortController();
    const call = t.client.callTool({ name: 'sandbox_execute', arguments: { code: SPIN, language: 'js', timeout_ms: DEADLINE_MS } }, undefined, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('the user changed their mind')), CANCEL_AT_MS);
    await assert.rejects(call);
    const line = await until('the cancelled call’s log line', () => t.calls().slice(before).find((l) => l['tool'] === 'sandbox_execute'), DEADLINE_MS + LOAD_SLACK_MS);
    assert.equal(line['code'], 'CANCELLED', JSON.stringify(line));
    // Ended about when it was cancelled: well before the deadline a broken cancellation would wait for.
    assert.ok(Number(line['ms']) < CANCEL_AT_MS + LOAD_SLACK_MS && Number(line['ms']) < DEADLINE_MS, `the call ran ${String(line['ms'])} ms`);
    // The server keeps answering.
    const r = await t.client.callTool({ name: 'sandbox_execute', arguments: { code: '1+1', language: 'js' } });
    assert.equal(structured(r)['result'], 2);
  });

  test(`${name}: a progressToken gets stdout as progress notifications before the result`, async () => {
    const t = transports[name];
    const t0 = performance.now();
    const seen: { at: number; message: string; progress: number }[] = [];
    const r = await t.client.callTool({ name: 'sandbox_execute', arguments: { code: PRINT_THEN_WORK, language: 'js' } }, undefined, {
      onprogress: (p) => seen.push({ at: performance.now() - t0, message: p.message ?? '', progress: p.progress }),
    });
    const done = performance.now() - t0;
    const s = structured(r);
    assert.equal(s['ok'], true, JSON.stringify(s));
    assert.equal(s['stdout'], 'first line\n');
    assert.ok(seen.length > 0, 'no progress notification arrived');
    assert.equal(seen.map((p) => p.message).join(''), 'first line\n');
    // The line was seen while the snippet still worked (it works 800 ms after printing).
    assert.ok(seen[0]!.at < done - 300, `first progress at ${seen[0]!.at.toFixed(0)} ms, result at ${done.toFixed(0)} ms`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.progress > seen[i - 1]!.progress, 'progress must increase');
  });

}
