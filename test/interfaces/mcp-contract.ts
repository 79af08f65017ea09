// The MCP contract every transport must keep (stdio and streamable HTTP run the same suite): three
// tools with input schemas; Python print(6*7) → "42\n"; a cap outside a compute grant →
// NOT_CAPABLE naming it plus an audit record; timeout clamped and reported; JS 1+1 → 2; run_wasm
// with a registered command and with base64 wasm; bad input → a clear tool error, and the server
// keeps answering.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { watText } from '../helpers/wat.ts';
import { runCli } from '../helpers/cli.ts';

export interface AuditView {
  /** Denied records of `tenant`, oldest first. */
  denied(tenant: string): Promise<{ kind: string; detail: Record<string, unknown> }[]>;
}

type Structured = Record<string, unknown> & { error?: { code: string; message: string; mcpCode?: number } };

/** An AuditView reading the denials back as a user would: `membrane audit tail --json` on `env`'s $MEMBRANE_HOME. */
export function auditViaCli(env: Record<string, string>): AuditView {
  return {
    denied: async (tenant) => {
      const r = await runCli(['audit', 'tail', '--json', '--tenant', tenant, '--kind', 'denied', '--limit', '1000'], env);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { kind: string; detail: Record<string, unknown> });
    },
  };
}

export function structured(r: unknown): Structured {
  const s = (r as CallToolResult).structuredContent;
  assert.ok(s && typeof s === 'object', `no structured content in ${JSON.stringify(r).slice(0, 300)}`);
  return s as Structured;
}

