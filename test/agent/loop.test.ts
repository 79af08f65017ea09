// The agent loop against a scripted model: the must-show session (vfs_write a.py → exec → shell
// `cat out.txt | wc -l` → done) leaves 4 steps in `_steps.jsonl` and 4 `agent-step` audit
// records; a model that never says done ends at maxSteps; a model that answers without tools
// finishes with its text; usage sums the endpoint's token counts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture, auditRecords } from '../helpers/agent.ts';
import { lastToolOutput } from '../helpers/scripted-llm.ts';
import { AgentStore, STEPS_FILE } from '../../src/agent/store.ts';
import type { AgentResult, StepRecord } from '../../src/index.ts';

const A_PY = "lines = ['alpha', 'beta', 'gamma']\nwith open('out.txt', 'w') as f:\n    f.write('\\n'.join(lines) + '\\n')\nprint('wrote', len(lines))\n";

const { home, engine, llm } = await agentFixture({
  'count the lines': [
    { content: 'I will write the script.', calls: [{ name: 'vfs_write', args: { path: 'a.py', content: A_PY } }] },
    { calls: [{ name: 'exec', args: { path: 'a.py' } }] },
    { calls: [{ name: 'shell', args: { script: 'cat out.txt | wc -l' } }] },
    (req) => ({ calls: [{ name: 'done', args: { result: `out.txt has ${lastToolOutput(req).split('\n')[1]!.trim()} lines` } }] }),
  ],
  'loop forever': [{ calls: [{ name: 'vfs_list', args: { path: '/' } }] }],
  'just answer': [{ content: 'forty-two' }],
});

function steps(vfs: string): StepRecord[] {
  const store = AgentStore.open(vfs);
  try {
    const bytes = store.read(STEPS_FILE);
    return bytes ? Buffer.from(bytes).toString('utf8').trim().split('\n').map((l) => JSON.parse(l) as StepRecord) : [];
  } finally {
    store.close();
  }
}

test('the must-show session: write a.py, run it, count its output with the shell, done', async () => {
  const seen: string[] = [];
  const r: AgentResult = await engine.agent.run({ system: 'You are a careful engineer.', task: 'count the lines a script writes', profile: 'network', onStep: (e) => seen.push(e.kind) });
  assert.equal(r.outcome, 'done', JSON.stringify(r.events.filter((e) => e.kind === 'step')));
  assert.equal(r.result, 'out.txt has 3 lines');
  assert.equal(r.steps, 4);
  assert.deepEqual(r.usage, { promptTokens: 400, completionTokens: 80, totalTokens: 480 });
  const log = steps(r.vfs);
  assert.deepEqual(log.map((s) => [s.tool, s.outcome]), [['vfs_write', 'ok'], ['exec', 'ok'], ['shell', 'ok'], ['done', 'ok']]);
  for (const s of log) assert.match(s.argsSha256, /^[0-9a-f]{64}$/);
  const audited = auditRecords(home, 'agent-step', r.id);
  assert.equal(audited.length, 4);
  assert.deepEqual(audited.map((a) => a.detail['tool']).sort(), ['done', 'exec', 'shell', 'vfs_write']);
  assert.equal(auditRecords(home, 'agent-end', r.id)[0]?.detail['outcome'], 'done');
  assert.deepEqual(seen.filter((k) => k !== 'model'), ['step', 'step', 'step', 'step', 'end']);
  // The model was offered the network profile's tools and got each result back as a tool message.
  const last = llm.requests.filter((q) => q.body.messages[1]?.content?.startsWith('count the lines')).at(-1)!.body;
  assert.deepEqual(last.tools?.map((t) => t.function.name), ['shell', 'vfs_read', 'vfs_write', 'vfs_list', 'exec', 'fetch', 'done']);
  assert.equal(last.messages.filter((m) => m.role === 'tool').length, 3);
});

test('a model that never says done ends at maxSteps, reported as max_steps with no result', async () => {
  const r = await engine.agent.run({ system: 's', task: 'loop forever', maxSteps: 3, caps: ['vfs', 'llm'] });
  assert.equal(r.outcome, 'max_steps');
  assert.equal(r.result, null);
  assert.equal(r.steps, 3);
  assert.equal(steps(r.vfs).length, 3);
});

test('a turn without tool calls finishes with the model\'s text', async () => {
  const r = await engine.agent.run({ system: 's', task: 'just answer', caps: ['llm'] });
  assert.equal(r.outcome, 'finished');
  assert.equal(r.result, 'forty-two');
  assert.equal(r.steps, 1);
  assert.equal(steps(r.vfs).length, 0);
});

test('a grant without llm cannot start an agent; nor can an empty prompt', async () => {
  await assert.rejects(engine.agent.run({ system: 's', task: 'just answer', profile: 'minimal' }), { code: 'NOT_CAPABLE' });
  await assert.rejects(engine.agent.run({ system: '  ', task: 'just answer' }), { code: 'POLICY_INVALID' });
  await assert.rejects(engine.agent.run({ system: 's', task: 'just answer', maxSteps: 0 }), { code: 'POLICY_INVALID' });
});

test('an unknown tool name in the tools option is refused before anything runs', async () => {
  await assert.rejects(engine.agent.run({ system: 's', task: 'just answer', tools: ['vfs_read', 'rm_rf'] }), /unknown tool "rm_rf"/);
});
