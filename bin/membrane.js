#!/usr/bin/env node
// The membrane CLI. Sources are TypeScript in src/; scripts/bundle.mjs rebuilds dist/ when a
// source is newer, so a fresh clone works after `npm ci` with nothing else to run.
import { ensureBuilt } from '../scripts/bundle.mjs';
import { pathToFileURL } from 'node:url';

const { cli } = await ensureBuilt();
await import(pathToFileURL(cli).href);
