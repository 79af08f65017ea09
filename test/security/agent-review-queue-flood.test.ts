// Attack: fill a session's review queue (persisted in its VFS) without bound, or with huge items.
// At most MAX_REVIEWS items of at most MAX_REVIEW_BYTES each; past that RATE_LIMITED / TOO_LARGE,
// and the queue keeps what it had.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';
import { MAX_REVIEWS, MAX_REVIEW_BYTES } from '../../src/agent/index.ts';

const { engine } = await agentFixture({ 'quick': [{ content: 'done' }] });

test('the review queue is bounded in items and item size', async () => {
  const r = await engine.agent.run({ system: 's', task: 'quick', caps: ['llm'] });
  assert.throws(() => engine.agent.putReview(r.id, 'x'.repeat(MAX_REVIEW_BYTES)), { code: 'TOO_LARGE' });
  for (let i = 0; i < MAX_REVIEWS; i++) engine.agent.putReview(r.id, i);
  assert.throws(() => engine.agent.putReview(r.id, 'one more'), { code: 'RATE_LIMITED' });
  assert.equal(engine.agent.takeReview(r.id)?.item, 0);
  assert.equal(engine.agent.putReview(r.id, 'fits again'), MAX_REVIEWS);
});
