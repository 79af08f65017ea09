// Docs that restate the code are checked against it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CATALOG } from '../../src/policy/catalog.ts';
import { ERROR_CODES } from '../../src/errors.ts';

const read = (p: string) => readFileSync(new URL(`../../${p}`, import.meta.url), 'utf8');

test('docs/capabilities.md lists every catalog entry with its grant and status', () => {
  const doc = read('docs/capabilities.md');
  for (const e of CATALOG) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${e.module}.${e.name}\` |`));
    assert.ok(row, `${e.module}.${e.name} is missing`);
    assert.match(row, new RegExp(`\\| ${e.grant} \\| ${e.status}`), `${e.module}.${e.name}: ${row}`);
  }
});

test('README names every error code and the two quick-start commands', () => {
  const readme = read('README.md');
  assert.ok(readme.includes('npm ci && npm run demo') && readme.includes('npm ci && npm test'));
  for (const c of ERROR_CODES) assert.ok(readme.includes(c), `README lacks ${c}`);
});
