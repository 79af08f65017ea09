// An upload stalling the server: eight distinct ~4.5 MB modules (900 000 functions each, ~29 MB
// once fuel-metered) posted to /v1/runs at once must not hold up another tenant's requests —
// rewriting and compiling happen on worker threads, hashing in 1 MiB steps, cache I/O async —
// so `/health`, polled every 10 ms meanwhile, answers with p99 under 100 ms. The uploads come from
// another process, as they would: this process's main thread is the server's alone.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { testServer } from '../helpers/http.ts';
import { manyFunctions } from '../helpers/big-module.ts';
import { tempDir } from '../helpers/tmp.ts';

const UPLOADS = 8;
const FUNCTIONS = 900_000;
/** Twice the quiet machine's bound, for a loaded one; one of these modules rewritten inline on the
 * main thread would stall it ~160 ms (bench: 338 ms for Pyodide's 9.6 MB), eight of them far more. */
const P99_BOUND_MS = 100;

const UPLOADER = `
const { readFileSync } = require('node:fs');
const [url, token, ...files] = process.argv.slice(1);
Promise.all(files.map(async (f) => {
  const r = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' }, body: readFileSync(f) });
  return { status: r.status, body: await r.json() };
})).then((rs) => process.stdout.write(JSON.stringify(rs)), (e) => { process.stderr.write(String(e)); process.exit(1); });
`;

type Upload = { status: number; body: { ok?: boolean; error?: { code: string; message: string } } };

function uploadFromAnotherProcess(url: string, token: string, files: readonly string[]): Promise<Upload[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', UPLOADER, url, token, ...files], { maxBuffer: 16 * 1024 * 1024, timeout: 280_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`the uploading process failed: ${stderr || err.message}`));
      else resolve(JSON.parse(stdout) as Upload[]);
    });
  });
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

test(`/health p99 stays under ${P99_BOUND_MS} ms while ${UPLOADS} large uploads are rewritten`, { timeout: 300_000 }, async () => {
  const cacheDir = tempDir('membrane-stall-cache-');
  after(() => rmSync(cacheDir, { recursive: true, force: true }));
  const engine = testEngine({ poolSize: 2, cacheDir, cacheMaxBytes: 96 * 1024 * 1024 });
  const s = await testServer({ engine });
  const token = s.token('uploader', 'compute');
  // Bodies are built before the clock starts, into files the uploading process reads.
  const files = Array.from({ length: UPLOADS }, (_, i) => {
    const file = join(cacheDir, `body-${i}.json`);
    writeFileSync(file, JSON.stringify({ module: Buffer.from(manyFunctions(FUNCTIONS, `stall-${i}-${process.pid}`)).toString('base64'), invoke: 'run' }));
    return file;
  });
  const bodyBytes = (await import('node:fs')).statSync(files[0]!).size;
  const latencies: number[] = [];
  const sentAt: number[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const t0 = performance.now();
      const r = await fetch(`${s.url}/health`);
      await r.arrayBuffer();
      latencies.push(performance.now() - t0);
      sentAt.push(t0);
      assert.equal(r.status, 200);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 100)); // a baseline before the uploads
  const t0 = performance.now();
  const results = await uploadFromAnotherProcess(`${s.url}/v1/runs`, token, files);
  const uploadMs = performance.now() - t0;
  polling = false;
  await poller;
  for (const r of results) {
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.ok, true, JSON.stringify(r.body.error));
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  const max = sorted.at(-1)!;
  const worst = latencies.indexOf(max);
  const worstAt = sentAt[worst]! - t0;
  console.log(
    `${UPLOADS} uploads of ${bodyBytes} B JSON (${FUNCTIONS} functions each) took ${uploadMs.toFixed(0)} ms; ` +
      `/health over ${sorted.length} polls: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms (sent ${worstAt.toFixed(0)} ms after the uploads began)`,
  );
  assert.ok(sorted.length >= 50, `only ${sorted.length} polls completed`);
  assert.ok(p99 < P99_BOUND_MS, `/health p99 ${p99.toFixed(1)} ms (max ${max.toFixed(1)} ms) while uploads were rewritten`);
});
