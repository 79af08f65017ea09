// The JS/TS lane's call controls (issue #15): cancellation (before the call, while it waits,
// during a spin, during an awaited power), live stdout/stderr, top-level await, and the
// GUEST_EXCEPTION report — through JsLane and through engine.exec.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { JsLane } from '../../src/lanes/js/index.ts';
import { httpServer, type TestServer } from '../net/servers.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { jsRequest } from '../helpers/js-request.ts';
import { tempDir } from '../helpers/tmp.ts';

/** The contract: a cancelled call settles within 50 ms of the abort (bench/js-stream.ts measures it). */
const CANCEL_BOUND_MS = 50 + LOAD_SLACK_MS;

const lane = new JsLane({ poolSize: 2, cacheDir: false, workers: 1 });
const req = jsRequest;

let engine: Engine;
let hung: TestServer;
let ok: TestServer;
const hungRequests: IncomingMessage[] = [];

before(async () => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-js-controls-');
  hung = await httpServer((r) => void hungRequests.push(r), '127.0.0.1');
  ok = await httpServer((_r, res) => res.end('hello'), '127.0.0.1');
  engine = createEngine({ poolSize: 1, cacheDir: false, brokers: { net: { allowCidrs: ['127.0.0.1/32'] } } });
  await lane.warm();
  assert.equal((await engine.exec({ language: 'js', code: '1', profile: 'network' })).result, 1);
});
after(async () => {
  await lane.close();
  await engine.close();
  await hung.close();
  await ok.close();
});

/** Abort `ac` once `ms` have passed; resolves the abort's time. */
function abortAfter(ac: AbortController, ms: number): Promise<number> {
  return new Promise((resolve) =>
    setTimeout(() => {
      const t = performance.now();
      ac.abort(new Error('a reason that must not travel'));
      resolve(t);
    }, ms),
  );
}

test('a signal aborted before the call: CANCELLED, nothing runs', async () => {
  const ac = new AbortController();
  ac.abort();
  const r = await lane.exec(req('console.log("ran"); 1', { signal: ac.signal, onStdout: () => assert.fail('nothing runs') }));
  assert.deepEqual(r.error, { code: 'CANCELLED', message: 'the call was cancelled' });
  assert.equal(r.stdout, '');
  const e = await engine.exec({ language: 'js', code: '1', signal: ac.signal });
  assert.equal(e.error?.code, 'CANCELLED');
});

test('a call aborted while it waits for the lane is CANCELLED at once and never runs', async () => {
  const first = new AbortController();
  const spinning = lane.exec(req('for(;;){}', { signal: first.signal, timeoutMs: 20_000 }));
  const waiting = new AbortController();
  let ran = false;
  const queued = lane.exec(req('console.log("ran"); 2', { signal: waiting.signal, onStdout: () => void (ran = true) }));
  const abortedAt = await abortAfter(waiting, 100);
  const q = await queued;
  const took = performance.now() - abortedAt;
  assert.equal(q.error?.code, 'CANCELLED');
  assert.ok(took < CANCEL_BOUND_MS, `took ${took} ms`);
  first.abort();
  assert.equal((await spinning).error?.code, 'CANCELLED');
  assert.equal(ran, false);
});

test('aborting a spin settles CANCELLED within 50 ms (plus load slack) and the next call runs at once', async () => {
  for (const code of ['for(;;){}', 'for(;;){ try { for(;;){} } catch (e) {} }']) {
    const ac = new AbortController();
    const t0 = performance.now();
    const running = lane.exec(req(code, { signal: ac.signal, timeoutMs: 30_000 }));
    const abortedAt = await abortAfter(ac, 150);
    const r = await running;
    const settled = performance.now();
    assert.deepEqual(r.error, { code: 'CANCELLED', message: 'the call was cancelled' }, code);
    assert.ok(settled - abortedAt < CANCEL_BOUND_MS, `settled ${settled - abortedAt} ms after the abort`);
    assert.ok(settled - t0 < 30_000 / 2, 'long before its own deadline');
    assert.ok(!r.warnings.some((w) => /terminated/.test(w)), JSON.stringify(r.warnings));
    const next = await lane.exec(req('1 + 1'));
    assert.equal(next.result, 2);
    assert.ok(performance.now() - settled < 1000 + LOAD_SLACK_MS);
  }
  assert.equal(lane.stats().busy, 0);
});

