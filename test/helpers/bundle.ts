// Bundles for tests: a VFS with files in every volume, its listing, and a signer.
import { KeyPair, didKey, type Identity } from '../../src/provenance/index.ts';
import { Vfs, O_CREAT, VOLUMES } from '../../src/storage/vfs.ts';

export function testSigner(fill = 3): Identity {
  const keys = new KeyPair(Buffer.alloc(32, fill));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
}

/** A named VFS with directories, files (one empty, one large), a symlink, odd modes and fixed mtimes in all three volumes. */
export function populate(name: string): void {
  const vfs = Vfs.open({ name });
  try {
    const file = (volume: 'workspace' | 'memory' | 'tmp', path: string, data: Uint8Array | string, mode = 0o644, mtime = 1_700_000_000_123_456_789n): void => {
      const ino = vfs.open(volume, path, O_CREAT, { mode }).ino;
      const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
      if (bytes.length > 0) vfs.write(ino, 0, bytes);
      vfs.setMode(ino, mode);
      vfs.setTimes(ino, undefined, mtime);
    };
    vfs.mkdir('workspace', '/src', 0o750);
    vfs.mkdir('workspace', '/src/deep', 0o700);
    file('workspace', '/src/deep/main.c', 'int main(void) { return 0; }\n', 0o600, 1_600_000_000_000_000_001n);
    file('workspace', '/README', 'hello\n', 0o444);
    file('workspace', '/empty', '', 0o640);
    const big = new Uint8Array(300_000);
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
    file('workspace', '/data.bin', big, 0o755);
    vfs.symlink('src/deep/main.c', 'workspace', '/link');
    vfs.mkdir('memory', '/notes', 0o755);
    file('memory', '/notes/today.txt', 'remember\n');
    file('tmp', '/scratch', 'tmp bytes', 0o666);
    vfs.setTimes(vfs.stat('workspace', '/src/deep').ino, undefined, 1_500_000_000_000_000_000n);
    vfs.setTimes(vfs.stat('workspace', '/src').ino, undefined, 1_500_000_000_000_000_007n);
    vfs.setTimes(vfs.rootIno('memory'), undefined, 1_400_000_000_000_000_000n);
  } finally {
    vfs.close();
  }
}

/** Every inode of every volume: kind, mode, mtime, content (hex) or target. */
export function listing(name: string): string[] {
  const vfs = Vfs.open({ name });
  const out: string[] = [];
  try {
    for (const volume of VOLUMES) {
      const walk = (ino: number, path: string): void => {
        const st = vfs.statIno(ino);
        const what = st.kind === 'dir' ? '' : st.kind === 'symlink' ? `-> ${vfs.readlink(volume, path)}` : Buffer.from(vfs.read(ino, 0, st.size)).toString('hex').slice(0, 64) + `:${st.size}`;
        out.push(`${volume}${path} ${st.kind} ${st.kind === 'symlink' ? '' : st.mode.toString(8)} ${st.mtimeNs} ${what}`);
        if (st.kind === 'dir') for (const d of vfs.readdir(ino, 0, 65536)) walk(d.ino, path === '/' ? `/${d.name}` : `${path}/${d.name}`);
      };
      walk(vfs.rootIno(volume), '/');
    }
  } finally {
    vfs.close();
  }
  return out.sort();
}

/** Visit each central-directory entry of a zip: its offset in `zip` (to patch fields in place). */
export function centralEntries(zip: Uint8Array): { name: string; at: number }[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let e = zip.length - 22;
  while (view.getUint32(e, true) !== 0x06054b50) e--;
  const out: { name: string; at: number }[] = [];
  let o = view.getUint32(e + 16, true);
  for (let i = 0, n = view.getUint16(e + 10, true); i < n; i++) {
    const nameLen = view.getUint16(o + 28, true);
    out.push({ name: Buffer.from(zip.subarray(o + 46, o + 46 + nameLen)).toString('utf8'), at: o });
    o += 46 + nameLen + view.getUint16(o + 30, true) + view.getUint16(o + 32, true);
  }
  return out;
}

/** Overwrite an entry's declared (uncompressed) size in its central-directory record. */
export function patchDeclared(zip: Uint8Array, name: string, bytes: number): void {
  const entry = centralEntries(zip).find((c) => c.name === name);
  if (!entry) throw new Error(`no entry ${name}`);
  new DataView(zip.buffer, zip.byteOffset, zip.byteLength).setUint32(entry.at + 24, bytes, true);
}
