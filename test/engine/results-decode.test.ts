import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromAwaited } from '../../src/engine/results.ts';
import type { Awaited } from '../../src/engine/bridge/worker-handle.ts';

const done = (stdout: Uint8Array, exitCode: number | null = 0): Awaited =>
  ({
    kind: 'done',
    frame: { v: 1, kind: 'done', job: 1, outcome: { ok: true, values: [], exitCode }, memoryBytes: 65536, fuelUsed: 3, stdoutTruncated: false, stderrTruncated: false, durationMs: 0.1 },
    stdout,
    stderr: new Uint8Array(0),
  }) as unknown as Awaited;
const ctx = { profile: 'compute', warnings: [], isCommand: true, timeoutMs: 1000, startedAt: performance.now(), outputLimitBytes: 1024 };

test('output is decoded as UTF-8 whatever its length and bytes (short ASCII, non-ASCII, a BOM, invalid bytes, long)', () => {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  const cases = [
    Buffer.from('hi\n'),
    Buffer.from('héllo wörld ✓\n'),
    Buffer.from([0xef, 0xbb, 0xbf, 0x41]),
    Buffer.from([0x41, 0xff, 0xfe, 0x42]),
    Buffer.from([0, 1, 2, 0x7f]),
    Buffer.from('x'.repeat(63) + 'é'),
    Buffer.from('y'.repeat(500)),
  ];
  for (const bytes of cases) {
    const r = fromAwaited(done(new Uint8Array(bytes)), ctx);
    assert.equal(r.stdout, decoder.decode(bytes));
  }
});

test('a finished command has the one result shape: exit code, output, metering, in this order', () => {
  const r = fromAwaited(done(new Uint8Array(Buffer.from('ok'))), ctx);
  assert.deepEqual(Object.keys(r), ['ok', 'exitCode', 'stdout', 'stderr', 'fuelUsed', 'durationMs', 'memoryBytes', 'profile', 'warnings']);
  assert.equal(r.exitCode, 0);
  assert.equal(fromAwaited(done(new Uint8Array(0), 3), ctx).exitCode, 3);
});
