// Attacks on the MCP tools' inputs: each size bound of src/interfaces/mcp is hit, at the limit and
// past it, and refused before anything is decoded or run; a caller cannot widen its grant through
// extra keys; a host exception's text never reaches the client.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Engine } from '../../src/engine/index.ts';
import { MAX_CODE_BYTES } from '../../src/lanes/exec.ts';
import { createMcpServer } from '../../src/interfaces/mcp/server.ts';
import { resolveModule } from '../../src/interfaces/mcp/run-wasm.ts';
import { CommandRegistry } from '../../src/engine/registry.ts';
import { MAX_ARGS, MAX_ARG_CHARS, MAX_CONTEXT_BYTES, MAX_MODULE_BYTES, MAX_STDIN_BYTES, MAX_SUBSET_WORDS } from '../../src/interfaces/mcp/schemas.ts';
import { testEngine } from '../helpers/engine.ts';
import { structured, text } from '../interfaces/mcp-contract.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_AUDIT_KEY'] ??= 'd'.repeat(64);
const engine = testEngine({ poolSize: 1, brokers: { databaseFile: join(tempDir('membrane-mcp-flood-'), 'engine.sqlite') } });

const clients: Client[] = [];
after(() => Promise.all(clients.map((c) => c.close())));

async function connect(e: Engine): Promise<Client> {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ engine: e, tenant: 'flood', profile: 'compute' }).connect(a);
  const c = new Client({ name: 'attacker', version: '0' });
  await c.connect(b);
  clients.push(c);
  return c;
}

let client: Client;
before(async () => {
  client = await connect(engine);
});

const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });

test('a run_wasm module bomb (base64 decoding past 16 MiB) is TOO_LARGE before it is decoded', async () => {
  const chars = (Math.floor(MAX_MODULE_BYTES / 3) + 1) * 4; // decodes to MAX_MODULE_BYTES + 1..3 bytes
  const r = await call('run_wasm', { module: 'A'.repeat(chars) });
  assert.equal(r.isError, true);
  assert.equal(structured(r).error?.code, 'TOO_LARGE');
  assert.match(text(r), /limit is 16777216/);
  // At the limit the bytes are decoded and judged as a module — here not valid wasm — not as too large.
  const atLimit = Math.floor(MAX_MODULE_BYTES / 3) * 4;
  const module = `AGFzbQ${'A'.repeat(atLimit - 6)}`;
  assert.equal(resolveModule(new CommandRegistry(), module).length, MAX_MODULE_BYTES - (MAX_MODULE_BYTES % 3));
  const judged = structured(await call('run_wasm', { module }));
  assert.equal(judged.error?.code, 'INVALID_MODULE');
});

test('a stdin flood past MAX_STDIN_BYTES is TOO_LARGE; at the limit the guest reads it all', async () => {
  const over = await call('run_wasm', { module: 'wc', args: ['-c'], stdin: 'x'.repeat(MAX_STDIN_BYTES + 1) });
  assert.equal(structured(over).error?.code, 'TOO_LARGE');
  const at = structured(await call('run_wasm', { module: 'wc', args: ['-c'], stdin: 'x'.repeat(MAX_STDIN_BYTES) }));
  assert.equal(at['ok'], true, JSON.stringify(at).slice(0, 300));
  assert.match(String(at['stdout']), new RegExp(`\\b${MAX_STDIN_BYTES}\\b`));
});

test('a code flood past MAX_CODE_BYTES and a context flood past MAX_CONTEXT_BYTES are TOO_LARGE', async () => {
  const code = await call('sandbox_execute', { code: `1;${' '.repeat(MAX_CODE_BYTES)}`, language: 'js' });
  assert.equal(structured(code).error?.code, 'TOO_LARGE');
  const context = await call('sandbox_execute', { code: 'context.length', language: 'js', context: 'y'.repeat(MAX_CONTEXT_BYTES) });
  assert.equal(structured(context).error?.code, 'TOO_LARGE');
  const fits = structured(await call('sandbox_execute', { code: 'context.length', language: 'js', context: 'y'.repeat(MAX_CONTEXT_BYTES - 2) }));
  assert.equal(fits['result'], MAX_CONTEXT_BYTES - 2);
});

test('an argv flood (too many args, an over-long arg, a huge cap list) is refused by schema', async () => {
  const many = await call('run_wasm', { module: 'echo', args: Array.from({ length: MAX_ARGS + 1 }, () => 'a') });
  assert.equal(many.isError, true);
  assert.match(text(many), /Input validation error.*args/s);
  const long = await call('run_wasm', { module: 'echo', args: ['a'.repeat(MAX_ARG_CHARS + 1)] });
  assert.equal(long.isError, true);
  const caps = await call('sandbox_execute', { code: '1', language: 'js', capability_subset: Array.from({ length: MAX_SUBSET_WORDS + 1 }, () => 'vfs') });
  assert.equal(caps.isError, true);
  const atMax = structured(await call('run_wasm', { module: 'echo', args: Array.from({ length: MAX_ARGS }, () => 'a') }));
  assert.equal(atMax['stdout'], `${Array.from({ length: MAX_ARGS }, () => 'a').join(' ')}\n`);
});

test('a caller cannot widen its grant with extra keys (profile, caps, memory_bytes, tenant)', async () => {
  for (const extra of [{ profile: 'posix' }, { caps: ['net'] }, { memory_bytes: 1e12 }, { tenant: 'someone-else' }]) {
    const r = await call('sandbox_execute', { code: '1', language: 'js', ...extra });
    assert.equal(r.isError, true, JSON.stringify(extra));
    assert.match(text(r), new RegExp(Object.keys(extra)[0]!));
  }
  const fuel = structured(await call('sandbox_execute', { code: '1', language: 'js', fuel: 1e30 }));
  assert.deepEqual(fuel['clamped'], ['fuel 1e+30 clamped to 1000000000']);
  const wasm = structured(await call('run_wasm', { module: 'echo', args: ['x'], capability_subset: ['exec'] }));
  assert.equal(wasm.error?.code, 'NOT_CAPABLE');
});

test('a host exception (with a host path in its text) reaches the client as a bare INTERNAL', async () => {
  const broken = new Proxy(engine, {
    get(target, prop, receiver) {
      if (prop === 'exec') return () => Promise.reject(new Error('ENOENT: open /home/operator/.secrets/key.pem'));
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  const c = await connect(broken);
  const r = await c.callTool({ name: 'sandbox_execute', arguments: { code: '1', language: 'js' } });
  assert.equal(r.isError, true);
  assert.equal(text(r), 'INTERNAL: internal error');
  assert.ok(!JSON.stringify(r).includes('/home/operator'));
});
