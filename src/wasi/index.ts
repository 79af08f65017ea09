/**
 * WASI preview 1 over the VFS, the surface the guest worker links (engine/worker/guest.ts): the
 * ambient calls (ambient.ts: args, env, clocks, random, poll, proc_exit, and stdio captured by
 * output.ts under the output wall) and, with the `vfs` cap, the filesystem (fs.ts and fs-path.ts
 * over the descriptor table of fd-table.ts), and a lane's port (port.ts). It runs only on a guest's thread and never touches
 * `node:fs`; see each file for its invariant.
 */
export { ambientWasi, pollOneoff, SLEEP_SLICE_MS, type WasiContext } from './ambient.ts';
export { vfsWasi, MAX_FDS, type Preopen, type VfsWasiContext, type WasiFn } from './fs.ts';
export { CappedStream } from './output.ts';
export { PORT_FD, MAX_PORT_REQUEST_BYTES, PARK, type LanePort, type PortHandler } from './port.ts';
