/**
 * Membrane's library surface: `createEngine(options)` → `engine.run(bytes, opts)`,
 * `engine.start(id, bytes, opts)` → `Instance { call, info, stop }`; the policy literal; the
 * error table.
 */
export * from './engine/index.ts';
export * from './errors.ts';
export * from './policy/index.ts';
