// Attack: the model asks for a tool its grant does not offer (shell and exec under a grant of
// vfs + llm; fetch without net). The tool is not in the request's tool list, and a call to it
// anyway runs nothing: the model gets a NOT_CAPABLE tool error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';
import { grantedTools } from '../../src/agent/index.ts';

const { engine, llm } = await agentFixture({
  'escalate': [
    { calls: [{ name: 'shell', args: { script: 'echo pwned > /owned.txt' } }, { name: 'exec', args: { language: 'js', code: 'vfs.write("owned.txt", "x")' } }, { name: 'fetch', args: { url: 'http://example.com/' } }, { name: 'not_a_tool', args: {} }] },
    { calls: [{ name: 'vfs_list', args: { path: '/' } }] },
    { calls: [{ name: 'done', args: { result: 'ok' } }] },
  ],
});

test('tools the grant does not hold are not offered, and calling them is a NOT_CAPABLE tool error', async () => {
  const r = await engine.agent.run({ system: 's', task: 'escalate', profile: 'network', caps: ['vfs', 'llm'] });
  const offered = llm.requests.at(-1)!.body.tools!.map((t) => t.function.name);
  assert.deepEqual(offered, ['vfs_read', 'vfs_write', 'vfs_list', 'done']);
  const steps = r.events.filter((e) => e.kind === 'step');
  assert.deepEqual(steps.slice(0, 4).map((s) => s.kind === 'step' && [s.tool, s.outcome, s.code]), [['shell', 'error', 'NOT_CAPABLE'], ['exec', 'error', 'NOT_CAPABLE'], ['fetch', 'error', 'NOT_CAPABLE'], ['not_a_tool', 'error', 'NOT_CAPABLE']]);
  // Nothing ran: the listing the model asked for next shows no file the refused calls would have made.
  const listing = steps[4]!.kind === 'step' ? steps[4]!.preview : '';
  assert.doesNotMatch(listing, /owned/);
  assert.equal(r.outcome, 'done');
});

test('the tools option narrows the offer and never widens the grant', () => {
  assert.deepEqual(grantedTools(['vfs', 'llm'], ['shell', 'vfs_read']), ['vfs_read', 'done']);
  assert.deepEqual(grantedTools(['vfs', 'commands', 'exec', 'net', 'llm']), ['shell', 'vfs_read', 'vfs_write', 'vfs_list', 'exec', 'fetch', 'done']);
});
