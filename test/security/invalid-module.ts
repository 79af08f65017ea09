/**
 * Shared by the invalid-module attacks (issue #12): a module whose only fault is an index past
 * the input's own index space — where the rewriters put what they add — must be INVALID_MODULE
 * with V8's reason on every surface: the fuel rewriter alone (its own index checks, the gate
 * skipped), `instrumentFuel` (the gate), `engine.run`, `engine.start`, `membrane instrument` and
 * `membrane run` (CLI), MCP `run_wasm` and HTTP `POST /v1/runs`.
 */

import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SandboxError } from '../../src/errors.ts';
import { instrumentFuel } from '../../src/wasm/index.ts';
import { runCli } from '../helpers/cli.ts';
import { testEngine } from '../helpers/engine.ts';
import { call, testServer } from '../helpers/http.ts';
import type { TestServer } from '../helpers/http.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

export interface InvalidCase {
  /** What the module tries, e.g. "global.set 0 with no globals writes the fuel counter". */
  readonly attack: string;
  /** The module as text, or (where wabt would repair the fault) as hex bytes. */
  readonly wat?: string;
  readonly hex?: string;
  /** The export a run would call. */
  readonly invoke: string;
  /** V8's reason, as it must appear in every surface's message. */
  readonly v8: RegExp;
  /** The fuel rewriter's own refusal when the gate is skipped. */
  readonly rewriter: RegExp;
}

async function moduleBytes(c: InvalidCase): Promise<Uint8Array<ArrayBuffer>> {
  if (c.hex !== undefined) return Uint8Array.from(c.hex.replace(/\s+/g, '').match(/../g) ?? [], (h) => parseInt(h, 16));
  return (await watText(c.wat ?? '')) as Uint8Array<ArrayBuffer>;
}

function assertInvalidModule(e: unknown, reason: RegExp, where: string): void {
  assert.ok(e instanceof SandboxError, `${where}: expected a SandboxError, got ${String(e)}`);
  assert.equal(e.code, 'INVALID_MODULE', `${where}: ${e.message}`);
  assert.match(e.message, reason, where);
}

function assertErrorBody(error: { code?: string; message?: string } | undefined, reason: RegExp, where: string): void {
  assert.equal(error?.code, 'INVALID_MODULE', `${where}: ${JSON.stringify(error)}`);
  assert.match(String(error?.message), reason, where);
  assert.doesNotMatch(String(error?.message), /\/work\/|\/tmp\/|\/home\/|node_modules|\n\s+at /, `${where}: no host path or stack`);
}

/** Registers the tests of one attack file (await it at the file's top level). */
export async function refusedEverywhere(cases: readonly InvalidCase[]): Promise<void> {
  const engine = testEngine();
  const dir = tempDir('membrane-invalid-');
  const env = { MEMBRANE_HOME: dir, MEMBRANE_AUDIT_KEY: 'd'.repeat(64) };
  const server: TestServer = await testServer({ engine });
  const mcp = new Client({ name: 'membrane-security-test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL('/mcp', server.url), { requestInit: { headers: { authorization: `Bearer ${server.token('attacker')}` } } }));
  after(async () => {
    await mcp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const c of cases) {
    test(`${c.attack}: INVALID_MODULE from the rewriter alone, instrumentFuel, engine.run and engine.start`, async () => {
      const bytes = await moduleBytes(c);
      assert.equal(WebAssembly.validate(bytes), false, 'the module is invalid as given');
      assert.throws(() => instrumentFuel(bytes, { validated: true }), (e) => (assertInvalidModule(e, c.rewriter, 'rewriter alone'), true));
      assert.throws(() => instrumentFuel(bytes), (e) => (assertInvalidModule(e, c.v8, 'instrumentFuel'), true));
      const r = await engine.run(bytes, { invoke: c.invoke });
      assert.equal(r.ok, false);
      assertErrorBody(r.error, c.v8, 'engine.run');
      await assert.rejects(engine.start(`attack-${cases.indexOf(c)}`, bytes), (e) => (assertInvalidModule(e, c.v8, 'engine.start'), true));
      assert.equal(engine.get(`attack-${cases.indexOf(c)}`), undefined, 'no instance was left behind');
    });

    test(`${c.attack}: INVALID_MODULE from membrane instrument and membrane run (exit 66, no output file)`, async () => {
      const file = join(dir, `attack-${cases.indexOf(c)}.wasm`);
      writeFileSync(file, await moduleBytes(c));
      const out = join(dir, `attack-${cases.indexOf(c)}.out.wasm`);
      const inst = await runCli(['instrument', file, '-o', out, '--json'], env);
      assert.equal(inst.code, 66, inst.stderr);
      assertErrorBody((JSON.parse(inst.stdout) as { error?: { code: string; message: string } }).error, c.v8, 'membrane instrument');
      assert.equal(existsSync(out), false, 'no instrumented module is written');
      const plain = await runCli(['instrument', file, '-o', out], env);
      assert.equal(plain.code, 66);
      assert.match(plain.stderr, /INVALID_MODULE/);
      const run = await runCli(['run', file, '--invoke', c.invoke, '--json'], env);
      assert.equal(run.code, 66, run.stderr);
      assertErrorBody((JSON.parse(run.stdout) as { error?: { code: string; message: string } }).error, c.v8, 'membrane run');
    });

    test(`${c.attack}: INVALID_MODULE from MCP run_wasm and HTTP POST /v1/runs`, async () => {
      const b64 = Buffer.from(await moduleBytes(c)).toString('base64');
      const tool = (await mcp.callTool({ name: 'run_wasm', arguments: { module: b64, invoke: c.invoke } })) as CallToolResult;
      const s = tool.structuredContent as { ok?: boolean; error?: { code: string; message: string } } | undefined;
      assert.equal(s?.ok, false, JSON.stringify(tool).slice(0, 300));
      assertErrorBody(s?.error, c.v8, 'MCP run_wasm');
      const r = await call(server.url, '/v1/runs', server.token('attacker'), 'POST', { module: b64, invoke: c.invoke });
      assert.equal(r.body?.ok, false, r.text.slice(0, 300));
      assertErrorBody(r.body.error, c.v8, 'HTTP /v1/runs');
    });
  }
}
