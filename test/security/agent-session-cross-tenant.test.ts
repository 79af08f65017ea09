// Attack: reach another tenant's agent session — read its status, take its review items, resume
// it, or start a session of one's own over its VFS (same id). Each is NOT_FOUND or NOT_CAPABLE;
// the owner's session is untouched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';

const { engine } = await agentFixture({ 'work': [{ calls: [{ name: 'vfs_write', args: { path: 'secret.txt', content: 'alice only' } }] }, { calls: [{ name: 'done', args: { result: 'ok' } }] }] });

test('another tenant\'s session is NOT_FOUND, and its VFS cannot be taken over', async () => {
  const r = await engine.agent.run({ system: 's', task: 'work', tenant: 'alice', id: 'shared-id' });
  assert.equal(r.outcome, 'done');
  engine.agent.putReview('shared-id', 'for alice', { tenant: 'alice' });
  assert.throws(() => engine.agent.status('shared-id', { tenant: 'mallory' }), { code: 'NOT_FOUND' });
  assert.throws(() => engine.agent.takeReview('shared-id', { tenant: 'mallory' }), { code: 'NOT_FOUND' });
  assert.throws(() => engine.agent.resume('shared-id', { tenant: 'mallory' }), { code: 'NOT_FOUND' });
  await assert.rejects(engine.agent.stop('shared-id', { tenant: 'mallory' }), { code: 'NOT_FOUND' });
  await assert.rejects(engine.agent.run({ system: 's', task: 'work', tenant: 'mallory', id: 'shared-id' }), { code: 'NOT_CAPABLE' });
  await assert.rejects(engine.agent.run({ system: 's', task: 'work', tenant: 'mallory', vfs: r.vfs }), { code: 'NOT_CAPABLE' });
  assert.equal(engine.agent.status('shared-id', { tenant: 'alice' }).outcome, 'done');
  assert.equal(engine.agent.takeReview('shared-id', { tenant: 'alice' })?.item, 'for alice');
});
