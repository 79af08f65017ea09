// The JS/TS lane's public surface: `JsLane` (lane.ts) and its options.
export { JsLane, DEFAULT_POOL_SIZE, LINEAR_MEMORY_CEILING_BYTES } from './lane.ts';
export type { JsLaneOptions } from './lane.ts';
export { DEFAULT_OUTPUT_LIMIT_BYTES } from './output.ts';
