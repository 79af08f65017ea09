/**
 * The lanes' public surface for the engine and the interfaces: `engine.exec`'s lanes and request
 * shape (exec.ts), and one call's power server (exec-powers.ts assembles it from the engine's
 * parts: power-server.ts, its command host host.ts and its VFS vfs.ts). The JS and Python lanes
 * themselves are loaded on first use by exec.ts (js/index.ts, cpython/index.ts), never at startup.
 */

export { Lanes, runExec, LANE_FUEL_UNIT, MAX_CODE_BYTES, type ExecOptions, type ExecOutcome, type Lane, type LanesConfig, type PowersFor } from './exec.ts';
export { laneHost, type CommandOutcome, type CommandRun, type LaneHost, type LaneHostDeps } from './host.ts';
export { lanePowerServer, type LanePowerDeps } from './power-server.ts';
export { execPowerServer, type EngineParts } from './exec-powers.ts';
export { LaneVfs, PowerRefusal, sweepPrivateVfs, type LaneVfsOptions } from './vfs.ts';
