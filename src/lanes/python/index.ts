export { DEFAULT_OUTPUT_LIMIT_BYTES, DEFAULT_POOL_SIZE, MAX_POOL_SIZE, PythonLane, type PythonLaneOptions, type PythonLaneStats } from './lane.ts';
export { findBwrap, type PythonTier } from './spawn.ts';
export { PYTHON_MEMORY_CEILING_BYTES } from './wasm-prep.ts';