test('aborting a snippet awaiting a slow fetch ends it at once, and the fetch is abandoned', async () => {
  const url = JSON.stringify(`http://127.0.0.1:${hung.port}/slow`);
  const ac = new AbortController();
  const from = hungRequests.length;
  const running = engine.exec({ language: 'js', profile: 'network', code: `const r = await fetch(${url}); r.status`, signal: ac.signal, timeoutMs: 20_000 });
  while (hungRequests.length === from) await new Promise((r) => setTimeout(r, 5));
  const closed = new Promise<number>((resolve) => hungRequests[from]!.socket.once('close', () => resolve(performance.now())));
  const abortedAt = await abortAfter(ac, 20);
  const r = await running;
  const took = performance.now() - abortedAt;
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r));
  assert.ok(took < CANCEL_BOUND_MS, `took ${took} ms`);
  assert.ok((await closed) - abortedAt < 1000 + LOAD_SLACK_MS, "the broker's socket was closed");
  assert.equal((await engine.exec({ language: 'js', code: '3', profile: 'network' })).result, 3);
});

test('stdout and stderr arrive while the snippet runs, in order, before the result, equal to it', async () => {
  const seen: { at: number; fd: string; text: string }[] = [];
  const t0 = performance.now();
  const r = await lane.exec(
    req(
      `console.log('first'); console.error('oops');
       const t = Date.now(); while (Date.now() - t < 1000) {}
       for (let i = 0; i < 1000; i++) console.log('line ' + i);
       console.error('done'); 7`,
      { onStdout: (text) => seen.push({ at: performance.now(), fd: 'out', text }), onStderr: (text) => seen.push({ at: performance.now(), fd: 'err', text }) },
    ),
  );
  const end = performance.now();
  assert.equal(r.result, 7);
  assert.equal(seen.filter((c) => c.fd === 'out').map((c) => c.text).join(''), r.stdout);
  assert.equal(seen.filter((c) => c.fd === 'err').map((c) => c.text).join(''), r.stderr);
  assert.equal(r.stderr, 'oops\ndone\n');
  assert.ok(seen[0]!.text.startsWith('first') && seen[0]!.fd === 'out', JSON.stringify(seen[0]));
  // The first line was delivered while the snippet still had a second of work ahead.
  assert.ok(end - seen[0]!.at >= 500, `first chunk ${seen[0]!.at - t0} ms, result ${end - t0} ms`);
  assert.ok(seen.every((c) => c.at <= end));
  // The stderr line written between two stdout lines comes between them.
  const order = seen.map((c) => c.fd + ':' + c.text).join('|');
  assert.ok(order.indexOf('err:oops') > order.indexOf('out:first') && order.indexOf('err:oops') < order.indexOf('line 0'), order.slice(0, 200));
});

test('streamed output stops at the output limit, like the result; a throwing callback never reaches the snippet', async () => {
  const small = new JsLane({ poolSize: 1, cacheDir: false, outputLimitBytes: 100 });
  try {
    const chunks: string[] = [];
    const r = await small.exec(req("for (let i = 0; i < 1000; i++) console.log('é'.repeat(7)); 'end'", { onStdout: (c) => void chunks.push(c) }));
    assert.equal(r.result, 'end');
    assert.equal(chunks.join(''), r.stdout);
    assert.ok(Buffer.byteLength(chunks.join('')) <= 100);
    let calls = 0;
    const t = await small.exec(req("console.log('a'); console.log('b'); 'still ran'", { onStdout: () => { calls++; throw new Error('consumer bug'); } }));
    assert.equal(t.result, 'still ran');
    assert.equal(t.stdout, 'a\nb\n');
    assert.equal(calls, 1);
  } finally {
    await small.close();
  }
});

test('engine.exec streams too', async () => {
  const chunks: string[] = [];
  const r = await engine.exec({ language: 'ts', code: "const n: number = 2; console.log('n =', n); n", onStdout: (c) => void chunks.push(c) });
  assert.equal(r.result, 2);
  assert.equal(chunks.join(''), 'n = 2\n');
});

