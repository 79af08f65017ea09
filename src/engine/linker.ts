/**
 * The linker: decides, before instantiation, whether a module's declared imports are all inside
 * the world its caps build (DESIGN §1.1, §4) and produces the link plan the worker builds.
 *
 * Owns: comparing every declared import (module, name, kind, signature) with the catalog and the
 * granted caps; the LINK_UNSATISFIED error naming every missing import, the cap word that would
 * grant it (or that none does) and the profiles that grant that word.
 * Invariant: the plan contains only catalog entries whose grant is ambient or a granted cap and
 * whose status is not `planned`, and the embedder's host functions (import module `vendor:name`,
 * DESIGN §9) of host caps the grant names; when anything is missing nothing is instantiated, so
 * the guest's start function never runs.
 *
 * Does not protect against: a module that needs nothing and computes forever — that is the time
 * and work walls' job.
 */

import { SandboxError, type DetailValue } from '../errors.ts';
import { MEMORY_IMPORT, importKey, lookupImport, type CatalogEntry } from '../policy/catalog.ts';
import { profilesGranting, type CapWord, type ProfileName } from '../policy/profiles.ts';
import { isHostCapName } from '../policy/host-caps.ts';
import type { ModuleDescription, ImportDescription } from '../wasm/index.ts';

export interface MissingImport {
  readonly import: string;
  readonly kind: string;
  /** The cap word (or host cap) that would link it, or null when no capability grants it. */
  readonly cap: CapWord | string | null;
  readonly profiles: readonly ProfileName[];
  readonly reason: string;
}

export interface LinkPlan {
  readonly link: readonly string[];
  readonly importedMemory: { readonly initial: number; readonly maximum: number | null; readonly shared: boolean } | null;
}

export function signatureText(sig: { params: readonly string[]; results: readonly string[] } | null | undefined): string {
  if (!sig) return '?';
  const r = sig.results.length === 0 ? '()' : sig.results.length === 1 ? sig.results[0]! : `(${sig.results.join(', ')})`;
  return `(${sig.params.join(', ')}) -> ${r}`;
}

/** The embedder's host functions a link sees: those defined on the engine and the host caps granted. */
export interface HostLinkView {
  readonly defined: Readonly<Record<string, readonly string[]>>;
  readonly granted: readonly string[];
}

const NO_HOST: HostLinkView = { defined: {}, granted: [] };

/** Every host function is `(args_ptr, args_len, out_ptr, out_cap) -> i32` (docs/abi.md). */
export const HOST_FUNCTION_SIGNATURE = { params: ['i32', 'i32', 'i32', 'i32'], results: ['i32'] } as const;

/** Why one import cannot be linked under `caps` (and `host`), or null when it can. */
export function checkImport(imp: ImportDescription, caps: readonly CapWord[], host: HostLinkView = NO_HOST): MissingImport | null {
  const key = importKey(imp.module, imp.name);
  const kind = externKindName(imp.kind);
  const none = (reason: string): MissingImport => ({ import: key, kind, cap: null, profiles: [], reason });
  if (isHostCapName(imp.module)) {
    const cap = imp.module;
    if (!Object.hasOwn(host.defined, cap)) return none('no capability grants this (the engine defines no such host function capability)');
    const missing = (reason: string): MissingImport => ({ import: key, kind, cap, profiles: [], reason });
    if (!host.granted.includes(cap)) return missing(`needs host cap "${cap}", which this instance was not granted`);
    if (!host.defined[cap]!.includes(imp.name)) return missing(`host cap "${cap}" has no function "${imp.name}"`);
    if (kind !== 'function') return missing(`expected a function import, the module declares a ${kind}`);
    const want = signatureText(HOST_FUNCTION_SIGNATURE);
    const got = signatureText(imp.signature ?? null);
    return want === got ? null : missing(`signature mismatch: Membrane provides ${want}, the module declares ${got}`);
  }
  const entry = lookupImport(imp.module, imp.name);
  if (!entry) return none('no capability grants this');
  if (entry.grant === 'never') return none('no capability grants this');
  if (entry.kind !== kind) return none(`expected a ${entry.kind} import, the module declares a ${kind}`);
  const cap = entry.grant === 'ambient' ? null : entry.grant;
  const profiles = cap ? profilesGranting([cap]) : [];
  if (cap && !caps.includes(cap)) {
    return { import: key, kind, cap, profiles, reason: `needs cap "${cap}", which this instance was not granted` };
  }
  if (entry.status === 'planned') {
    return {
      import: key,
      kind,
      cap,
      profiles,
      reason: `cap "${cap}" is granted, but its import is not linked in this version${entry.note ? ` (arrives with ${entry.note})` : ''}`,
    };
  }
  const mismatch = signatureMismatch(entry, imp);
  if (mismatch) return { import: key, kind, cap, profiles, reason: mismatch };
  return null;
}

/** The binary format says `func`; people (and V8's reflection) say `function`. */
export function externKindName(kind: string): string {
  return kind === 'func' ? 'function' : kind;
}

function signatureMismatch(entry: CatalogEntry, imp: ImportDescription): string | null {
  if (entry.kind !== 'function' || !entry.signature) return null;
  const want = signatureText(entry.signature);
  const got = signatureText(imp.signature ?? null);
  return want === got ? null : `signature mismatch: Membrane provides ${want}, the module declares ${got}`;
}

export function planLinks(desc: ModuleDescription, caps: readonly CapWord[], host: HostLinkView = NO_HOST): LinkPlan {
  const missing: MissingImport[] = [];
  const link: string[] = [];
  let importedMemory: LinkPlan['importedMemory'] = null;
  for (const imp of desc.imports) {
    const why = checkImport(imp, caps, host);
    if (why) {
      missing.push(why);
      continue;
    }
    link.push(importKey(imp.module, imp.name));
    if (imp.kind === 'memory' && imp.module === MEMORY_IMPORT.module && imp.name === MEMORY_IMPORT.name && imp.memory) {
      importedMemory = { initial: imp.memory.initialPages, maximum: imp.memory.maxPages, shared: imp.memory.shared };
    }
  }
  if (missing.length) throw linkError(missing, caps);
  return { link, importedMemory };
}

function linkError(missing: readonly MissingImport[], caps: readonly CapWord[]): SandboxError {
  const parts = missing.map((m) => {
    if (m.cap === null) return `${m.import}: ${m.reason}`;
    const who = m.profiles.length ? `granted by profiles ${m.profiles.join(', ')}` : isHostCapName(m.cap) ? 'granted only by naming it in caps' : 'granted by no profile';
    return `${m.import}: ${m.reason} (cap "${m.cap}" is ${who})`;
  });
  const noun = missing.length === 1 ? 'import' : 'imports';
  return new SandboxError('LINK_UNSATISFIED', `the module declares ${missing.length} ${noun} outside its world: ${parts.join('; ')}`, {
    missing: missing.map(
      (m): DetailValue => ({ import: m.import, kind: m.kind, cap: m.cap, profiles: [...m.profiles], reason: m.reason }),
    ),
    caps: [...caps],
  });
}
