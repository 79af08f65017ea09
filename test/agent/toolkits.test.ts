// Toolkits: the shell toolkit's index (names only) goes in front of the system prompt and adds the
// `describe` tool, which answers a command's usage from the synopsis table (running nothing);
// every built-in command has a synopsis; without toolkits there is no describe tool.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';
import { CommandRegistry } from '../../src/index.ts';
import { SHELL_SYNOPSES } from '../../src/agent/index.ts';

const { engine, llm } = await agentFixture({
  'use the toolkit': [
    { calls: [{ name: 'describe', args: { name: 'wc' } }, { name: 'describe', args: { name: 'nosuch' } }] },
    { calls: [{ name: 'done', args: { result: 'ok' } }] },
  ],
});

test('every built-in command has a synopsis', () => {
  const names = CommandRegistry.withBuiltins().names();
  for (const n of ['cat', 'wc', 'grep', 'sort']) assert.ok(names.includes(n));
  for (const n of names.filter((x) => !/^(clang|clang\+\+|wasm-ld|llvm-ar)$/.test(x))) assert.ok(SHELL_SYNOPSES[n], `no synopsis for ${n}`);
});

test('the shell toolkit: an index in the prompt, describe on demand', async () => {
  const r = await engine.agent.run({ system: 'Count things.', task: 'use the toolkit', toolkits: ['shell'] });
  const first = llm.requests.find((q) => q.body.messages[1]?.content === 'use the toolkit')!.body;
  assert.match(first.messages[0]!.content!, /^Toolkits:\n- shell: .*\bcat\b.*\bwc\b.*\n\nCount things\.$/);
  assert.ok(first.tools!.some((t) => t.function.name === 'describe'));
  const steps = r.events.filter((e) => e.kind === 'step');
  assert.match(steps[0]!.kind === 'step' ? steps[0]!.preview : '', /^wc \[-lwc\]/);
  assert.equal(steps[1]!.kind === 'step' && steps[1]!.code, 'NOT_FOUND');
  const plain = await engine.agent.run({ system: 'Count things.', task: 'use the toolkit' });
  assert.equal(plain.events.find((e) => e.kind === 'step')!.kind === 'step' && (plain.events.find((e) => e.kind === 'step') as { code?: string }).code, 'NOT_CAPABLE');
  await assert.rejects(engine.agent.run({ system: 's', task: 'use the toolkit', toolkits: ['rootkit'] }), /unknown toolkit "rootkit"/);
});