test('top-level await in JS and TS; the last expression is still the result', async () => {
  assert.equal((await lane.exec(req('const a = await Promise.resolve(2); a * 21'))).result, 42);
  assert.equal((await lane.exec(req('const a: number = await Promise.resolve(2); a * 21', { language: 'ts' }))).result, 42);
  assert.equal((await lane.exec(req('await null; if (true) { "block" }'))).result, 'block');
  assert.equal((await lane.exec(req('async function f() { return 5 } await f()'))).result, 5);
  // A promise as the last expression is settled, as before.
  assert.equal((await lane.exec(req('await 0; Promise.resolve(9)'))).result, 9);
  // Sloppy scripts that use `await` as a name, and snippets without await, are unchanged.
  assert.equal((await lane.exec(req('var await = 3; await'))).result, 3);
  assert.equal((await lane.exec(req('var x = 1; function g() { return x + 1 } g()'))).result, 2);
  const never = await lane.exec(req('await new Promise(() => {})'));
  assert.equal(never.error?.code, 'GUEST_TRAP');
  const url = JSON.stringify(`http://127.0.0.1:${ok.port}/`);
  const f = await engine.exec({ language: 'js', profile: 'network', code: `const r = await fetch(${url}); [r.status, await r.text()]` });
  assert.deepEqual(f.result, [200, 'hello'], JSON.stringify(f));
});

test('an uncaught exception is GUEST_EXCEPTION with its name, message and the snippet line', async () => {
  const r = await lane.exec(req("const a = 1;\nfunction check(x) {\n  if (x) throw new TypeError('bad');\n}\ncheck(a);"));
  assert.equal(r.error?.code, 'GUEST_EXCEPTION');
  assert.equal(r.error?.message, 'TypeError: bad');
  const d = r.error!.details as { name: string; message: string; stack: { file: string; line: number; column: number; function: string }[] };
  assert.equal(d.name, 'TypeError');
  assert.equal(d.message, 'bad');
  assert.deepEqual(d.stack.map((f) => [f.file, f.line, f.function]), [['<snippet>', 3, 'check'], ['<snippet>', 5, '<top-level>']]);
  // TypeScript: the line is the TypeScript source's (the stripper keeps lines).
  const ts = await lane.exec(req("interface P {\n  a: number;\n}\nconst p: P = { a: 1 };\nif (p.a) throw new RangeError('ts line 5');", { language: 'ts' }));
  assert.equal(ts.error?.code, 'GUEST_EXCEPTION');
  assert.equal((ts.error!.details as { stack: { line: number }[] }).stack[0]!.line, 5);
  // A rejected top-level await.
  const rej = await lane.exec(req("await Promise.resolve();\nawait Promise.reject(new SyntaxError('later'))"));
  assert.deepEqual([rej.error?.code, rej.error?.details?.['name'], rej.error?.details?.['message']], ['GUEST_EXCEPTION', 'SyntaxError', 'later']);
  // Through engine.exec the details arrive unchanged.
  const e = await engine.exec({ language: 'js', code: '\n\nnull.x' });
  assert.equal(e.error?.code, 'GUEST_EXCEPTION');
  assert.deepEqual((e.error!.details as { stack: unknown[] }).stack[0], { file: '<snippet>', line: 3, column: 5, function: '<top-level>' });
});

test('non-Error throws get their type as the name and a bounded message', async () => {
  const cases: [string, string, string][] = [
    ["throw 'x'", 'string', 'x'],
    ['throw {a:1}', 'object', '{"a":1}'],
    ['throw null', 'null', 'null'],
    ['throw undefined', 'undefined', 'undefined'],
    ['Promise.reject(5)', 'number', '5'],
    ['await Promise.reject(5n)', 'bigint', '5'],
    ["throw Symbol('s')", 'symbol', 'Symbol(s)'],
    ["throw 'y'.repeat(100000)", 'string', 'y'.repeat(4096)],
  ];
  for (const [code, name, message] of cases) {
    const r = await lane.exec(req(code));
    assert.equal(r.error?.code, 'GUEST_EXCEPTION', code);
    assert.deepEqual([r.error?.details?.['name'], r.error?.details?.['message']], [name, message], code);
  }
});

test('walls keep their codes: stack overflow, memory, fuel, timeout', async () => {
  assert.equal((await lane.exec(req('function f() { f() } f()'))).error?.code, 'STACK_OVERFLOW');
  assert.equal((await lane.exec(req('while (true) {}', { fuel: 1e7 }))).error?.code, 'FUEL_EXHAUSTED');
  assert.equal((await lane.exec(req('await 0; while (true) {}', { timeoutMs: 200 }))).error?.code, 'TIMEOUT');
  const m = await lane.exec(req('const a = []; for (;;) a.push(new Uint8Array(1 << 20))', { memoryBytes: 32 * 1024 * 1024 }));
  assert.equal(m.error?.code, 'MEMORY_LIMIT', JSON.stringify(m.error));
});
