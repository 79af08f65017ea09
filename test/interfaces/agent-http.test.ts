// /v1/agents over HTTP against a scripted model on 127.0.0.1: start a session, follow its events
// (SSE) to the end, read its status, the review queue, stop and resume; tenant scoping (another
// tenant's session is a 404 like a missing one; a token whose grant lacks llm is refused); and
// the llm key appears in no response and no server log line.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { createEngine } from '../../src/index.ts';
import { call, testServer } from '../helpers/http.ts';
import { scriptedLlm } from '../helpers/scripted-llm.ts';
import { TEST_CACHE } from '../helpers/engine.ts';
import { AGENT_KEY } from '../helpers/agent.ts';
import { tempDir } from '../helpers/tmp.ts';

const llm = await scriptedLlm({
  'http session': [
    { content: 'listing', calls: [{ name: 'vfs_write', args: { path: 'x.txt', content: 'hello' } }] },
    { calls: [{ name: 'shell', args: { script: 'cat x.txt' } }] },
    { calls: [{ name: 'done', args: { result: 'said hello' } }] },
  ],
  'slow session': [{ delayMs: 200, calls: [{ name: 'vfs_list', args: {} }] }],
});
const home = tempDir('membrane-agent-http-');
process.env['MEMBRANE_HOME'] = home; // the sessions' VFS files
process.env['MEMBRANE_AUDIT_KEY'] ??= 'c'.repeat(64);
const databaseFile = join(home, 'engine.sqlite');
const engine = createEngine({ poolSize: 1, cacheDir: TEST_CACHE, brokers: { databaseFile, llm: { baseUrl: llm.url, apiKey: AGENT_KEY, model: 'scripted' } } });
const captured: string[] = [];
const { url, logs, token } = await testServer({ engine, home, databaseFile, logger: { level: 'debug', destination: { write: (l: string) => void captured.push(l) } } });
// testServer's `after` closes the server; the engine and the model server close after it.
test.after(async () => {
  await engine.close();
  await llm.close();
});
const texts: string[] = [];

async function events(path: string, tok: string): Promise<{ event: string; data: any }[]> {
  const r = await fetch(url + path, { headers: { authorization: `Bearer ${tok}` }, signal: AbortSignal.timeout(30_000) });
  const text = await r.text();
  texts.push(text);
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('event: '))
    .map((f) => ({ event: f.split('\n')[0]!.slice(7), data: JSON.parse(f.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) }));
}

const alice = token('alice', 'network');
const bob = token('bob', 'network');

test('POST /v1/agents starts a session; its events stream to the end; GET shows the outcome', async () => {
  const started = await call(url, '/v1/agents', alice, 'POST', { system: 'Be helpful.', task: 'http session please', max_steps: 6 });
  texts.push(started.text);
  assert.equal(started.status, 201, started.text);
  const id = started.body.id as string;
  assert.equal(started.body.vfs, undefined);
  assert.deepEqual(started.body.tools, ['shell', 'vfs_read', 'vfs_write', 'vfs_list', 'exec', 'fetch', 'done']);
  const evs = await events(`/v1/agents/${id}/events`, alice);
  assert.deepEqual(evs.filter((e) => e.event === 'step').map((e) => e.data.tool), ['vfs_write', 'shell', 'done']);
  assert.equal(evs.at(-1)!.event, 'end');
  assert.equal(evs.at(-1)!.data.result, 'said hello');
  const got = await call(url, `/v1/agents/${id}`, alice);
  texts.push(got.text);
  assert.equal(got.status, 200);
  assert.equal(got.body.outcome, 'done');
  assert.equal(got.body.steps, 3);
  // Another tenant: exactly a missing session.
  const theirs = await call(url, `/v1/agents/${id}`, bob);
  const missing = await call(url, '/v1/agents/a-0000000000000000', bob);
  assert.equal(theirs.status, 404);
  assert.deepEqual(theirs.body, missing.body);
  assert.equal((await call(url, `/v1/agents/${id}/reviews/take`, bob, 'POST')).status, 404);
  // The review queue.
  assert.equal((await call(url, `/v1/agents/${id}/reviews`, alice, 'POST', { item: { ask: 'ship it?' } })).body.queued, 1);
  const taken = await call(url, `/v1/agents/${id}/reviews/take`, alice, 'POST');
  assert.deepEqual(taken.body, { review: { time: taken.body.review.time, item: { ask: 'ship it?' } } });
  assert.deepEqual((await call(url, `/v1/agents/${id}/reviews/take`, alice, 'POST')).body, { review: null });
});

test('DELETE stops a running session; resume continues it', async () => {
  const started = await call(url, '/v1/agents', alice, 'POST', { system: 's', task: 'slow session', max_steps: 100 });
  const id = started.body.id as string;
  await new Promise((r) => setTimeout(r, 500));
  const stopped = await call(url, `/v1/agents/${id}`, alice, 'DELETE');
  texts.push(stopped.text);
  assert.equal(stopped.body.outcome, 'stopped');
  const resumed = await call(url, `/v1/agents/${id}/resume`, alice, 'POST', { max_steps: stopped.body.turns + 1 });
  assert.equal(resumed.status, 202, resumed.text);
  const evs = await events(`/v1/agents/${id}/events`, alice);
  const end = evs.at(-1)!;
  assert.ok(end.event === 'end' || end.event === 'status');
  assert.equal(end.event === 'end' ? end.data.outcome : end.data.outcome, 'max_steps');
});

test('a token whose grant lacks llm cannot start an agent (403 NOT_CAPABLE)', async () => {
  const r = await call(url, '/v1/agents', token('carol', 'minimal'), 'POST', { system: 's', task: 'http session' });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.error.code, 'NOT_CAPABLE');
  const sub = await call(url, '/v1/agents', alice, 'POST', { system: 's', task: 'http session', capability_subset: ['vfs'] });
  assert.equal(sub.status, 403, sub.text);
});

test('the llm key is in no HTTP response and no server log line', () => {
  assert.ok(texts.length >= 5, `${texts.length} responses`);
  for (const t of texts) assert.ok(!t.includes(AGENT_KEY), 'the key is in a response');
  const lines = [...logs, ...captured];
  assert.ok(lines.length > 0, 'the server logged nothing');
  for (const l of lines) assert.ok(!l.includes(AGENT_KEY), 'the key is in a log line');
  for (const q of llm.requests) assert.equal(q.auth, `Bearer ${AGENT_KEY}`);
});
