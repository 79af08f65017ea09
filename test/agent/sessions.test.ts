// Agent sessions: start → id, status, subscribe (a replay, then live events), stop, the review
// queue persisted in the session's VFS, tenant scoping (another tenant's session is NOT_FOUND),
// and resume from the VFS after the engine is killed (SIGKILL of a child process) or closed
// mid-session.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { createEngine, type AgentEvent } from '../../src/index.ts';
import { AgentStore, STEPS_FILE } from '../../src/agent/store.ts';
import { AGENT_KEY, agentFixture, auditRecords } from '../helpers/agent.ts';
import { lastToolOutput } from '../helpers/scripted-llm.ts';
import { TEST_CACHE } from '../helpers/engine.ts';

let hang = true;
const { home, engine, llm } = await agentFixture({
  'resume me': [
    { calls: [{ name: 'vfs_write', args: { path: 'a.txt', content: 'state before the crash\n' } }] },
    () => (hang ? { delayMs: 120_000, content: 'too late' } : { calls: [{ name: 'shell', args: { script: 'cat a.txt' } }] }),
    (req) => ({ calls: [{ name: 'done', args: { result: lastToolOutput(req) } }] }),
  ],
  'slow steps': [{ delayMs: 150, calls: [{ name: 'vfs_list', args: {} }] }],
  'two steps': [{ calls: [{ name: 'vfs_list', args: {} }] }, { calls: [{ name: 'done', args: { result: 'ok' } }] }],
});

function stepsIn(vfs: string): string[] {
  const store = AgentStore.open(vfs);
  try {
    const b = store.read(STEPS_FILE);
    return b ? Buffer.from(b).toString('utf8').trim().split('\n').map((l) => (JSON.parse(l) as { tool: string }).tool) : [];
  } finally {
    store.close();
  }
}

test('start, subscribe, status, then stop a session; it can be resumed', async () => {
  const id = engine.agent.start({ system: 's', task: 'slow steps', maxSteps: 50, tenant: 'alice' });
  const seen: AgentEvent[] = [];
  const gotTwo = new Promise<void>((resolve) => {
    engine.agent.subscribe(id, (e) => {
      seen.push(e);
      if (seen.filter((x) => x.kind === 'step').length === 2) resolve();
    }, { tenant: 'alice' });
  });
  await gotTwo;
  const running = engine.agent.status(id, { tenant: 'alice' });
  assert.equal(running.status, 'running');
  assert.equal(running.live, true);
  assert.throws(() => engine.agent.status(id, { tenant: 'mallory' }), { code: 'NOT_FOUND' });
  assert.throws(() => engine.agent.status(id), { code: 'NOT_FOUND' });
  const stopped = await engine.agent.stop(id, { tenant: 'alice' });
  assert.equal(stopped.status, 'ended');
  assert.equal(stopped.outcome, 'stopped');
  assert.equal(seen.at(-1)?.kind, 'end');
  const more = await engine.agent.resume(id, { tenant: 'alice', maxSteps: stopped.turns + 1 });
  assert.equal(more.outcome, 'max_steps');
  assert.equal(more.steps, stopped.turns + 1);
});

test('the review queue is per session, persisted in its VFS, first in first out', async () => {
  const r = await engine.agent.run({ system: 's', task: 'two steps', tenant: 'bob' });
  assert.equal(engine.agent.putReview(r.id, { ask: 'approve the deploy?' }, { tenant: 'bob' }), 1);
  assert.equal(engine.agent.putReview(r.id, 'second', { tenant: 'bob' }), 2);
  assert.throws(() => engine.agent.takeReview(r.id, { tenant: 'eve' }), { code: 'NOT_FOUND' });
  // A fresh engine on the same storage sees the same queue.
  const other = createEngine({ poolSize: 1, cacheDir: TEST_CACHE });
  try {
    assert.deepEqual(other.agent.takeReview(r.id, { tenant: 'bob' })?.item, { ask: 'approve the deploy?' });
  } finally {
    await other.close();
  }
  assert.equal(engine.agent.takeReview(r.id, { tenant: 'bob' })?.item, 'second');
  assert.equal(engine.agent.takeReview(r.id, { tenant: 'bob' }), null);
});

test('kill the engine mid-session (SIGKILL); a new engine resumes from the VFS state', async () => {
  const id = 'killed-session';
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('../helpers/agent-child.ts', import.meta.url).pathname, id, 'resume me'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, MEMBRANE_HOME: home, MEMBRANE_LLM_URL: llm.url, MEMBRANE_LLM_KEY: AGENT_KEY },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  // The child has written a.txt (step 1) and is waiting on the model's second turn: kill it there.
  const deadline = Date.now() + 60_000;
  while (!(out.includes('"kind":"step"') && llm.requests.filter((q) => q.body.messages[1]?.content === 'resume me').length >= 2)) {
    assert.ok(Date.now() < deadline, `the child never reached its second turn: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.deepEqual(stepsIn(`agent-${id}`), ['vfs_write']);
  hang = false;
  const status = engine.agent.status(id);
  assert.equal(status.status, 'running');
  assert.equal(status.live, false);
  const r = await engine.agent.resume(id);
  assert.equal(r.outcome, 'done');
  assert.match(r.result ?? '', /state before the crash/);
  assert.deepEqual(stepsIn(`agent-${id}`), ['vfs_write', 'shell', 'done']);
  assert.equal(auditRecords(home, 'agent-step', id).length, 3);
});

test('closing the engine mid-session ends it stopped; a new engine resumes it', async () => {
  hang = true;
  const first = createEngine({ poolSize: 1, cacheDir: TEST_CACHE, brokers: { llm: { baseUrl: llm.url, apiKey: AGENT_KEY, model: 'm' } } });
  const id = first.agent.start({ system: 's', task: 'resume me', id: 'closed-session' });
  const deadline = Date.now() + 30_000;
  while (stepsIn(`agent-${id}`).length < 1) {
    assert.ok(Date.now() < deadline);
    await new Promise((r) => setTimeout(r, 50));
  }
  await first.close();
  assert.equal(engine.agent.status(id).outcome, 'stopped');
  hang = false;
  const r = await engine.agent.resume(id);
  assert.equal(r.outcome, 'done');
  assert.deepEqual(stepsIn(`agent-${id}`), ['vfs_write', 'shell', 'done']);
});
