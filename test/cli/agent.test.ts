// `membrane agent run --def agent.md --task ...` against a scripted model on 127.0.0.1: the
// endpoint and key from MEMBRANE_LLM_URL/MEMBRANE_LLM_KEY, the steps printed as they happen, the
// definition's prompt (under '## System prompt', with the shell toolkit's index) sent as the
// system message; --json; a definition without a prompt is refused before any model call.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { scriptedLlm } from '../helpers/scripted-llm.ts';
import { tempDir } from '../helpers/tmp.ts';

const KEY = 'sk-cli-agent-0f9e8d7c6b5a-never-printed';
const HOME = tempDir('membrane-cli-agent-');
const llm = await scriptedLlm({
  'count words': [
    { content: 'Writing the file first.', calls: [{ name: 'vfs_write', args: { path: 'notes.txt', content: 'one two three four\n' } }] },
    { calls: [{ name: 'shell', args: { script: 'wc -w < notes.txt' } }] },
    { calls: [{ name: 'done', args: { result: 'four words' } }] },
  ],
});
after(() => llm.close());
const env = { MEMBRANE_HOME: HOME, MEMBRANE_LLM_URL: llm.url, MEMBRANE_LLM_KEY: KEY, MEMBRANE_LLM_MODEL: 'scripted' };
const DEF = join(HOME, 'counter.md');
writeFileSync(DEF, `---
id: counter
model: scripted
tagline: counts things
toolkits: [shell]
profile: minimal
---
# Counter

Some notes for humans that are not the prompt.

## System prompt

You count words. Use the shell.

## Examples

ignored
`);

test('agent run --def prints each step and the result, exit 0', async () => {
  const r = await runCli(['agent', 'run', '--def', DEF, '--task', 'count words in a note', '--profile', 'network', '--vfs', 'cli-agent'], env);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.ok(lines.some((l) => /^step +1\.0 vfs_write ok/.test(l)), r.stdout);
  assert.ok(lines.some((l) => /^step +2\.0 shell ok .*4/.test(l)), r.stdout);
  assert.ok(lines.some((l) => /^step +3\.0 done ok/.test(l)), r.stdout);
  assert.match(r.stdout, /^outcome done after 3 turns/m);
  assert.match(r.stdout, /^result +four words$/m);
  const first = llm.requests.find((q) => q.body.messages[1]?.content === 'count words in a note')!;
  assert.equal(first.auth, `Bearer ${KEY}`);
  const system = first.body.messages[0]!.content!;
  assert.match(system, /^Toolkits:\n- shell: .*\bwc\b.*describe NAME/);
  assert.ok(first.body.tools!.some((t) => t.function.name === 'describe'));
  assert.match(system, /You count words\. Use the shell\.$/);
  assert.doesNotMatch(system, /notes for humans|ignored/);
  assert.ok(!r.stdout.includes(KEY) && !r.stderr.includes(KEY));
});

test('agent run --json prints the result object', async () => {
  const sys = join(HOME, 'system.txt');
  writeFileSync(sys, 'You count words.');
  const r = await runCli(['agent', 'run', '--system', sys, '--task', 'count words again', '--json', '--max-steps', '5'], env);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { outcome: string; result: string; steps: number; usage: { totalTokens: number } };
  assert.equal(out.outcome, 'done');
  assert.equal(out.result, 'four words');
  assert.equal(out.steps, 3);
  assert.equal(out.usage.totalTokens, 360);
});

test('agent run without a prompt, or with a definition that has none, runs nothing', async () => {
  const before = llm.requests.length;
  const bare = await runCli(['agent', 'run', '--task', 'count words'], env);
  assert.equal(bare.code, 2, bare.stderr);
  assert.match(bare.stderr, /system prompt/);
  const empty = join(HOME, 'empty.md');
  writeFileSync(empty, '---\nid: empty\n---\n\n');
  const r = await runCli(['agent', 'run', '--def', empty, '--task', 'count words'], env);
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, /no system prompt/);
  assert.equal(llm.requests.length, before);
});

test('max steps exits 1; agent resume ID continues the session from its VFS', async () => {
  const sys = join(HOME, 'system.txt');
  writeFileSync(sys, 'You count words.');
  const first = await runCli(['agent', 'run', '--system', sys, '--task', 'count words once more', '--max-steps', '1', '--json'], env);
  assert.equal(first.code, 1, first.stderr);
  const r1 = JSON.parse(first.stdout) as { id: string; outcome: string };
  assert.equal(r1.outcome, 'max_steps');
  const again = await runCli(['agent', 'resume', r1.id, '--max-steps', '5'], env);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /^step +2\.0 shell ok/m);
  assert.match(again.stdout, /^outcome done after 3 turns/m);
  const missing = await runCli(['agent', 'resume', 'a-ffffffffffffffff'], env);
  assert.equal(missing.code, 81, missing.stderr);
});

test('agent run --config takes the endpoint from the config file\'s llm section', async () => {
  const cfg = join(HOME, 'membrane.json');
  writeFileSync(cfg, JSON.stringify({ llm: { baseUrl: llm.url, model: 'from-config' } }));
  const sys = join(HOME, 'system.txt');
  writeFileSync(sys, 'You count words.');
  const r = await runCli(['agent', 'run', '--config', cfg, '--system', sys, '--task', 'count words by config', '--json'], { MEMBRANE_HOME: HOME, MEMBRANE_LLM_KEY: KEY });
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { outcome: string }).outcome, 'done');
  const q = llm.requests.find((x) => x.body.messages[1]?.content === 'count words by config')!;
  assert.equal(q.body.model, 'from-config');
  assert.equal(q.auth, `Bearer ${KEY}`);
});
