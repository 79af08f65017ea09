// Attack: a tool call that produces far more output than a model turn should carry (to blow the
// context window, or the endpoint's request cap). What goes back to the model is cut at
// maxToolOutputBytes and marked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';

const { engine, llm } = await agentFixture({
  'flood': [{ calls: [{ name: 'shell', args: { script: 'seq 1 200000' } }] }, { calls: [{ name: 'done', args: { result: 'ok' } }] }],
});

test('a tool\'s output is capped before it reaches the model', async () => {
  const r = await engine.agent.run({ system: 's', task: 'flood', maxToolOutputBytes: 4096 });
  assert.equal(r.outcome, 'done');
  const sent = llm.requests.at(-1)!.body.messages.find((m) => m.role === 'tool')!.content!;
  assert.ok(Buffer.byteLength(sent) <= 4096 + 80, `${Buffer.byteLength(sent)} bytes went to the model`);
  assert.match(sent, /\[membrane: tool output truncated at 4096 bytes\]$/);
  assert.match(sent, /^exit 0\n1\n2\n3\n/);
});
