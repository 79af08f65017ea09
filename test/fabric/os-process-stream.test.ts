// Streaming on the os_process tier (src/engine/os-process/stream.ts): `onStdout`, `onStderr` and
// an exec's `onProgress` reach the caller while the child runs — every chunk before the result,
// in order, joined to the result's text, as on the instance tier (test/engine/call-controls).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { testEngine } from '../helpers/engine.ts';
import { controlsGuest } from '../helpers/controls-guest.ts';

const engine = testEngine({ poolSize: 1, osProcessPool: 1 });
after(() => engine.close());
const OS = { tier: 'os_process' } as const;

test('a module on os_process streams stdout and stderr: every chunk before the result, joined to its text, as on the instance tier', async () => {
  const g = await controlsGuest();
  const results: Record<string, { out: string; err: string; stdout: string; stderr: string }> = {};
  for (const tier of ['instance', 'os_process'] as const) {
    const out: string[] = [];
    const err: string[] = [];
    let resolved = false;
    let late = 0;
    const r = await engine.run(g, { tier, invoke: 'lines', args: [200, 1], onStdout: (c) => (resolved ? late++ : out.push(c)), onStderr: (c) => (resolved ? late++ : err.push(c)) });
    resolved = true;
    await sleep(50);
    assert.equal(r.ok, true, `${tier}: ${JSON.stringify(r.error)}`);
    assert.equal(late, 0, `${tier}: no chunk after the result`);
    assert.ok(out.length > 1, `${tier}: a guest that sleeps between lines streams them in several chunks (got ${out.length})`);
    results[tier] = { out: out.join(''), err: err.join(''), stdout: r.stdout, stderr: r.stderr };
  }
  assert.equal(results['os_process']!.out, results['os_process']!.stdout);
  assert.equal(results['os_process']!.err, results['os_process']!.stderr);
  assert.deepEqual(results['os_process'], results['instance']);
});

test('a JS exec on os_process streams what it logs while it still runs', async () => {
  let first = 0;
  const chunks: string[] = [];
  const t0 = performance.now();
  const r = await engine.exec({
    ...OS,
    language: 'js',
    code: "console.log('early'); const t = Date.now(); while (Date.now() - t < 600) {} console.log('late'); 1",
    timeoutMs: 20_000,
    onStdout: (c: string) => {
      if (chunks.length === 0) first = performance.now();
      chunks.push(c);
    },
  } as never);
  const done = performance.now();
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(chunks.join(''), r.stdout);
  assert.match(r.stdout, /early\n[\s\S]*late\n/);
  assert.ok(first > t0 && done - first >= 300, `the first chunk came ${Math.round(done - first)} ms before the result (it logs 600 ms before it ends)`);
});

test('a Python exec on os_process streams its prints; onProgress is accepted (no refusal)', async () => {
  const chunks: string[] = [];
  const progress: string[] = [];
  const r = await engine.exec({ ...OS, language: 'python', code: "for i in range(3): print('line', i)", timeoutMs: 60_000, onStdout: (c: string) => chunks.push(c), onProgress: (p: string) => progress.push(p) } as never);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(chunks.join(''), 'line 0\nline 1\nline 2\n');
  assert.equal(r.stdout, chunks.join(''));
  for (const p of progress) assert.ok(typeof p === 'string' && p.length <= 500);
});
