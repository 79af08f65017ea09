// Attack: start agent sessions without end to hold the engine (each keeps a model call or a tool
// call in flight). One tenant runs at most MAX_LIVE_SESSIONS_PER_TENANT, the engine at most
// MAX_LIVE_SESSIONS; past either, OVERLOADED before anything runs, and other tenants still start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';
import { MAX_LIVE_SESSIONS, MAX_LIVE_SESSIONS_PER_TENANT } from '../../src/agent/index.ts';

const { engine } = await agentFixture({ 'hold': [{ delayMs: 60_000, content: 'late' }] });

test('sessions are bounded per tenant and per engine', async () => {
  const started: [string, string][] = [];
  const start = (tenant: string): string => {
    const id = engine.agent.start({ system: 's', task: 'hold', tenant, caps: ['llm'] });
    started.push([id, tenant]);
    return id;
  };
  try {
    for (let i = 0; i < MAX_LIVE_SESSIONS_PER_TENANT; i++) start('flood');
    assert.throws(() => start('flood'), { code: 'OVERLOADED' });
    start('bystander');
    for (let t = 0; started.length < MAX_LIVE_SESSIONS; t++) for (let i = 0; i < MAX_LIVE_SESSIONS_PER_TENANT && started.length < MAX_LIVE_SESSIONS; i++) start(`t${t}`);
    assert.throws(() => start('latecomer'), { code: 'OVERLOADED' });
  } finally {
    await Promise.all(started.map(([id, tenant]) => engine.agent.stop(id, { tenant })));
  }
  assert.equal(engine.agent.status(started[0]![0], { tenant: 'flood' }).outcome, 'stopped');
  // Room again once they ended.
  const again = start('flood');
  await engine.agent.stop(again, { tenant: 'flood' });
});
