/** Property: random mkdir/write/truncate/unlink/rename/rmdir sequences agree with an in-memory model. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { O_CREAT, Vfs } from '../../src/storage/vfs.ts';
import { VfsError } from '../../src/storage/errno.ts';

type Node = { kind: 'dir' } | { kind: 'file'; data: Buffer };
/** The model: absolute path → node. Parent of every entry exists and is a dir. */
type Model = Map<string, Node>;

const NAMES = ['a', 'b', 'c'];
const pathArb = fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }).map((p) => `/${p.join('/')}`);
const opArb = fc.oneof(
  fc.record({ op: fc.constant('mkdir' as const), path: pathArb }),
  fc.record({ op: fc.constant('write' as const), path: pathArb, offset: fc.nat(70_000), bytes: fc.uint8Array({ minLength: 1, maxLength: 300 }) }),
  fc.record({ op: fc.constant('truncate' as const), path: pathArb, size: fc.nat(70_000) }),
  fc.record({ op: fc.constant('unlink' as const), path: pathArb }),
  fc.record({ op: fc.constant('rmdir' as const), path: pathArb }),
  fc.record({ op: fc.constant('rename' as const), path: pathArb, to: pathArb }),
);
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

const parentOf = (p: string) => p.slice(0, p.lastIndexOf('/')) || '/';
const children = (m: Model, p: string) => [...m.keys()].filter((k) => k !== p && parentOf(k) === p);

/** Errno for reaching the parent of `p`: each ancestor must exist and be a directory. */
function parentErr(m: Model, p: string): string | null {
  const parts = p.split('/').filter(Boolean);
  for (let i = 1; i < parts.length; i++) {
    const n = m.get(`/${parts.slice(0, i).join('/')}`);
    if (n === undefined) return 'ENOENT';
    if (n.kind !== 'dir') return 'ENOTDIR';
  }
  return null;
}

/** Apply to the model; return the errno name or 'ok'. Only the cases the ops can reach. */
function applyModel(m: Model, o: Op): string {
  const perr = parentErr(m, o.path);
  if (perr !== null) return perr;
  const node = m.get(o.path);
  switch (o.op) {
    case 'mkdir':
      if (node) return 'EEXIST';
      m.set(o.path, { kind: 'dir' });
      return 'ok';
    case 'write': {
      if (node?.kind === 'dir') return 'EISDIR';
      const old = node?.data ?? Buffer.alloc(0);
      const data = Buffer.alloc(Math.max(old.length, o.offset + o.bytes.length));
      old.copy(data);
      Buffer.from(o.bytes).copy(data, o.offset);
      m.set(o.path, { kind: 'file', data });
      return 'ok';
    }
    case 'truncate': {
      if (!node) return 'ENOENT';
      if (node.kind === 'dir') return 'EISDIR';
      const data = Buffer.alloc(o.size);
      node.data.copy(data, 0, 0, Math.min(o.size, node.data.length));
      m.set(o.path, { kind: 'file', data });
      return 'ok';
    }
    case 'unlink':
      if (!node) return 'ENOENT';
      if (node.kind === 'dir') return 'EISDIR';
      m.delete(o.path);
      return 'ok';
    case 'rmdir':
      if (!node) return 'ENOENT';
      if (node.kind !== 'dir') return 'ENOTDIR';
      if (children(m, o.path).length > 0) return 'ENOTEMPTY';
      m.delete(o.path);
      return 'ok';
    case 'rename': {
      if (!node) return 'ENOENT';
      const terr = parentErr(m, o.to);
      if (terr !== null) return terr;
      if (o.to === o.path) return 'ok';
      if (node.kind === 'dir' && o.to.startsWith(`${o.path}/`)) return 'EINVAL';
      const dst = m.get(o.to);
      if (dst) {
        if (node.kind === 'dir' && dst.kind !== 'dir') return 'ENOTDIR';
        if (node.kind !== 'dir' && dst.kind === 'dir') return 'EISDIR';
        if (dst.kind === 'dir' && children(m, o.to).length > 0) return 'ENOTEMPTY';
      }
      const moved = [...m.entries()].filter(([k]) => k === o.path || k.startsWith(`${o.path}/`));
      for (const [k] of moved) m.delete(k);
      m.delete(o.to);
      for (const [k, v] of moved) m.set(o.to + k.slice(o.path.length), v);
      return 'ok';
    }
  }
}

function applyVfs(vfs: Vfs, o: Op): string {
  try {
    switch (o.op) {
      case 'mkdir': vfs.mkdir('workspace', o.path); break;
      case 'write': vfs.write(vfs.open('workspace', o.path, O_CREAT).ino, o.offset, o.bytes); break;
      case 'truncate': {
        const s = vfs.stat('workspace', o.path);
        if (s.kind === 'dir') return 'EISDIR';
        vfs.truncate(s.ino, o.size);
        break;
      }
      case 'unlink': vfs.unlink('workspace', o.path); break;
      case 'rmdir': vfs.rmdir('workspace', o.path); break;
      case 'rename': vfs.rename('workspace', o.path, 'workspace', o.to); break;
    }
    return 'ok';
  } catch (err) {
    if (err instanceof VfsError) return err.code;
    throw err;
  }
}

function snapshot(vfs: Vfs): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (ino: number, prefix: string) => {
    for (const e of vfs.readdir(ino, 0, 10_000)) {
      const p = `${prefix}/${e.name}`;
      if (e.kind === 'dir') { out.set(p, 'dir'); visit(e.ino, p); } else out.set(p, Buffer.from(vfs.read(e.ino, 0, 1 << 20)).toString('hex'));
    }
  };
  visit(vfs.rootIno('workspace'), '');
  return out;
}

test('the VFS agrees with a simple model on random operation sequences', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
      const vfs = Vfs.open({ file: ':memory:' });
      const model: Model = new Map();
      try {
        for (const o of ops) assert.equal(applyVfs(vfs, o), applyModel(model, o), JSON.stringify({ ...o, bytes: undefined }));
        const expected = new Map([...model].map(([k, v]) => [k, v.kind === 'dir' ? 'dir' : v.data.toString('hex')]));
        assert.deepEqual(snapshot(vfs), expected);
        const bytes = [...model.values()].reduce((n, v) => n + (v.kind === 'file' ? v.data.length : 0), 0);
        assert.deepEqual([vfs.getUsage().bytes, vfs.getUsage().inodes], [bytes, model.size + 3]);
      } finally {
        vfs.close();
      }
    }),
    { numRuns: 150 },
  );
});
