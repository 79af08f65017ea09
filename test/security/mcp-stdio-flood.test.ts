// A stdin flood against `membrane mcp`: one JSON-RPC line larger than MAX_MCP_MESSAGE_BYTES ends
// the session (logged on stderr) instead of growing a buffer without bound; the process exits
// cleanly. A message just under the bound is still read and answered.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { MAX_MCP_MESSAGE_BYTES } from '../../src/interfaces/mcp/stdio.ts';
import { BIN } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const env = { ...process.env, MEMBRANE_HOME: tempDir('membrane-mcp-flood-'), MEMBRANE_AUDIT_KEY: 'e'.repeat(64) };

function start(): { write(s: string): void; end(): void; exited: Promise<{ code: number | null; out: string; err: string }> } {
  const p = spawn(process.execPath, [BIN, 'mcp'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  p.stdin.on('error', () => undefined); // the server may stop reading mid-flood
  const killer = setTimeout(() => p.kill('SIGKILL'), 120_000);
  const exited = new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
    p.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, out, err });
    }),
  );
  return { write: (s) => void p.stdin.write(s), end: () => p.stdin.end(), exited };
}

test('a stdin line past MAX_MCP_MESSAGE_BYTES ends the MCP session; the process exits 0', async () => {
  const s = start();
  const chunk = 'x'.repeat(1024 * 1024);
  for (let sent = 0; sent <= MAX_MCP_MESSAGE_BYTES; sent += chunk.length) s.write(chunk);
  const r = await s.exited;
  assert.equal(r.code, 0, r.err.slice(-2000));
  assert.equal(r.out, '', 'nothing but protocol on stdout, and no answer to a flood');
  assert.match(r.err, new RegExp(`a message larger than ${MAX_MCP_MESSAGE_BYTES} bytes`));
});

test('a message just under the bound (a 16 MiB module upload) is read and answered', async () => {
  const s = start();
  const module = `AGFzbQ${'A'.repeat(Math.floor((16 * 1024 * 1024) / 3) * 4 - 6)}`;
  s.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_wasm', arguments: { module } } })}\n`);
  s.end();
  const r = await s.exited;
  assert.equal(r.code, 0, r.err.slice(-2000));
  const msg = JSON.parse(r.out.trim()) as { id: number; result: { structuredContent: { error: { code: string } } } };
  assert.equal(msg.id, 1);
  assert.equal(msg.result.structuredContent.error.code, 'INVALID_MODULE');
});
