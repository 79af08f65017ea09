// Docs that restate the code are checked against it.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CATALOG } from '../../src/policy/catalog.ts';
import { ERROR_CODES } from '../../src/errors.ts';
import { CAP_WORDS } from '../../src/policy/profiles.ts';

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

test("docs/architecture.md's map has a row for every cap word, and every file it names exists", () => {
  const doc = read('docs/architecture.md');
  const map = doc.slice(doc.indexOf('## The map'), doc.indexOf('## How it runs'));
  const rows = map.split('\n').filter((l) => l.startsWith('| `'));
  for (const cap of CAP_WORDS) assert.ok(rows.some((r) => r.split('|')[1]!.includes(`\`${cap}\``)), `no map row for ${cap}`);
  const named = [...map.matchAll(/`((?:[a-z0-9-]+\/)*[a-z0-9-]+\.(?:ts|mjs|js))`/g)].map((m) => m[1]!);
  assert.ok(named.length > 40, 'the map names its files');
  const roots = ['src/', 'src/engine/', 'src/engine/worker/', 'src/engine/bridge/', 'src/brokers/', 'src/storage/', 'src/interfaces/', 'src/interfaces/cli/', ''];
  const missing = named.filter((f) => !roots.some((r) => existsSync(new URL(`../../${r}${f}`, import.meta.url))));
  assert.deepEqual(missing, []);
});
