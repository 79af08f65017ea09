// Attack: a tool call that never returns (a spinning snippet, a fetch to a server that never
// answers) to wedge the agent loop. Each call is hard-stopped at toolTimeoutMs: the model gets a
// TIMEOUT tool error and the loop goes on to its next turn.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { agentFixture } from '../helpers/agent.ts';
import { lastToolOutput } from '../helpers/scripted-llm.ts';

const hanging = createServer(() => {
  // never answers
});
await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
after(() => {
  hanging.closeAllConnections();
  hanging.close();
});
const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/slow`;

const { engine } = await agentFixture(
  {
    'spin': [{ calls: [{ name: 'exec', args: { language: 'js', code: 'while (true) {}' } }] }, (req) => ({ calls: [{ name: 'done', args: { result: lastToolOutput(req) } }] })],
    'hang on fetch': [{ calls: [{ name: 'fetch', args: { url } }] }, (req) => ({ calls: [{ name: 'done', args: { result: lastToolOutput(req) } }] })],
  },
  { brokers: { net: { allowCidrs: ['127.0.0.1/32'], timeoutMs: 60_000 } } },
);

for (const [task, tool] of [['spin', 'exec'], ['hang on fetch', 'fetch']] as const) {
  test(`a ${tool} call that never returns ends at toolTimeoutMs with a tool error, and the loop goes on`, async () => {
    const t0 = performance.now();
    const r = await engine.agent.run({ system: 's', task, toolTimeoutMs: 1500 });
    const elapsed = performance.now() - t0;
    const step = r.events.find((e) => e.kind === 'step' && e.tool === tool);
    assert.ok(step && step.kind === 'step');
    assert.equal(step.outcome, 'error');
    assert.equal(step.code, 'TIMEOUT');
    assert.ok(step.durationMs >= 1400 && step.durationMs < 10_000, `the call took ${step.durationMs} ms`);
    // The loop continued: the model's next turn called done, quoting the error it was sent.
    assert.equal(r.outcome, 'done');
    assert.match(r.result ?? '', /TIMEOUT/);
    assert.ok(elapsed < 20_000, `the session took ${elapsed} ms`);
  });
}
