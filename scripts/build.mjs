// The package build (`npm run build`, run by `prepare` on `npm ci` and `npm pack`): a clean dist/
// holding the library (dist/index.js), the CLI (dist/cli.mjs), the thread and child bundles
// (scripts/bundle.mjs), the dashboard's assets (dist/dashboard/), and the declarations
// (dist/types/**/*.d.ts, emitted by tsc from the same sources). The sources import each other
// with `.ts` specifiers; tsc keeps them in declarations (imports, and the `declare module` that
// src/agent uses to fill in `engine.agent`'s type), so they are rewritten to `.js`, which a
// consumer's TypeScript resolves to the `.d.ts` beside it under any moduleResolution.
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ensureBuilt, root } from './bundle.mjs';

const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
await ensureBuilt();
cpSync(join(root, 'src/interfaces/http/dashboard'), join(dist, 'dashboard'), { recursive: true });

const tsc = join(createRequire(import.meta.url).resolve('typescript/package.json'), '..', 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

const SPECIFIER = /((?:from|import|declare module)\s*\(?\s*['"])(\.{1,2}\/[^'"]*?)\.ts(['"])/g;
let files = 0;
(function rewrite(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) rewrite(p);
    else if (e.name.endsWith('.d.ts')) {
      const text = readFileSync(p, 'utf8');
      const out = text.replace(SPECIFIER, '$1$2.js$3');
      if (out !== text) writeFileSync(p, out);
      files++;
    }
  }
})(join(dist, 'types'));
console.log(`built dist/ (${files} declaration files)`);
