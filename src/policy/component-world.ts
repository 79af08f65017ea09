/**
 * The component world `membrane:engine` (DESIGN §4, wit/membrane.wit): which WIT interfaces a
 * component may import, and under which cap word — the component lane's half of "granted means
 * linked".
 *
 * Owns: the one table of interfaces (`WORLD`), the version ranges accepted (WASI 0.2.x, our own
 * 0.1.x), and the LINK_UNSATISFIED error for a component that imports anything outside the world
 * its caps build — naming each import, the cap that would grant it and the profiles granting it.
 * Invariant: an import is accepted only when its interface is in `WORLD`, its version is in range,
 * its grant is ambient or a granted cap, and it is `linked`; everything else (a bare function, a
 * value, a core module, an unknown package, `wasi:sockets` and `wasi:http` without `net`, or an
 * interface whose implementation is still `planned`, like UDP) refuses the whole component.
 *
 * Does not protect against: what a granted interface does — that is its implementation's wall
 * (src/wasi/p2, the brokers).
 */

import { SandboxError, type DetailValue } from '../errors.ts';
import { profilesGranting, type CapWord, type ProfileName } from './profiles.ts';

/** The version of our own package, `membrane:engine@WORLD_VERSION` (wit/membrane.wit). */
export const WORLD_VERSION = '0.1.1';

export interface WorldEntry {
  /** `namespace:package/interface`, without a version. */
  readonly interface: string;
  readonly grant: CapWord | 'ambient';
  /** `planned`: the cap is known but the interface has no implementation in this version. */
  readonly status: 'linked' | 'planned';
}

const ambient = (names: readonly string[]): WorldEntry[] => names.map((i) => ({ interface: i, grant: 'ambient', status: 'linked' }));

export const WORLD: readonly WorldEntry[] = Object.freeze([
  ...ambient([
    'wasi:cli/environment', 'wasi:cli/exit', 'wasi:cli/stdin', 'wasi:cli/stdout', 'wasi:cli/stderr',
    'wasi:cli/terminal-input', 'wasi:cli/terminal-output', 'wasi:cli/terminal-stdin', 'wasi:cli/terminal-stdout', 'wasi:cli/terminal-stderr',
    'wasi:clocks/wall-clock', 'wasi:clocks/monotonic-clock',
    'wasi:random/random', 'wasi:random/insecure', 'wasi:random/insecure-seed',
    'wasi:io/error', 'wasi:io/streams', 'wasi:io/poll',
  ]),
  { interface: 'wasi:filesystem/types', grant: 'vfs', status: 'linked' },
  { interface: 'wasi:filesystem/preopens', grant: 'vfs', status: 'linked' },
  { interface: 'membrane:engine/kv', grant: 'kv', status: 'linked' },
  { interface: 'membrane:engine/vfs-query', grant: 'vfs', status: 'linked' },
  { interface: 'membrane:engine/run-command', grant: 'commands', status: 'linked' },
  { interface: 'membrane:engine/run-command-many', grant: 'parallel', status: 'linked' },
  { interface: 'membrane:engine/llm-complete', grant: 'llm', status: 'linked' },
  { interface: 'membrane:engine/browse-fetch', grant: 'browse', status: 'linked' },
  { interface: 'membrane:engine/http-fetch', grant: 'net', status: 'linked' },
  // Sockets and outgoing HTTP are ambient egress: only the `net` cap allows them (DESIGN §2
  // allowHttp), brokered through the network guard. A TCP connection is one `tcp_request`
  // exchange (src/wasi/p2/sockets.ts; the cadence checks `tcp` on each); UDP is not linked yet.
  ...['network', 'instance-network', 'ip-name-lookup', 'tcp', 'tcp-create-socket'].map(
    (n): WorldEntry => ({ interface: `wasi:sockets/${n}`, grant: 'net', status: 'linked' }),
  ),
  ...['udp', 'udp-create-socket'].map((n): WorldEntry => ({ interface: `wasi:sockets/${n}`, grant: 'net', status: 'planned' })),
  // Outgoing HTTP rides the `http_fetch` broker (src/engine/worker/component-http.ts).
  { interface: 'wasi:http/types', grant: 'net', status: 'linked' },
  { interface: 'wasi:http/outgoing-handler', grant: 'net', status: 'linked' },
]);

