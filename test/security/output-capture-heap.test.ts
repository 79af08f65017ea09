// Output capture exhausting the worker's heap (issue #22: `seq 1 150000 | wc -c`, ~0.9 MB of
// output, ended MEMORY_LIMIT "the guest worker ran out of host heap": a line-buffered guest
// makes one write per line and each write was kept as its own copied Uint8Array). A stream is
// now one buffer grown up to the cap, so N bytes of output cost O(N) bytes of heap however
// they are split, and bytes past the cap are only counted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommandRegistry, runShell } from '../../src/shell/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-output-heap-');
const registry = CommandRegistry.withBuiltins();
const MiB = 1024 * 1024;
// seq 1 150000: 9×2 + 90×3 + 900×4 + 9000×5 + 90000×6 + 50001×7 bytes, as GNU seq prints.
const SEQ_150000_BYTES = 938_895;
// These floods are about heap, not time: ~1 s of host writes on a quiet machine, several times that
// on a loaded CI machine, so they run under network's 30 s budget (compute's 5 s is not the wall
// under test).
const ROOMY = { profile: 'network' } as const;

test('seq 1 150000 | wc -c prints 938895 (one write per line, 150 000 writes)', async () => {
  const engine = testEngine({ poolSize: 1 });
  const r = await runShell(engine, registry, 'seq 1 150000 | wc -c');
  assert.equal(r.error, undefined, r.stderr);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, `${SEQ_150000_BYTES}\n`);
  const direct = await engine.run(registry.get('seq')!, { argv: ['1', '150000'] });
  assert.equal(direct.ok, true, direct.error?.message);
  assert.equal(direct.stdout.length, SEQ_150000_BYTES);
  assert.equal(engine.stats().workersReplaced, 0);
});

test('seq 1 1000000 | wc -c: seq is cut at the 1 MiB cap, and the shell says so', async () => {
  const engine = testEngine({ poolSize: 1 });
  // seq's ~800 fuel a line keeps 10^6 lines within any profile's fuel.
  const r = await runShell(engine, registry, 'seq 1 1000000 | wc -c', ROOMY);
  assert.equal(r.error, undefined, r.stderr);
  assert.equal(r.stdout, `${MiB}\n`);
  assert.equal(r.stderr, 'sh: seq: stdout truncated at 1048576 bytes\n');
  assert.ok(r.warnings.includes('stdout truncated at 1048576 bytes'));
});

test('16 MiB in 16-byte writes: 1 MiB kept, truncation marked, the worker neither dies nor is replaced', async () => {
  const engine = testEngine({ poolSize: 1 });
  const flood = await wat('small-writes');
  const r = await engine.run(flood, { ...ROOMY, invoke: 'flood', args: [16 * MiB, 16] });
  assert.equal(r.ok, true, r.error?.message);
  assert.equal(r.result, 16 * MiB, 'every write was acknowledged in full');
  assert.equal(r.stdout.indexOf('\n[membrane'), MiB);
  assert.match(r.stdout, /\[membrane: stdout truncated at 1048576 bytes\]\n$/);
  assert.deepEqual(r.warnings, ['stdout truncated at 1048576 bytes']);
  assert.equal(engine.stats().workersReplaced, 0);
  const again = await engine.run(flood, { invoke: 'flood', args: [1000, 10] });
  assert.equal(again.stdout, 'B'.repeat(1000), 'the same worker serves the next run');
});

test('a 16 MiB worker heap captures 1 MiB written 16 bytes at a time (65 536 writes)', async () => {
  const engine = testEngine({ poolSize: 1, workerHeapMb: 16 });
  const r = await engine.run(await wat('small-writes'), { invoke: 'flood', args: [MiB, 16] });
  assert.equal(r.ok, true, r.error?.message);
  assert.equal(r.stdout.length, MiB);
  assert.deepEqual(r.warnings, []);
  assert.equal(engine.stats().workersReplaced, 0);
});
