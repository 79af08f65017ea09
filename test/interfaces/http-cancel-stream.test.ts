// The HTTP API's cancellation and streaming: a client that goes away cancels the call it was
// waiting for (the server logs 499 and counts CANCELLED well before the deadline), and
// `?stream=` answers with the output as it is written, then the result, as NDJSON or SSE.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { call, testServer } from '../helpers/http.ts';
import { watText } from '../helpers/wat.ts';

const CANCEL_AT_MS = 400;
const DEADLINE_MS = 5_000;
const PRINT_THEN_WORK = "console.log('first line'); console.error('to stderr'); const t = Date.now(); while (Date.now() - t < 800) {} 6 * 7";

async function metric(url: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((kv) => l.includes(kv)));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function until(what: string, probe: () => Promise<boolean>, limitMs: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await probe()) return performance.now() - t0;
    if (performance.now() - t0 > limitMs) assert.fail(`${what} did not happen within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** POST and read the streamed answer event by event, with each event's arrival time. */
async function streamed(url: string, path: string, token: string, body: unknown, accept?: string): Promise<{ status: number; type: string; events: { at: number; event: Record<string, unknown> }[]; raw: string }> {
  const t0 = performance.now();
  const r = await fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(accept ? { accept } : {}) }, body: JSON.stringify(body) });
  const type = r.headers.get('content-type') ?? '';
  const events: { at: number; event: Record<string, unknown> }[] = [];
  let raw = '';
  let buf = '';
  const decoder = new TextDecoder();
  for await (const part of r.body as unknown as AsyncIterable<Uint8Array>) {
    const text = decoder.decode(part, { stream: true });
    raw += text;
    buf += text;
    const sep = type.startsWith('text/event-stream') ? '\n\n' : '\n';
    let i;
    while ((i = buf.indexOf(sep)) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + sep.length);
      if (!frame.trim()) continue;
      if (type.startsWith('text/event-stream')) {
        const name = /^event: (.+)$/m.exec(frame)?.[1] ?? '';
        const data = /^data: (.+)$/m.exec(frame)?.[1] ?? '{}';
        events.push({ at: performance.now() - t0, event: { type: name, ...(JSON.parse(data) as Record<string, unknown>) } });
      } else events.push({ at: performance.now() - t0, event: JSON.parse(frame) as Record<string, unknown> });
    }
  }
  return { status: r.status, type, events, raw };
}

test('a client that goes away cancels its snippet: CANCELLED and 499, long before the deadline', async () => {
  const s = await testServer();
  const token = s.token('gone-tenant');
  const ac = new AbortController();
  const t0 = performance.now();
  const pending = fetch(`${s.url}/v1/exec`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ language: 'js', code: 'while (true) {}', timeout_ms: DEADLINE_MS }), signal: ac.signal });
  setTimeout(() => ac.abort(), CANCEL_AT_MS);
  await assert.rejects(pending);
  await until('the exec counted CANCELLED', async () => (await metric(s.url, 'membrane_calls_total', 'kind="exec",outcome="CANCELLED"')) === 1, DEADLINE_MS + LOAD_SLACK_MS);
  const ended = performance.now() - t0;
  assert.ok(ended < CANCEL_AT_MS + LOAD_SLACK_MS && ended < DEADLINE_MS, `the cancelled snippet was counted after ${ended.toFixed(0)} ms`);
  await until('a 499 request log line', async () => s.logs.some((l) => l.includes('"status":499') && l.includes('/v1/exec')), LOAD_SLACK_MS);
  // The server still answers, at once.
  const again = await call(s.url, '/v1/exec', token, 'POST', { language: 'js', code: '1+1' });
  assert.equal(again.body.result, 2);
});

test('a client that goes away cancels its module run too', async () => {
  const s = await testServer();
  const token = s.token('gone-run-tenant');
  const spin = Buffer.from(await watText('(module (func (export "spin") (loop (br 0))))')).toString('base64');
  const ac = new AbortController();
  const t0 = performance.now();
  const pending = fetch(`${s.url}/v1/runs`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ module: spin, invoke: 'spin', timeout_ms: DEADLINE_MS }), signal: ac.signal });
  setTimeout(() => ac.abort(), CANCEL_AT_MS);
  await assert.rejects(pending);
  await until('the run counted CANCELLED', async () => (await metric(s.url, 'membrane_calls_total', 'kind="run",outcome="CANCELLED"')) === 1, DEADLINE_MS + LOAD_SLACK_MS);
  const ended = performance.now() - t0;
  assert.ok(ended < CANCEL_AT_MS + LOAD_SLACK_MS && ended < DEADLINE_MS, `the cancelled run was counted after ${ended.toFixed(0)} ms`);
});

test('POST /v1/exec?stream=1: stdout and stderr events arrive before the result, which carries everything', async () => {
  const s = await testServer();
  const token = s.token('stream-tenant');
  const r = await streamed(s.url, '/v1/exec?stream=1', token, { language: 'js', code: PRINT_THEN_WORK });
  assert.equal(r.status, 200);
  assert.match(r.type, /^application\/x-ndjson/);
  const kinds = r.events.map((e) => e.event['type']);
  assert.equal(kinds.at(-1), 'result', r.raw);
  assert.equal(kinds.filter((k) => k === 'result').length, 1);
  const out = r.events.filter((e) => e.event['type'] === 'stdout');
  const err = r.events.filter((e) => e.event['type'] === 'stderr');
  assert.equal(out.map((e) => e.event['data']).join(''), 'first line\n');
  assert.equal(err.map((e) => e.event['data']).join(''), 'to stderr\n');
  const result = r.events.at(-1)!;
  assert.equal(result.event['ok'], true);
  assert.equal(result.event['result'], 42);
  assert.equal(result.event['stdout'], 'first line\n');
  // The snippet works 800 ms after printing: its line was read well before the result.
  assert.ok(out[0]!.at < result.at - 300, `stdout at ${out[0]!.at.toFixed(0)} ms, result at ${result.at.toFixed(0)} ms`);
});

test('?stream=1 with Accept: text/event-stream (or ?stream=sse) answers server-sent events', async () => {
  const s = await testServer();
  const token = s.token('sse-tenant');
  for (const [path, accept] of [['/v1/exec?stream=1', 'text/event-stream'], ['/v1/exec?stream=sse', undefined]] as const) {
    const r = await streamed(s.url, path, token, { language: 'js', code: "console.log('hi'); 1" }, accept);
    assert.match(r.type, /^text\/event-stream/);
    assert.match(r.raw, /^event: stdout\ndata: \{"data":"hi\\n"\}\n\n/m);
    assert.equal(r.events.at(-1)!.event['type'], 'result');
    assert.equal(r.events.at(-1)!.event['result'], 1);
  }
});

test('a streamed module run: its WASI stdout as events, then the run result', async () => {
  const s = await testServer();
  const token = s.token('stream-run-tenant');
  const r = await streamed(s.url, '/v1/runs?stream=ndjson', token, { command: 'echo', argv: ['streamed', 'hello'] });
  assert.equal(r.status, 200, r.raw);
  const out = r.events.filter((e) => e.event['type'] === 'stdout').map((e) => e.event['data']).join('');
  assert.equal(out, 'streamed hello\n');
  assert.equal(r.events.at(-1)!.event['type'], 'result');
  assert.equal(r.events.at(-1)!.event['stdout'], 'streamed hello\n');
});

test('a refusal before anything ran is still an ordinary JSON error with its status; a bad stream value is 400', async () => {
  const s = await testServer();
  const token = s.token('stream-refused', 'compute');
  const refused = await call(s.url, '/v1/exec?stream=1', token, 'POST', { language: 'js', code: '1', capability_subset: ['net'] });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'NOT_CAPABLE');
  const bad = await call(s.url, '/v1/exec?stream=yes-please', token, 'POST', { language: 'js', code: '1' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'BAD_REQUEST');
});
