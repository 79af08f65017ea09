/**
 * The component lane (DESIGN §7 component): a WebAssembly component's imports checked against
 * the `membrane:engine` world its grant builds, before anything is transpiled or run; then jco's
 * glue and core modules, cached by content hash. The run itself is the engine's
 * (engine/component-lane.ts), the WASI p2 implementations are src/wasi/p2.
 * Invariant: `checkComponent` throws LINK_UNSATISFIED for any import outside the world, and
 * nothing else in this lane runs first. Does not protect against: what the accepted interfaces
 * do — their implementations' walls.
 */

import { componentImports, isComponent } from '../../wasm/component.ts';
import { checkComponentWorld, parseInterfaceName } from '../../policy/component-world.ts';
import type { CapWord } from '../../policy/profiles.ts';

export { isComponent };
export { transpileCached, transpileCount, componentHash, JCO_VERSION, type Transpiled } from './transpile.ts';

/** The interfaces (without versions) the component imports, all inside its world under `caps`. */
export function checkComponent(bytes: Uint8Array, caps: readonly CapWord[]): string[] {
  const imports = componentImports(bytes);
  checkComponentWorld(imports, caps);
  return [...new Set(imports.map((i) => parseInterfaceName(i.name)!.interface))];
}
