// Attack: an engine runs only signed modules (`requireSigned`), and a call on the os_process tier —
// whose spawning caps run inside its child, an engine with no trusted DIDs of its own — drops an
// unsigned .wasm into its VFS and runs it by path: from a JS snippet (commands.run, exec.run) and
// from a core guest (the registered `nest`: run_command, exec, process_spawn). The parent's gate
// must hold in the child: every path is DENIED, with one `artifact.refused` record each in the
// parent's log marked `tier: 'os_process'`; the operator's registered commands still run. The
// same snippet on an engine without requireSigned runs the module (it is a valid command).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-os-vfs-signed-');
delete process.env[SIGNING_KEY_ENV];
const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
const alice = didKey(new KeyPair(Buffer.alloc(32, 11)).publicKey);
const NO_BWRAP = { tier: 'os_process', bwrapPath: '' } as const;

// A WASI command whose `_start` does nothing; every byte is below 0x80, so a JS string carries it exactly.
const EVIL = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x07, 0x0a, 0x01, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x00, 0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b];
const CODE = [
  `vfs.write('/evil.wasm', String.fromCharCode(${EVIL.join(',')}));`,
  'const codes = [];',
  "for (const f of [() => commands.run('./evil.wasm').status, () => exec.run('/evil.wasm').status]) { try { codes.push(f()); } catch (e) { codes.push(e.code); } }",
  "for (const a of [['run', './evil.wasm'], ['exec', '/evil.wasm'], ['spawn', '1', './evil.wasm'], ['run', 'echo', 'still', 'here']]) codes.push(commands.run('nest', a).stdout);",
  'codes',
].join('\n');

const registry = (): CommandRegistry => {
  const r = CommandRegistry.withBuiltins();
  r.register('nest', nest);
  return r;
};

const refusals = (tenant: string) => {
  const log = AuditLog.open();
  try {
    return log.tail({ tenant, kind: 'artifact.refused', limit: 50 });
  } finally {
    log.close();
  }
};

test('under requireSigned an os_process call cannot run an unsigned VFS module by path: every path DENIED, audited in the parent as tier os_process', { timeout: 120_000 }, async () => {
  const engine = testEngine({ requireSigned: [alice], commands: registry(), poolSize: 1 });
  const r = await engine.exec({ language: 'js', profile: 'minimal', tenant: 'os-dropper', code: CODE, ...NO_BWRAP });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.result, [
    'DENIED',
    'DENIED',
    `error ${GUEST_ERR.DENIED}\n`,
    `error ${GUEST_ERR.DENIED}\n`,
    `spawned 0 refused 1 code ${GUEST_ERR.DENIED}\nwaited ok 0\n`,
    'still here\nstatus=0 error=\n', // the operator's registered commands are not gated
  ]);
  const records = refusals('os-dropper');
  assert.equal(records.length, 5, JSON.stringify(records));
  for (const rec of records) {
    assert.match(String(rec.detail['reason']), /no signed manifest/);
    assert.equal(rec.detail['tier'], 'os_process');
  }
});

test('without requireSigned the same os_process call runs the VFS module (the gate, not the module, refused it)', { timeout: 120_000 }, async () => {
  const engine = testEngine({ commands: registry(), poolSize: 1 });
  const r = await engine.exec({ language: 'js', profile: 'minimal', tenant: 'os-free', code: CODE, ...NO_BWRAP });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.result, [0, 0, 'status=0 error=\n', 'status=0 error=\n', 'spawned 1 refused 0 code 0\nwaited ok 1\n', 'still here\nstatus=0 error=\n']);
  assert.equal(refusals('os-free').length, 0);
});
