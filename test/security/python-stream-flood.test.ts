// Attack: flood the host through the Python lane's live output. With onStdout/onStderr the
// interpreter's writes are streamed while it runs (issue #15); a snippet writes 10 MB in a tight
// loop, or a hundred thousand one-byte prints. What reaches the callbacks is at most the 1 MiB
// cap per stream, equal to the result's stdout, and arrives in batched chunks (the worker posts
// at most one message per FLUSH_INTERVAL_MS of running, src/engine/worker/output-forward.ts),
// never one message per write — so neither the worker's queue nor the host's grows with the
// number of writes.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { FLUSH_INTERVAL_MS } from '../../src/engine/worker/output-forward.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-py-stream-flood-');
const engine = testEngine({ poolSize: 1 });
const CAP = 1024 * 1024;
/** One post per flush interval per stream at most, and the rest of each stream once at the end. */
const maxChunks = (durationMs: number): number => 2 * Math.ceil(durationMs / FLUSH_INTERVAL_MS) + 4;

test('10 MB written in 100-byte pieces: the callbacks get exactly the capped stdout, in batches', async () => {
  const chunks: string[] = [];
  const errs: string[] = [];
  const r = await engine.exec({
    language: 'python',
    code: "import sys\nfor i in range(100_000):\n    sys.stdout.write('x' * 99 + '\\n')\n    if i % 1000 == 0: sys.stderr.write('e' * 50)\n'done'",
    profile: 'network',
    timeoutMs: 30_000,
    onStdout: (c) => chunks.push(c),
    onStderr: (c) => errs.push(c),
  });
  assert.equal(r.result, 'done', JSON.stringify(r.error));
  const got = chunks.join('');
  assert.equal(Buffer.byteLength(got), CAP);
  assert.equal(got, r.stdout);
  assert.equal(errs.join(''), r.stderr);
  assert.equal(r.stderr.length, 100 * 50);
  assert.ok(r.warnings.some((w) => /stdout truncated/.test(w)));
  console.log(`# ${chunks.length} stdout chunks, ${errs.length} stderr chunks in ${r.durationMs.toFixed(0)} ms`);
  assert.ok(chunks.length + errs.length <= maxChunks(r.durationMs), `${chunks.length + errs.length} chunks in ${r.durationMs.toFixed(0)} ms`);
});

test('a hundred thousand one-character prints arrive batched, not one message each', async () => {
  let calls = 0;
  let text = '';
  const r = await engine.exec({
    language: 'python',
    code: "for i in range(100_000): print('y', end='')\n",
    profile: 'network',
    timeoutMs: 30_000,
    onStdout: (c) => {
      calls++;
      text += c;
    },
  });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(text, 'y'.repeat(100_000));
  assert.equal(text, r.stdout);
  console.log(`# ${calls} callbacks for 100 000 writes in ${r.durationMs.toFixed(0)} ms`);
  assert.ok(calls <= maxChunks(r.durationMs), `${calls} callbacks in ${r.durationMs.toFixed(0)} ms`);
});
