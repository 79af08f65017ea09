#!/usr/bin/env node
// The membrane CLI: dist/cli.mjs. In a source checkout (scripts/bundle.mjs present) the stale
// outputs are rebuilt from src/ first, so a fresh clone works after `npm ci` with nothing else to
// run; the installed package never writes into its own directory.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const bundler = fileURLToPath(new URL('../scripts/bundle.mjs', import.meta.url));
let cli = fileURLToPath(new URL('../dist/cli.mjs', import.meta.url));
if (existsSync(bundler)) ({ cli } = await (await import(pathToFileURL(bundler).href)).ensureBuilt());
await import(pathToFileURL(cli).href);
