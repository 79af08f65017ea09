/** `npm run bench`: every benchmark, each printing ratios against baselines from the same run. */

import { callLatency } from './call-latency.ts';
import { freshSandbox } from './fresh-sandbox.ts';
import { moduleCache } from './module-cache.ts';
import { fuelOverhead } from './fuel-overhead.ts';
import { rewriterSpeed } from './rewriter-speed.ts';
import { validationCost } from './validation-cost.ts';
import { hostCall } from './host-call.ts';
import { timeoutOvershoot } from './timeout-overshoot.ts';
import { cancelAndStream } from './cancel-and-stream.ts';
import { wasiIo } from './wasi-io.ts';
import { shellLatency } from './shell.ts';
import { brokers } from './brokers.ts';
import { hostFunction } from './host-function.ts';
import { jsLane, jsLanePowers } from './js-lane.ts';
import { pythonLane } from './python-lane.ts';
import { sqliteBinding } from './sqlite-binding.ts';

console.log(`membrane benchmarks — node ${process.version}, ${new Date().toISOString()}`);
await callLatency();
await freshSandbox();
await moduleCache();
await hostCall();
await timeoutOvershoot();
await cancelAndStream();
await fuelOverhead();
await rewriterSpeed();
await validationCost();
await wasiIo();
await shellLatency();
await brokers();
await hostFunction();
await jsLane();
await jsLanePowers();
await pythonLane();
await sqliteBinding();
