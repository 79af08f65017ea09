/**
 * The TypeScript stripper that runs INSIDE QuickJS, never on the host: scripts/bundle.mjs bundles
 * this file with sucrase into dist/js-transpiler.js (an IIFE defining `__membraneTranspiler`),
 * which interpreter.ts evaluates in a separate runtime of each pre-initialized TS interpreter.
 *
 * Only the `typescript` transform: types are removed, imports and modern syntax are left as they
 * are (a snippet is a script; `import` in it fails like it would in JS).
 */

import { transform as sucrase } from 'sucrase';

export function transform(code: string): string {
  return sucrase(code, { transforms: ['typescript'], disableESTransforms: true }).code;
}
