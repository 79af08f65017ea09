/**
 * `membrane inspect MODULE`: what a module imports and exports, its memory and tables, the cap
 * words it needs, and the least-privileged profiles that can run it — or why none can. A file
 * `membrane instrument` wrote is shown as its original (`instrumented: true` in JSON); a component
 * is shown by its interface imports (inspect-component.ts).
 */

import { importKey, lookupImport } from '../../policy/catalog.ts';
import { PROFILE_NAMES, PROFILES, profilesGranting, type CapWord, type ProfileName } from '../../policy/profiles.ts';
import { checkImport, externKindName, signatureText } from '../../engine/linker.ts';
import { describeModule } from '../../wasm/index.ts';
import { UsageError, loadModule, parse, printJson } from './args.ts';
import { runnableModule } from './instrumented.ts';
import { isComponent } from '../../wasm/component.ts';
import { componentText, inspectComponent } from './inspect-component.ts';

export interface Inspection {
  readonly imports: ReadonlyArray<{ import: string; kind: string; signature: string | null; grant: string; linked: boolean }>;
  readonly exports: ReadonlyArray<{ name: string; kind: string; signature: string | null }>;
  readonly memory: { imported: boolean; initialPages: number; maxPages: number | null; shared: boolean } | null;
  readonly tables: ReadonlyArray<{ initial: number; max: number | null }>;
  readonly start: boolean;
  readonly caps: readonly CapWord[];
  readonly profiles: readonly ProfileName[];
  readonly reasons: readonly string[];
}

export function inspect(bytes: Uint8Array): Inspection {
  const desc = describeModule(bytes);
  const caps = new Set<CapWord>();
  const reasons: string[] = [];
  const imports = desc.imports.map((imp) => {
    const entry = lookupImport(imp.module, imp.name);
    const grant = entry ? entry.grant : 'none';
    if (entry && entry.grant !== 'ambient' && entry.grant !== 'never') caps.add(entry.grant);
    return {
      import: importKey(imp.module, imp.name),
      kind: externKindName(imp.kind),
      signature: imp.signature ? signatureText(imp.signature) : null,
      grant,
      linked: !!entry && entry.status !== 'planned' && entry.grant !== 'never',
    };
  });
  const needed = [...caps];
  // A profile can run the module only if every import links under its caps.
  const profiles = profilesGranting(needed).filter((p) =>
    desc.imports.every((imp) => checkImport(imp, PROFILES[p].caps) === null),
  );
  if (profiles.length === 0) {
    const top = PROFILES[PROFILE_NAMES[PROFILE_NAMES.length - 1]!].caps;
    for (const imp of desc.imports) {
      const why = checkImport(imp, top);
      if (why) reasons.push(`${why.import}: ${why.reason}`);
    }
    if (reasons.length === 0) reasons.push(`no profile grants all of: ${needed.join(', ')}`);
  }
  const mem = desc.memories[0] ?? null;
  return {
    imports,
    exports: desc.exports.map((e) => ({ name: e.name, kind: externKindName(e.kind), signature: e.signature ? signatureText(e.signature) : null })),
    memory: mem ? { imported: mem.imported, initialPages: mem.initialPages, maxPages: mem.maxPages, shared: mem.shared } : null,
    tables: desc.tables.map((t) => ({ initial: t.initialElements, max: t.maxElements })),
    start: desc.start !== null,
    caps: needed,
    profiles,
    reasons,
  };
}

export async function inspectCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } });
  const file = positionals[0];
  if (!file || positionals.length > 1) throw new UsageError('inspect takes exactly one MODULE');
  const bytes = await loadModule(file);
  if (isComponent(bytes)) {
    const c = inspectComponent(bytes);
    if (values['json'] === true) printJson(c);
    else process.stdout.write(componentText(c));
    return 0;
  }
  const original = runnableModule(bytes);
  const r = inspect(original);
  if (values['json'] === true) {
    printJson(original === bytes ? r : { ...r, instrumented: true });
    return 0;
  }
  const out: string[] = [];
  if (original !== bytes) out.push("written by 'membrane instrument': its original, what 'membrane run' runs (metered once):");
  out.push(`imports (${r.imports.length}):`);
  for (const i of r.imports) out.push(`  ${i.import} ${i.signature ?? i.kind}  [${i.grant}${i.linked ? '' : ', not linkable'}]`);
  out.push(`exports (${r.exports.length}):`);
  for (const e of r.exports) out.push(`  ${e.name} ${e.signature ?? e.kind}`);
  if (r.memory) {
    const max = r.memory.maxPages === null ? 'no max' : `max ${r.memory.maxPages} pages`;
    out.push(`memory: ${r.memory.imported ? 'imported, ' : ''}${r.memory.initialPages} pages initial, ${max}${r.memory.shared ? ', shared' : ''}`);
  } else {
    out.push('memory: none');
  }
  out.push(`caps needed: ${r.caps.length ? r.caps.join(' ') : '(none beyond the ambient set)'}`);
  if (r.profiles.length) out.push(`runs under: ${r.profiles.join(', ')} (least privileged: ${r.profiles[0]})`);
  else out.push(`runs under: no profile\n${r.reasons.map((x) => `  - ${x}`).join('\n')}`);
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
}