const BY_NAME = new Map(WORLD.map((e) => [e.interface, e]));

export interface InterfaceName {
  /** `namespace:package/interface`. */
  readonly interface: string;
  readonly version: string | null;
}

/** Split `ns:pkg/iface@1.2.3` (null when the name is not an interface name). */
export function parseInterfaceName(name: string): InterfaceName | null {
  const m = /^([a-z][a-z0-9-]*:[a-z][a-z0-9-]*\/[a-z][a-z0-9-]*)(?:@([0-9A-Za-z.+-]+))?$/.exec(name);
  return m ? { interface: m[1]!, version: m[2] ?? null } : null;
}

/** WASI interfaces must be 0.2.x; ours 0.1.x (breaking changes bump the minor while < 1.0). */
function versionAccepted(iface: string, version: string | null): boolean {
  if (version === null) return false;
  if (iface.startsWith('wasi:')) return /^0\.2\.\d+$/.test(version);
  if (iface.startsWith('membrane:engine/')) return version.split('.').slice(0, 2).join('.') === WORLD_VERSION.split('.').slice(0, 2).join('.') && /^\d+\.\d+\.\d+$/.test(version);
  return false;
}

export interface MissingInterface {
  readonly import: string;
  readonly cap: CapWord | null;
  readonly profiles: readonly ProfileName[];
  readonly reason: string;
}

/** Why one top-level import of a component cannot be linked under `caps`, or null. */
export function checkComponentImport(name: string, kind: string, caps: readonly CapWord[]): MissingInterface | null {
  const none = (reason: string): MissingInterface => ({ import: name, cap: null, profiles: [], reason });
  if (kind !== 'instance') return none(`a ${kind} import: the world offers interfaces only`);
  const parsed = parseInterfaceName(name);
  if (!parsed) return none('not an interface name the world knows');
  const entry = BY_NAME.get(parsed.interface);
  if (!entry) return none('no capability grants this interface');
  const cap = entry.grant === 'ambient' ? null : entry.grant;
  const profiles = cap ? profilesGranting([cap]) : [];
  if (!versionAccepted(parsed.interface, parsed.version)) {
    return { import: name, cap, profiles, reason: `version ${parsed.version ?? '(none)'} is not one this world provides (WASI 0.2.x, membrane:engine ${WORLD_VERSION})` };
  }
  if (cap && !caps.includes(cap)) return { import: name, cap, profiles, reason: `needs cap "${cap}", which this instance was not granted` };
  if (entry.status === 'planned') return { import: name, cap, profiles, reason: `cap "${cap}" is granted, but this interface is not linked in this version` };
  return null;
}

/** Every import inside the world, or LINK_UNSATISFIED naming all that are not (nothing runs). */
export function checkComponentWorld(imports: readonly { name: string; kind: string }[], caps: readonly CapWord[]): void {
  const missing = imports.map((i) => checkComponentImport(i.name, i.kind, caps)).filter((m): m is MissingInterface => m !== null);
  if (missing.length === 0) return;
  const parts = missing.map((m) => {
    if (m.cap === null) return `${m.import}: ${m.reason}`;
    const who = m.profiles.length ? `granted by profiles ${m.profiles.join(', ')}` : 'granted by no profile';
    return `${m.import}: ${m.reason} (cap "${m.cap}" is ${who})`;
  });
  const noun = missing.length === 1 ? 'import' : 'imports';
  throw new SandboxError('LINK_UNSATISFIED', `the component declares ${missing.length} ${noun} outside its world: ${parts.join('; ')}`, {
    missing: missing.map((m): DetailValue => ({ import: m.import, kind: 'instance', cap: m.cap, profiles: [...m.profiles], reason: m.reason })),
    caps: [...caps],
  });
}

/** The caps a component's imports need (interfaces the world knows; the rest are for the link check to name). */
export function componentCaps(imports: readonly { name: string; kind: string }[]): CapWord[] {
  const caps = new Set<CapWord>();
  for (const i of imports) {
    const entry = i.kind === 'instance' ? BY_NAME.get(parseInterfaceName(i.name)?.interface ?? '') : undefined;
    if (entry && entry.grant !== 'ambient') caps.add(entry.grant);
  }
  return [...caps];
}
