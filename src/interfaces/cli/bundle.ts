/**
 * `membrane bundle create --vfs NAME [--html FILE] [--tenant T] -o X.mbundle` and
 * `membrane bundle restore X.mbundle --vfs NAME2 [--trust DID]...`: a VFS as one signed zip,
 * and back (src/provenance/bundle.ts). A refused bundle is POLICY_INVALID and restores nothing.
 */

import { closeSync, fstatSync, openSync, readSync, writeFileSync, constants } from 'node:fs';
import { SandboxError } from '../../errors.ts';
import { tenantIdentity } from '../../provenance/identity.ts';
import { createBundle, restoreBundle } from '../../provenance/bundle.ts';
import { MAX_BUNDLE_FILE_BYTES } from '../../provenance/zip-check.ts';
import { UsageError, parse, printJson, str, strs } from './args.ts';

function readBounded(file: string, max: number, what: string): Uint8Array {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new SandboxError('POLICY_INVALID', `cannot read the ${what} "${file}" (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new SandboxError('POLICY_INVALID', `the ${what} is not a regular file`);
    if (st.size > max) throw new SandboxError('POLICY_INVALID', `the ${what} is over ${max} bytes`);
    const buf = Buffer.alloc(st.size);
    let at = 0;
    for (let n; at < buf.length && (n = readSync(fd, buf, at, buf.length - at, at)) > 0; ) at += n;
    return new Uint8Array(buf.buffer, buf.byteOffset, at);
  } finally {
    closeSync(fd);
  }
}

async function create(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { vfs: { type: 'string' }, html: { type: 'string' }, tenant: { type: 'string' }, output: { type: 'string', short: 'o' }, json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('bundle create takes no arguments');
  const name = str(values['vfs']);
  const out = str(values['output']);
  if (name === undefined || out === undefined) throw new UsageError('bundle create needs --vfs NAME and -o FILE.mbundle');
  const tenant = str(values['tenant']) ?? 'default';
  const signer = tenantIdentity(tenant);
  if (!signer) throw new SandboxError('NOT_FOUND', `tenant "${tenant}" has no identity yet: membrane identity create --tenant ${tenant}`);
  const htmlFile = str(values['html']);
  const html = htmlFile !== undefined ? readBounded(htmlFile, 64 * 1024 * 1024, 'HTML page') : undefined;
  const zip = createBundle(name, signer, html ? { html } : {});
  writeFileSync(out, zip);
  if (values['json'] === true) printJson({ bundle: out, bytes: zip.length, signer: signer.did });
  else process.stdout.write(`wrote ${out} (${zip.length} bytes, signed by ${signer.did})\n`);
  return 0;
}

async function restore(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { vfs: { type: 'string' }, trust: { type: 'string', multiple: true }, 'html-out': { type: 'string' }, json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('bundle restore takes exactly one FILE.mbundle');
  const name = str(values['vfs']);
  if (name === undefined) throw new UsageError('bundle restore needs --vfs NAME (a new VFS)');
  const trust = strs(values['trust']);
  const r = restoreBundle(readBounded(positionals[0]!, MAX_BUNDLE_FILE_BYTES, 'bundle'), name, trust.length > 0 ? { trust } : {});
  const htmlOut = str(values['html-out']);
  if (htmlOut !== undefined && r.html) writeFileSync(htmlOut, r.html);
  const summary = { vfs: name, signer: r.signer, files: r.files, dirs: r.dirs, symlinks: r.symlinks, html: r.html !== null };
  if (values['json'] === true) printJson(summary);
  else process.stdout.write(`restored ${r.files} files, ${r.dirs} directories, ${r.symlinks} symlinks into VFS ${name} (signed by ${r.signer})\n`);
  return 0;
}

export async function bundleCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'create') return create(rest);
  if (sub === 'restore') return restore(rest);
  throw new UsageError(sub === undefined ? 'bundle needs a subcommand: create or restore' : `unknown bundle subcommand "${sub}" (create or restore)`);
}
