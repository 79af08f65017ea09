// Where an engine keeps its module cache when the caller names none: `$MEMBRANE_CACHE_DIR` when set
// (processes with homes of their own sharing one cache: the CLI build test shares the run's
// rewritten toolchain this way), else `$MEMBRANE_HOME/cache`; an explicit `cacheDir` (or `false`)
// wins over both.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import { resolveEngine } from '../../src/engine/options.ts';

const saved = { home: process.env['MEMBRANE_HOME'], cache: process.env['MEMBRANE_CACHE_DIR'] };
afterEach(() => {
  for (const [k, v] of [['MEMBRANE_HOME', saved.home], ['MEMBRANE_CACHE_DIR', saved.cache]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

test('without MEMBRANE_CACHE_DIR the cache is $MEMBRANE_HOME/cache', () => {
  process.env['MEMBRANE_HOME'] = '/srv/membrane-home';
  delete process.env['MEMBRANE_CACHE_DIR'];
  assert.equal(resolveEngine().cacheDir, join('/srv/membrane-home', 'cache'));
});

test('MEMBRANE_CACHE_DIR names the cache; an empty one is unset', () => {
  process.env['MEMBRANE_HOME'] = '/srv/membrane-home';
  process.env['MEMBRANE_CACHE_DIR'] = '/srv/shared-cache';
  assert.equal(resolveEngine().cacheDir, '/srv/shared-cache');
  process.env['MEMBRANE_CACHE_DIR'] = '';
  assert.equal(resolveEngine().cacheDir, join('/srv/membrane-home', 'cache'));
});

test('an explicit cacheDir or false wins over MEMBRANE_CACHE_DIR', () => {
  process.env['MEMBRANE_CACHE_DIR'] = '/srv/shared-cache';
  assert.equal(resolveEngine({ cacheDir: '/srv/mine' }).cacheDir, '/srv/mine');
  assert.equal(resolveEngine({ cacheDir: false }).cacheDir, null);
});
