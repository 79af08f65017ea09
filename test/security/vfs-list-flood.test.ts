// A guest that fills its VFS with more entries than vfs_list may return (MAX_LIST_ENTRIES, 10 000)
// and then lists them gets TOO_LARGE — the host never builds an unbounded answer; at the cap
// exactly, the listing is answered.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { MAX_LIST_ENTRIES } from '../../src/engine/worker/vfs-imports.ts';
import { testEngine } from '../helpers/engine.ts';

const vfsapi = new Uint8Array(readFileSync(new URL('../fixtures/c/vfsapi.wasm', import.meta.url)));
// The budget asked below (60 s) needs the operator's room: compute's own is 5 s, too little for 10 001 files on a loaded machine.
const engine = testEngine({ poolSize: 1, operatorLimits: { compute: { timeoutMs: 60_000 } } });

test(`listing ${MAX_LIST_ENTRIES + 1} entries through vfs_list → TOO_LARGE`, async () => {
  const r = await engine.run(vfsapi, { profile: 'compute', argv: ['flood', String(MAX_LIST_ENTRIES + 1)], timeoutMs: 60_000, fuel: 1e10 });
  assert.equal(r.ok, true, r.error?.message);
  assert.equal(r.stdout, `written ${MAX_LIST_ENTRIES + 1} list error ${GUEST_ERR.TOO_LARGE}\n`);
});

test(`listing exactly ${MAX_LIST_ENTRIES} entries (the directory and ${MAX_LIST_ENTRIES - 1} files) is answered`, async () => {
  const r = await engine.run(vfsapi, { profile: 'compute', argv: ['flood', String(MAX_LIST_ENTRIES - 1)], timeoutMs: 60_000, fuel: 1e10 });
  assert.equal(r.ok, true, r.error?.message);
  assert.match(r.stdout, new RegExp(`^written ${MAX_LIST_ENTRIES - 1} list \\d+ bytes\\n$`));
});
