// The attack: code that takes over an os_process child (a V8 escape from the guest) reads host
// files, writes outside its storage dir, spawns programs or reads the parent's secrets from its
// environment. The child runs under Node's permission model with an empty environment; this
// probes those walls with a stand-in child started exactly as the real one (spawn.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from '../../src/engine/os-process/spawn.ts';
import { tempDir } from '../helpers/tmp.ts';

const PROBE = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process/probe.mjs');

test('an os_process child cannot read a host file, write outside its storage dir, spawn, or see the parent env', async () => {
  const dir = tempDir('membrane-host-secret-');
  const secret = join(dir, 'secret.txt');
  writeFileSync(secret, 'host secret');
  process.env['MEMBRANE_TEST_SECRET'] = 'canary-91b2';
  const outside = join(dir, 'written-by-child.txt');
  const reply = await runChild(
    { entry: PROBE, readDirs: [], bwrap: null, addons: false, shareNet: false, killAfterMs: 20_000, maxReplyBytes: 1 << 20 },
    JSON.stringify({ secret, outside }),
  );
  const r = JSON.parse(reply) as Record<string, unknown>;
  assert.equal(r['readSecret'], 'ERR_ACCESS_DENIED');
  assert.equal(r['writeOutside'], 'ERR_ACCESS_DENIED');
  assert.equal(existsSync(outside), false);
  assert.equal(r['writeHome'], 'allowed'); // its own storage dir is writable: the walls are not just "everything fails"
  assert.equal(r['spawn'], 'ERR_ACCESS_DENIED');
  assert.deepEqual(r['env'], ['MEMBRANE_HOME']);
});
