/**
 * `membrane inspect COMPONENT.wasm`: a component's top-level imports, the cap each needs in the
 * `membrane:engine` world (policy/component-world.ts), and the least-privileged profiles whose
 * world holds them all — or, per import, why none does. Read from the binary only: nothing is
 * transpiled or run.
 */

import { checkComponentImport } from '../../policy/component-world.ts';
import { PROFILE_NAMES, PROFILES, type CapWord, type ProfileName } from '../../policy/profiles.ts';
import { componentImports } from '../../wasm/component.ts';

export interface ComponentInspection {
  readonly component: true;
  readonly imports: ReadonlyArray<{ import: string; kind: string; cap: CapWord | null; linked: boolean }>;
  readonly caps: readonly CapWord[];
  readonly profiles: readonly ProfileName[];
  readonly reasons: readonly string[];
}

export function inspectComponent(bytes: Uint8Array): ComponentInspection {
  const list = componentImports(bytes);
  const all = PROFILES[PROFILE_NAMES[PROFILE_NAMES.length - 1]!].caps;
  const imports = list.map((i) => {
    const why = checkComponentImport(i.name, i.kind, all);
    // The cap it needs: what the check names when no cap is granted.
    const needs = checkComponentImport(i.name, i.kind, []);
    return { import: i.name, kind: i.kind, cap: needs?.cap ?? null, linked: why === null };
  });
  const caps = [...new Set(imports.flatMap((i) => (i.cap ? [i.cap] : [])))];
  const profiles = PROFILE_NAMES.filter((p) => list.every((i) => checkComponentImport(i.name, i.kind, PROFILES[p].caps) === null));
  const reasons = profiles.length ? [] : list.flatMap((i) => {
    const why = checkComponentImport(i.name, i.kind, all);
    return why ? [`${why.import}: ${why.reason}`] : [];
  });
  return { component: true, imports, caps, profiles, reasons };
}

export function componentText(r: ComponentInspection): string {
  const out = [`component imports (${r.imports.length}):`];
  for (const i of r.imports) out.push(`  ${i.import} ${i.kind}  [${i.cap ?? 'ambient'}${i.linked ? '' : ', not linkable'}]`);
  out.push(`caps needed: ${r.caps.length ? r.caps.join(' ') : '(none beyond the ambient set)'}`);
  if (r.profiles.length) out.push(`runs under: ${r.profiles.join(', ')} (least privileged: ${r.profiles[0]})`);
  else out.push(`runs under: no profile\n${r.reasons.map((x) => `  - ${x}`).join('\n')}`);
  return `${out.join('\n')}\n`;
}
