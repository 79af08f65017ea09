// Attack: tool calls whose arguments are not JSON, not an object, of the wrong types, or that
// name the agent loop's own files — each is a tool error the model sees; nothing crashes and the
// loop goes on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';

const { engine } = await agentFixture({
  'malformed': [
    { calls: [{ name: 'vfs_write', args: '{"path": "a.txt", "content": ' }, { name: 'vfs_read', args: '[1,2]' }, { name: 'vfs_write', args: { path: 7, content: 'x' } }, { name: 'vfs_write', args: { path: '/_steps.jsonl', content: 'forged\n' } }, { name: 'exec', args: { language: 'cobol', code: 'x' } }] },
    { calls: [{ name: 'done', args: { result: 'survived' } }] },
  ],
});

test('bad tool arguments are tool errors and the loop continues', async () => {
  const r = await engine.agent.run({ system: 's', task: 'malformed' });
  const steps = r.events.filter((e) => e.kind === 'step');
  assert.deepEqual(steps.slice(0, 5).map((s) => s.kind === 'step' && [s.outcome, s.code]), [
    ['error', 'BAD_REQUEST'],
    ['error', 'BAD_REQUEST'],
    ['error', 'BAD_REQUEST'],
    ['error', 'NOT_CAPABLE'],
    ['error', 'BAD_REQUEST'],
  ]);
  assert.equal(r.outcome, 'done');
  assert.equal(r.result, 'survived');
});
