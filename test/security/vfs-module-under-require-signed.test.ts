// Attack: an engine runs only signed modules (`requireSigned`), and a signed guest — or a JS
// snippet, which is source and not gated — drops an unsigned .wasm into its VFS and runs it by
// path (`./evil.wasm`) through run_command, exec, process_spawn or `commands.run`. A module read
// from the VFS has no signed manifest: every one of those paths must refuse it (DENIED, one
// `artifact.refused` record each, nothing prepared or run), while the operator's registered
// commands still run.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { O_CREAT, Vfs, resolveVfs } from '../../src/storage/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-vfs-signed-');
delete process.env[SIGNING_KEY_ENV];
const fixture = (n: string) => new Uint8Array(readFileSync(new URL(`../fixtures/c/${n}.wasm`, import.meta.url)));
const nest = fixture('nest');
const alice = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 9));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();
const VFS = 'signed-only-vfs';

let signedNest: unknown;
before(() => {
  const dir = tempDir('membrane-vfs-signed-art-');
  writeFileSync(join(dir, 'nest.wasm'), nest);
  signedNest = signArtifact(join(dir, 'nest.wasm'), alice).signed;
  const vfs = Vfs.open({ file: resolveVfs({ name: VFS }).file });
  try {
    vfs.write(vfs.open('workspace', '/evil.wasm', O_CREAT).ino, 0, fixture('hello'));
  } finally {
    vfs.close();
  }
});

const registry = CommandRegistry.withBuiltins();
const engine = testEngine({ requireSigned: [alice.did], commands: registry, poolSize: 1 });
const refusals = (tenant: string) => {
  const log = AuditLog.open();
  try {
    return log.tail({ tenant, kind: 'artifact.refused', limit: 50 }).map((r) => String(r.detail['reason']));
  } finally {
    log.close();
  }
};

test('a signed core guest cannot run an unsigned VFS module by path: run_command, exec and process_spawn are DENIED and audited', async () => {
  const run = (...argv: string[]) => engine.run(nest, { profile: 'minimal', vfs: VFS, argv, artifact: signedNest, tenant: 'dropper' });
  assert.equal((await run('run', './evil.wasm')).stdout, `error ${GUEST_ERR.DENIED}\n`);
  assert.equal((await run('exec', '/evil.wasm')).stdout, `error ${GUEST_ERR.DENIED}\n`);
  assert.equal((await run('spawn', '1', './evil.wasm')).stdout, `spawned 0 refused 1 code ${GUEST_ERR.DENIED}\nwaited ok 0\n`);
  const reasons = refusals('dropper');
  assert.equal(reasons.length, 3, JSON.stringify(reasons));
  for (const r of reasons) assert.match(r, /no signed manifest/);
  // The operator's registered commands are not gated: `echo` runs for the same guest.
  const echo = await run('run', 'echo', 'still', 'here');
  assert.equal(echo.stdout, 'still here\nstatus=0 error=\n');
});

test('a JS snippet cannot run an unsigned VFS module by path through commands.run or exec.run', async () => {
  const r = await engine.exec({
    language: 'js',
    profile: 'minimal',
    vfs: VFS,
    tenant: 'snippet',
    code: "const codes = []; for (const f of [() => commands.run('./evil.wasm'), () => exec.run('/evil.wasm')]) { try { f(); codes.push('ran'); } catch (e) { codes.push(e.code); } } codes",
  });
  assert.deepEqual(r.result, ['DENIED', 'DENIED'], JSON.stringify(r));
  assert.equal(refusals('snippet').length, 2);
});
