// Agent definitions: front matter (id, model, toolkits, tagline, profile; `[a, b]` or `- a` lists),
// the prompt under '## System prompt' up to the next heading, else the whole body; never empty;
// unknown keys and toolkits are errors naming them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDefinition } from '../../src/agent/index.ts';

test('front matter and the System prompt section', () => {
  const d = parseDefinition('---\nid: writer\nmodel: "gpt-x"\ntoolkits:\n  - shell\ntagline: writes\nprofile: network\n---\n# Writer\nintro\n## System prompt\nBe brief.\nVery brief.\n## Notes\nnot prompt\n');
  assert.deepEqual(d, { id: 'writer', model: 'gpt-x', toolkits: ['shell'], tagline: 'writes', profile: 'network', system: 'Be brief.\nVery brief.' });
});

test('without the heading the body is the prompt; without front matter too', () => {
  assert.equal(parseDefinition('---\nid: a\n---\n\nJust do it.\n').system, 'Just do it.');
  assert.equal(parseDefinition('Plain prompt.').system, 'Plain prompt.');
  assert.deepEqual(parseDefinition('Plain prompt.').toolkits, []);
});

test('never prompt-less; unknown keys and toolkits are named', () => {
  assert.throws(() => parseDefinition('---\nid: a\n---\n'), /no system prompt/);
  assert.throws(() => parseDefinition('---\nid: a\n---\n## System prompt\n\n## Other\ntext'), /no system prompt/);
  assert.throws(() => parseDefinition('---\nid: a\nkey: sk-123\n---\nx'), /unknown front-matter key "key"/);
  assert.throws(() => parseDefinition('---\ntoolkits: [shell, rootkit]\n---\nx'), /unknown toolkit "rootkit"/);
  assert.throws(() => parseDefinition('---\nid: a\nx'), /no closing ---/);
});