export function text(r: unknown): string {
  const c = (r as CallToolResult).content;
  return c.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

const ADD_WAT = '(module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))';

/** Register the contract's tests; `client()` returns the connected client of this transport. */
export function mcpContract(name: string, client: () => Client, audit: AuditView, tenant: string): void {
  test(`${name}: three tools, each with an input schema`, async () => {
    const { tools } = await client().listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['list_profiles', 'run_wasm', 'sandbox_execute']);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object');
      assert.ok(t.outputSchema, `${t.name} has no output schema`);
    }
    const exec = tools.find((t) => t.name === 'sandbox_execute')!;
    assert.deepEqual(Object.keys(exec.inputSchema.properties ?? {}).sort(), ['capability_subset', 'code', 'context', 'fuel', 'language', 'timeout_ms']);
    assert.deepEqual([...(exec.inputSchema.required ?? [])].sort(), ['code', 'language']);
  });

  test(`${name}: Python print(6*7) → stdout "42\\n"`, async () => {
    const r = await client().callTool({ name: 'sandbox_execute', arguments: { code: 'print(6*7)', language: 'python' } });
    const s = structured(r);
    assert.equal(s['ok'], true, text(r));
    assert.equal(s['stdout'], '42\n');
    assert.equal(s['stderr'], '');
    assert.equal(s['profile'], 'compute');
    assert.match(text(r), /stdout:\n42\n/);
    assert.notEqual(r.isError, true);
  });

  test(`${name}: capability_subset ["net"] from a compute grant → NOT_CAPABLE naming net, and an audit record`, async () => {
    const before = (await audit.denied(tenant)).length;
    const r = await client().callTool({ name: 'sandbox_execute', arguments: { code: 'print(1)', language: 'python', capability_subset: ['net'] } });
    assert.equal(r.isError, true);
    assert.match(text(r), /^NOT_CAPABLE: capability "net" is not granted/);
    const s = structured(r);
    assert.equal(s.error?.code, 'NOT_CAPABLE');
    assert.equal(s.error?.mcpCode, -32003);
    assert.equal(s['stdout'], '', 'nothing ran');
    const after = await audit.denied(tenant);
    assert.equal(after.length, before + 1);
    const rec = after[after.length - 1]!;
    assert.deepEqual(rec.detail['caps'], ['net']);
    assert.equal(rec.detail['op'], 'mcp');
    assert.equal(rec.detail['code'], 'NOT_CAPABLE');
  });

  test(`${name}: timeout_ms 10 000 000 is clamped to the grant's 5 000 and the clamp reported`, async () => {
    const r = await client().callTool({ name: 'sandbox_execute', arguments: { code: '1+1', language: 'js', timeout_ms: 10_000_000 } });
    const s = structured(r);
    assert.equal(s['ok'], true, text(r));
    assert.deepEqual(s['clamped'], ['timeout_ms 10000000 clamped to 5000']);
    assert.match(text(r), /clamped: timeout_ms 10000000 clamped to 5000/);
  });

  test(`${name}: JS 1+1 → 2; TS with a type annotation; context is readable`, async () => {
    const js = structured(await client().callTool({ name: 'sandbox_execute', arguments: { code: '1+1', language: 'js' } }));
    assert.equal(js['result'], 2);
    assert.deepEqual(js['clamped'], []);
    const ts = structured(await client().callTool({ name: 'sandbox_execute', arguments: { code: 'const n: number = context.n; n * 3', language: 'ts', context: { n: 7 } } }));
    assert.equal(ts['result'], 21, JSON.stringify(ts));
  });

  test(`${name}: a snippet's own failure is a result with error, not a refusal`, async () => {
    const r = await client().callTool({ name: 'sandbox_execute', arguments: { code: 'while (true) {}', language: 'js', timeout_ms: 300 } });
    assert.notEqual(r.isError, true);
    const s = structured(r);
    assert.equal(s['ok'], false);
    assert.equal(s.error?.code, 'TIMEOUT');
    const thrown = structured(await client().callTool({ name: 'sandbox_execute', arguments: { code: 'raise ValueError("nope")', language: 'python' } }));
    assert.equal(thrown['ok'], false);
    assert.match(`${thrown.error?.message} ${String(thrown['stderr'])}`, /ValueError/);
  });

  test(`${name}: run_wasm with a registered command (echo hi)`, async () => {
    const r = await client().callTool({ name: 'run_wasm', arguments: { module: 'echo', args: ['hi'] } });
    const s = structured(r);
    assert.equal(s['ok'], true, text(r));
    assert.equal(s['stdout'], 'hi\n');
    assert.equal(s['exitCode'], 0);
    assert.equal(s['profile'], 'compute');
    for (const k of ['fuelUsed', 'durationMs', 'memoryBytes']) assert.equal(typeof s[k], 'number');
    const cat = structured(await client().callTool({ name: 'run_wasm', arguments: { module: 'wc', args: ['-c'], stdin: 'hello' } }));
    assert.match(String(cat['stdout']), /\b5\b/);
  });

  test(`${name}: run_wasm with a base64 module and invoke`, async () => {
    const b64 = Buffer.from(await watText(ADD_WAT)).toString('base64');
    const s = structured(await client().callTool({ name: 'run_wasm', arguments: { module: b64, invoke: 'add', args: ['2', '40'] } }));
    assert.equal(s['ok'], true, JSON.stringify(s));
    assert.equal(s['result'], 42);
    const missing = structured(await client().callTool({ name: 'run_wasm', arguments: { module: 'no-such-command' } }));
    assert.equal(missing.error?.code, 'NOT_FOUND');
    const junk = structured(await client().callTool({ name: 'run_wasm', arguments: { module: 'AGFzbQ$$' } }));
    assert.equal(junk.error?.code, 'INVALID_MODULE');
  });

  test(`${name}: invalid input → a clear error naming the field; the server keeps working`, async () => {
    const bad = await client().callTool({ name: 'sandbox_execute', arguments: { code: 'print(1)', language: 'cobol' } });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /Input validation error.*language/s);
    const typo = await client().callTool({ name: 'sandbox_execute', arguments: { code: '1', language: 'js', capabilty_subset: ['vfs'] } });
    assert.equal(typo.isError, true);
    assert.match(text(typo), /capabilty_subset/);
    const noCode = await client().callTool({ name: 'run_wasm', arguments: { args: 'not-an-array' } });
    assert.equal(noCode.isError, true);
    const unknownCap = await client().callTool({ name: 'sandbox_execute', arguments: { code: '1', language: 'js', capability_subset: ['root'] } });
    assert.equal(structured(unknownCap).error?.code, 'POLICY_INVALID');
    const unknownTool = await client().callTool({ name: 'no_such_tool', arguments: {} });
    assert.equal(unknownTool.isError, true);
    assert.match(text(unknownTool), /no_such_tool not found/);
    const still = structured(await client().callTool({ name: 'sandbox_execute', arguments: { code: '2+3', language: 'js' } }));
    assert.equal(still['result'], 5);
  });

  test(`${name}: list_profiles → the ladder and the grant`, async () => {
    const s = structured(await client().callTool({ name: 'list_profiles', arguments: {} }));
    assert.equal(s['granted'], 'compute');
    const profiles = s['profiles'] as { name: string; timeoutMs: number; caps: string[] }[];
    assert.deepEqual(profiles.map((p) => p.name), ['compute', 'minimal', 'network', 'posix']);
    assert.equal(profiles[0]!.timeoutMs, 5000);
    assert.deepEqual(profiles[0]!.caps, ['vfs']);
  });
}
