// The vfs cap's own imports from a C guest (test/fixtures/c/vfsapi.c): write/read/list/delete
// with the retry rule, and vfs_query against the guest's own database — in memory or named.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { tempDir } from '../helpers/tmp.ts';

const vfsapi = new Uint8Array(readFileSync(new URL('../fixtures/c/vfsapi.wasm', import.meta.url)));
let engine: Engine;
const home = tempDir('membrane-vfs-imports-');

before(() => {
  process.env['MEMBRANE_HOME'] = home;
  engine = createEngine({ poolSize: 1 });
});
after(() => engine.close());

test('write makes parents, read asks for the size first, list and delete work on guest paths', async () => {
  const r = await engine.run(vfsapi, { profile: 'compute', argv: ['basic'] });
  assert.equal(r.ok, true, r.error?.message);
  assert.equal(
    r.stdout,
    [
      'write 0',
      'need 20',
      'read hello from the guest',
      'list [{"path":"/notes","type":"dir","size":0},{"path":"/notes/a.txt","type":"file","size":20}]',
      'delete 0',
      `again ${GUEST_ERR.NOT_FOUND}`,
      `escape ${GUEST_ERR.NOT_FOUND}`,
      '',
    ].join('\n'),
  );
});

test('vfs_query answers from the guest\'s own in-memory VFS', async () => {
  const r = await engine.run(vfsapi, { profile: 'compute', argv: ['query', "SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'dirents'"] });
  assert.equal(r.stdout, 'query {"columns":["name"],"rows":[["dirents"]]}\n');
});

test('vfs_query sees what the guest wrote to a named VFS', async () => {
  const write = await engine.run(vfsapi, { profile: 'compute', vfs: 'q', argv: ['basic'] });
  assert.equal(write.ok, true);
  const r = await engine.run(vfsapi, { profile: 'compute', vfs: 'q', argv: ['query', "SELECT count(*) AS n FROM dirents WHERE name = 'notes'"] });
  assert.equal(r.stdout, 'query {"columns":["n"],"rows":[[1]]}\n');
});

test('vfs_query refusals reach the guest as error codes, never a host path', async () => {
  const cases: [string, number][] = [
    ["ATTACH DATABASE '/etc/passwd' AS p", GUEST_ERR.DENIED],
    ['SELECT file FROM pragma_database_list', GUEST_ERR.DENIED],
    ["SELECT load_extension('/lib/x.so')", GUEST_ERR.DENIED],
    ['DELETE FROM dirents', GUEST_ERR.DENIED],
    ['SELEC nonsense', GUEST_ERR.INVALID],
  ];
  for (const [sql, code] of cases) {
    const r = await engine.run(vfsapi, { profile: 'compute', vfs: 'q', argv: ['query', sql] });
    assert.equal(r.stdout, `query error ${code}\n`, sql);
    assert.ok(!r.stdout.includes(home) && !r.stderr.includes(home));
  }
});
