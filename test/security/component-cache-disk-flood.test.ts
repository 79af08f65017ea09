// Attack: fill the disk through the component cache. Every distinct component is transpiled once
// and its glue and core modules (~380 KB for a hello world) kept under the cache directory; the
// entries were written outside `cacheMaxBytes`, so an uploader sending component after distinct
// component (the same program with one more custom section) grew the directory without bound.
// They are cache entries like rewritten modules now: the directory never passes the bound, the
// least recently used go first, and an evicted component is only transpiled again.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { treeBytes } from '../helpers/big-module.ts';
import { tempDir } from '../helpers/tmp.ts';

const BOUND = 1536 * 1024;
const hello = new Uint8Array(readFileSync(new URL('../fixtures/components/hello.component.wasm', import.meta.url)));

/** The same component with a custom section `flood-N` appended: a new hash, the same program. */
function variant(n: number): Uint8Array {
  const name = new TextEncoder().encode(`flood-${n}`);
  const body = [name.length, ...name, n & 0xff];
  return new Uint8Array([...hello, 0x00, body.length, ...body]);
}

const components = (dir: string): string[] => {
  try {
    return readdirSync(join(dir, 'components')).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
};

test('ten distinct components never take the cache directory past cacheMaxBytes; an evicted one runs again', async () => {
  const dir = tempDir('membrane-component-cache-flood-');
  const engine = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: BOUND });
  const sizes: number[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await engine.run(variant(i));
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(r.stdout, 'hello from a wasm guest\n');
    const { bytes } = await treeBytes(dir);
    sizes.push(bytes);
    assert.ok(bytes <= BOUND, `after component ${i} the cache holds ${bytes} bytes, over the ${BOUND} bound`);
  }
  const kept = components(dir).length;
  console.log(`cache bound ${BOUND} B; directory after each of 10 components: ${sizes.join(' ')}; ${kept} component entries kept`);
  assert.ok(kept >= 1 && kept < 10, `eviction kept ${kept} component entries`);
  // The first component's entry is long gone from the disk; running it again is a transpile, not an error.
  const again = await engine.run(variant(0));
  assert.equal(again.ok, true, JSON.stringify(again.error));
  assert.equal(again.stdout, 'hello from a wasm guest\n');
});
