// Attack: leave the call's VFS from Python through the calls the escape suite does not use — a
// descriptor on `/` and `..` chains relative to it (`os.open(..., dir_fd=fd)`), and a symbolic
// link written into the VFS that points at a host path. Each is refused (the interpreter's `..`
// past a preopen is not capable, and a link out of the VFS is refused when made); nothing of
// the host is read, and the call's own files stay readable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-py-dirfd-');
const engine = testEngine({ poolSize: 1, operatorLimits: { compute: { timeoutMs: 30_000 } } });

const CODE = `
import os
fd = os.open('/', os.O_RDONLY)
out = {}
for p in ['..', '../..', '../../etc/passwd', '/../../proc/self/environ', '../../../../../../etc/hostname']:
    try:
        f = os.open(p, os.O_RDONLY, dir_fd=fd)
        out[p] = 'OPENED ' + repr(os.read(f, 40))
    except OSError as e:
        out[p] = type(e).__name__
for target in ['/../../../etc/passwd', '../../etc/passwd', '/etc/passwd']:
    try:
        os.symlink(target, '/esc')
        try:
            out['link ' + target] = 'READ ' + open('/esc').read()[:20]
        except OSError as e:
            out['link ' + target] = 'made, unreadable: ' + type(e).__name__
        os.unlink('/esc')
    except OSError as e:
        out['link ' + target] = type(e).__name__
with open('/mine.txt', 'w') as f:
    f.write('still mine')
out['own'] = open('/mine.txt').read()
out
`;

test('dir_fd `..` chains and symlinks to host paths reach nothing outside the VFS', async () => {
  const r = await engine.exec({ language: 'python', code: CODE });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const out = r.result as Record<string, string>;
  for (const [k, v] of Object.entries(out)) {
    if (k === 'own') continue;
    assert.ok(!v.startsWith('OPENED') && !v.startsWith('READ'), `${k}: ${v}`);
  }
  assert.equal(out['own'], 'still mine');
  assert.doesNotMatch(JSON.stringify(r), /root:|\/bin\/|PATH=/);
});
