/** Test helper: the committed test components (test/fixtures/components, scripts/build-components.ts). */

import { readFileSync } from 'node:fs';

export function component(name: string): Uint8Array {
  return new Uint8Array(readFileSync(new URL(`../fixtures/components/${name}.component.wasm`, import.meta.url)));
}
