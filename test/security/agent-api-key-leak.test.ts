// Attack: get the `llm` broker's API key out through the agent — into its VFS, its steps log, the
// audit log, the run's result and events (and, in agent-http.test.ts, HTTP responses and the
// server's logs). The key is sent to the endpoint, and nowhere else: this test greps every file
// under MEMBRANE_HOME for it, raw bytes included (SQLite pages and WAL).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AGENT_KEY, agentFixture, homeFiles } from '../helpers/agent.ts';
import { lastToolOutput } from '../helpers/scripted-llm.ts';

const { home, engine, llm } = await agentFixture({
  'find the key': [
    { calls: [{ name: 'exec', args: { language: 'js', code: 'JSON.stringify({ g: typeof globalThis.process, keys: Object.keys(globalThis) })' } }] },
    { calls: [{ name: 'shell', args: { script: 'echo $MEMBRANE_LLM_KEY > key.txt; cat key.txt' } }] },
    { calls: [{ name: 'vfs_write', args: { path: 'found.txt', content: 'nothing' } }] },
    (req) => ({ calls: [{ name: 'done', args: { result: lastToolOutput(req) } }] }),
  ],
});

test('the API key reaches the endpoint only: not the VFS, the steps log, the audit log, the result or the events', async () => {
  process.env['MEMBRANE_LLM_KEY'] = AGENT_KEY; // even set in the host's environment
  try {
    const r = await engine.agent.run({ system: 's', task: 'find the key' });
    assert.equal(r.outcome, 'done');
    assert.ok(llm.requests.length >= 4);
    for (const q of llm.requests) assert.equal(q.auth, `Bearer ${AGENT_KEY}`);
    assert.ok(!JSON.stringify(r).includes(AGENT_KEY), 'the key is in the result or events');
    for (const q of llm.requests) assert.ok(!JSON.stringify(q.body).includes(AGENT_KEY), 'the key went to the model as conversation');
    const files = homeFiles(home);
    assert.ok(files.some((f) => f.file.endsWith(`${r.vfs}.sqlite`)), 'the agent VFS is among the files checked');
    assert.ok(files.some((f) => f.file.endsWith('engine.sqlite')), 'the audit log is among the files checked');
    for (const f of files) assert.ok(!f.bytes.includes(AGENT_KEY), `the key is in ${f.file}`);
  } finally {
    delete process.env['MEMBRANE_LLM_KEY'];
  }
});
