// The attack: code that takes over an os_process child (a V8 escape from the guest) takes host
// memory — Buffers, wasm memories — until the machine swaps, or writes a huge file, or leaves a
// core dump of its guest's memory. The child is started under rlimits (rlimits.ts, through
// prlimit): writable memory, file size, open files, CPU seconds, no core files. A stand-in child
// started exactly as the real one gets no more memory than its limit; a real call's child has
// every limit the engine's configuration gives.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createEngine } from '../../src/index.ts';
import { runChild } from '../../src/engine/os-process/spawn.ts';
import { prlimitPath, rlimitsFor } from '../../src/engine/os-process/rlimits.ts';

const HOG = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process/hog.mjs');
const MiB = 1024 * 1024;
const PRLIMIT = prlimitPath();

test('prlimit is on this machine (util-linux): without it os_process children run without rlimits', () => {
  assert.notEqual(PRLIMIT, null, 'install util-linux (prlimit) — Debian has it in its essential set');
});

test('a hijacked child taking memory gets no more than its RLIMIT_DATA (Buffers and wasm memories alike)', async () => {
  const limits = { dataBytes: 768 * MiB, fileBytes: 64 * MiB, openFiles: 256, cpuSeconds: 60 };
  const reply = await runChild(
    { entry: HOG, readDirs: [], bwrap: null, addons: false, shareNet: false, rlimits: { prlimit: PRLIMIT!, limits }, killAfterMs: 60_000, maxReplyBytes: 1 << 20 },
    JSON.stringify({ mode: 'hog' }),
  );
  const r = JSON.parse(reply) as { buffers: number; wasm: number };
  // Node itself takes some of the limit; the hog's share is what is left, never the 3 GiB it asked for.
  assert.ok(r.buffers < limits.dataBytes, `took ${r.buffers / MiB} MiB of Buffers`);
  assert.ok(r.wasm < limits.dataBytes, `took ${r.wasm / MiB} MiB of wasm memory`);
  assert.ok(r.buffers >= 64 * MiB, 'the limit is not "everything fails": some memory is there');
});

test("a real call's child runs with the engine's rlimits, hard and soft, and no core files", async () => {
  const engine = createEngine({ poolSize: 0, osProcessPool: 0, operatorLimits: { posix: { memoryBytes: 512 * MiB } } });
  try {
    const want = rlimitsFor({ operatorLimits: { posix: { memoryBytes: 512 * MiB } }, vfsMaxBytes: 256 * MiB });
    let seen = '';
    const r = await engine.exec({
      language: 'js',
      code: 'const t = Date.now(); while (Date.now() - t < 1500) {} 1',
      tier: 'os_process',
      timeoutMs: 20_000,
      onChildSpawn: (pid: number) => {
        const poll = setInterval(() => {
          try {
            seen = readFileSync(`/proc/${pid}/limits`, 'utf8');
            if (/Max data size/.test(seen) && Number(/Max data size\s+(\d+)/.exec(seen)?.[1]) > 0) clearInterval(poll);
          } catch {
            clearInterval(poll);
          }
        }, 20);
      },
    } as never);
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.ok(!r.warnings.some((w) => /without rlimits/.test(w)), r.warnings.join('; '));
    const row = (name: string): [string, string] => {
      const m = new RegExp(`${name}\\s+(\\S+)\\s+(\\S+)`).exec(seen);
      assert.ok(m, `${name} in ${seen}`);
      return [m![1]!, m![2]!];
    };
    assert.deepEqual(row('Max data size'), [String(want.dataBytes), String(want.dataBytes)]);
    assert.equal(want.dataBytes, 8192 * MiB + 4 * 512 * MiB);
    assert.deepEqual(row('Max file size'), [String(want.fileBytes), String(want.fileBytes)]);
    assert.deepEqual(row('Max open files'), ['1024', '1024']);
    assert.deepEqual(row('Max cpu time'), [String(want.cpuSeconds), String(want.cpuSeconds)]);
    assert.deepEqual(row('Max core file size'), ['0', '0']);
  } finally {
    await engine.close();
  }
});
