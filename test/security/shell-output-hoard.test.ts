// 500 × `cat f` of a big file (issue #22: the shell held 294 MB of output, ~1 GiB RSS). The
// script's stdout and stderr are capped like the engine's output wall (outputLimitBytes, 1 MiB
// by default): past the cap bytes are dropped and the text ends with a marker plus a warning —
// or, with failOnOutputLimit, the script ends OUTPUT_LIMIT. A pipe between stages is bounded by
// the stage's own cap, and a truncated stage is reported.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry, runShell } from '../../src/shell/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { shellPeakRss } from '../helpers/shell-peak-rss.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-sh-hoard-');
const registry = CommandRegistry.withBuiltins();
const MiB = 1024 * 1024;
const MARKER = '\n[membrane: sh stdout truncated at 1048576 bytes]\n';

test('500 × cat of a 1 MiB file keeps 1 MiB of stdout, marked truncated, host RSS growth under 200 MiB', async () => {
  const script = `seq 1 200000 > f; ${Array.from({ length: 500 }, () => 'cat f').join('; ')}; echo end`;
  // A generous operator budget, so that the output bound — not the deadline — is what this shows.
  const r = await shellPeakRss({ script, options: { timeoutMs: 120_000 }, engine: { operatorLimits: { compute: { timeoutMs: 120_000 } } } });
  const res = r.result;
  assert.equal(res.error, undefined, res.stderr);
  assert.equal(res.exitCode, 0, 'truncation is not a failure');
  assert.ok(res.stdout.endsWith(MARKER), res.stdout.slice(-100));
  assert.equal(res.stdout.length, MiB + MARKER.length);
  assert.ok(res.stdout.startsWith('1\n2\n3\n'));
  assert.deepEqual([...res.warnings].sort(), ['sh stdout truncated at 1048576 bytes', 'stdout truncated at 1048576 bytes']);
  assert.equal(res.stderr, 'sh: seq: stdout truncated at 1048576 bytes\n', 'the stage whose output went to a file was cut, and says so');
  assert.ok(r.growthBytes < 200 * MiB, `RSS grew ${(r.growthBytes / MiB).toFixed(1)} MiB`);
});

test('with failOnOutputLimit the script ends OUTPUT_LIMIT when its stdout passes the cap', async () => {
  const engine = testEngine({ poolSize: 1, failOnOutputLimit: true, outputLimitBytes: 100_000 });
  const r = await runShell(engine, registry, 'seq 1 15000 > f; cat f; cat f; echo never');
  assert.equal(r.error?.code, 'OUTPUT_LIMIT', r.stderr);
  assert.equal(r.error?.details['stream'], 'stdout');
  assert.equal(r.exitCode, 2);
  assert.equal(Buffer.byteLength(r.stdout), 78_894, 'the first cat fit; the second would not');
  assert.doesNotMatch(r.stdout, /never/);
});

test("the script's stderr is capped too", async () => {
  const engine = testEngine({ poolSize: 1, outputLimitBytes: 4096 });
  const r = await runShell(engine, registry, Array.from({ length: 300 }, () => 'cat /no/such/file').join('; '));
  assert.equal(Buffer.byteLength(r.stderr), 4096 + '\n[membrane: sh stderr truncated at 4096 bytes]\n'.length);
  assert.ok(r.warnings.includes('sh stderr truncated at 4096 bytes'));
});

test('a pipe carries at most one stage cap, and the cut is reported', async () => {
  const engine = testEngine({ poolSize: 1, outputLimitBytes: 65_536 });
  const r = await runShell(engine, registry, 'seq 1 100000 | wc -c');
  assert.equal(r.stdout, '65536\n');
  assert.equal(r.stderr, 'sh: seq: stdout truncated at 65536 bytes\n');
});
