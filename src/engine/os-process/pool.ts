/**
 * The `os_process` tier's pool of pre-started children: each booted (Node, the bundle, its
 * one-call engine with a guest worker warming) up to the point where it waits for its request,
 * so a call that takes one pays only the request, the run and the reply.
 *
 * Owns: which children wait, per configuration (a key: bubblewrap or not, native addons or not —
 * the flags that differ between calls), at most `size` per key and at most `MAX_KEYS` keys (the
 * least recently used key's children are killed); the refill after a take; noticing a pooled
 * child's death (it is dropped, never handed out, and replaced); a boot deadline; the backoff
 * when boots keep failing (no refill for a while: calls start fresh children, with the errors of
 * a fresh spawn); killing every idle child on close.
 * Invariant: a child is handed out once and only while alive, to a call of exactly its
 * configuration: it was started with that call's flags, never wider ones, and has served no call
 * before (spawn.ts `call` runs once). Idle children never keep the host process alive.
 * Does not protect against: what a pooled child is — the same boundary as a fresh one (spawn.ts);
 * a pooled child's storage dir exists from its spawn (empty: nothing runs before its request).
 */

import type { WarmKind } from './protocol.ts';
import { startChild, type BootPlan, type Child } from './spawn.ts';

/** Configurations kept warm at once (bwrap × addons × run/js has eight; an engine mostly uses one to three). */
export const MAX_KEYS = 3;
/** A pooled child not ready after this long is killed (a boot failure). */
export const POOL_BOOT_MS = 15_000;
/** Consecutive boot failures (or idle deaths) before refilling pauses; the pause doubles, up to the max. */
const FAILURES_BEFORE_PAUSE = 3;
const PAUSE_MS = 1_000;
const MAX_PAUSE_MS = 60_000;

export interface PoolOptions {
  /** Children kept waiting per configuration (0: no pool). */
  readonly size: number;
  /** The boot line a child gets at spawn (protocol.ts `ChildBoot` + newline), by what it warms. */
  readonly boot: (warm: WarmKind) => string;
  /** Boot deadline; default POOL_BOOT_MS. */
  readonly bootMs?: number;
}

/** A configuration: the child's flags, and what it warms (the kind of call it is for). */
export type PoolPlan = Omit<BootPlan, 'entry'> & { readonly warm: WarmKind };
type Plan = PoolPlan;

interface Slot {
  readonly child: Child;
  ready: boolean;
  taken: boolean;
}

const keyOf = (p: Plan): string => JSON.stringify([p.bwrap, p.addons, p.shareNet, p.readDirs, p.warm, p.rlimits ?? null]);

export class ChildPool {
  private readonly slots = new Map<string, Slot[]>();
  /** Keys by last use, oldest first. */
  private readonly keys: string[] = [];
  private failures = 0;
  private pausedUntil = 0;
  private closed = false;

  constructor(
    private readonly o: PoolOptions,
    private readonly entry: () => Promise<string>,
  ) {}

  /**
   * A child for a call with this plan: a ready one, else the one furthest into its boot (waited
   * for; its boot is not the call's), else null — the caller starts a fresh child. The caller
   * calls `refill` when its call ends (boots then do not compete with the call for the cores).
   */
  async take(plan: Plan, signal?: AbortSignal): Promise<Child | null> {
    if (this.closed || this.o.size <= 0) return null;
    const key = this.touch(plan);
    const list = this.slots.get(key) ?? [];
    const slot = list.find((s) => s.ready && s.child.alive) ?? list.find((s) => s.child.alive);
    if (slot) {
      slot.taken = true;
      list.splice(list.indexOf(slot), 1);
    }
    if (!slot) return null;
    if (!slot.ready && signal?.aborted !== true) {
      slot.child.hold();
      let onAbort = (): void => {};
      const aborted = new Promise<void>((resolve) => signal?.addEventListener('abort', (onAbort = () => resolve()), { once: true }));
      const ok = await Promise.race([slot.child.ready.then(() => true, () => false), aborted.then(() => true)]);
      signal?.removeEventListener('abort', onAbort);
      if (!ok) {
        this.failed(); // it died booting: counted, and the call starts a fresh one
        return null;
      }
    }
    // Dead by now (killed while idle): never handed out.
    return slot.child.alive ? slot.child : null;
  }

  /** Bring this plan's children back to `size` (after a call of it ended). */
  refill(plan: Plan): void {
    if (this.o.size > 0) this.fill(keyOf(plan), plan);
  }

  /** Idle and booting children (tests, stats). */
  get size(): number {
    let n = 0;
    for (const l of this.slots.values()) n += l.length;
    return n;
  }

  /** The children waiting, and whether each is ready (tests, the benchmark). */
  children(): { pid: number; ready: boolean }[] {
    return [...this.slots.values()].flat().map((s) => ({ pid: s.child.pid, ready: s.ready }));
  }

  /** Kill every waiting child and wait for their exits (bounded); no refill after. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.slots.values()].flat();
    this.slots.clear();
    await Promise.all(all.map((s) => this.killed(s.child)));
  }

  private killed(child: Child): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 5_000);
      t.unref();
      child.onExit(() => {
        clearTimeout(t);
        resolve();
      });
      child.hold(); // close waits for its exit
      child.kill();
    });
  }

  /** Mark the key used; past MAX_KEYS the least recently used key's children are killed. */
  private touch(plan: Plan): string {
    const key = keyOf(plan);
    const at = this.keys.indexOf(key);
    if (at >= 0) this.keys.splice(at, 1);
    this.keys.push(key);
    while (this.keys.length > MAX_KEYS) {
      const old = this.keys.shift()!;
      for (const s of this.slots.get(old) ?? []) {
        s.taken = true; // evicted, not failed
        s.child.kill();
      }
      this.slots.delete(old);
    }
    return key;
  }

  private fill(key: string, plan: Plan): void {
    if (this.closed || Date.now() < this.pausedUntil || !this.keys.includes(key)) return;
    this.entry().then(
      (entry) => {
        if (this.closed || Date.now() < this.pausedUntil || !this.keys.includes(key)) return;
        const list = this.slots.get(key) ?? [];
        this.slots.set(key, list);
        while (list.length < this.o.size) {
          const slot = this.start(key, plan, entry);
          if (slot === null) return;
          list.push(slot);
        }
      },
      () => this.failed(),
    );
  }

  private start(key: string, plan: Plan, entry: string): Slot | null {
    let child: Child;
    try {
      child = startChild({ entry, bwrap: plan.bwrap, addons: plan.addons, shareNet: plan.shareNet, readDirs: plan.readDirs, rlimits: plan.rlimits ?? null }, this.o.boot(plan.warm));
    } catch {
      this.failed(); // e.g. no storage dir: calls start fresh children and report it themselves
      return null;
    }
    const slot: Slot = { child, ready: false, taken: false };
    const deadline = setTimeout(() => child.kill(), this.o.bootMs ?? POOL_BOOT_MS);
    deadline.unref();
    child.ready.then(
      () => {
        clearTimeout(deadline);
        slot.ready = true;
        this.failures = 0;
      },
      () => clearTimeout(deadline),
    );
    child.onExit(() => {
      clearTimeout(deadline);
      if (slot.taken || this.closed) return;
      // Died while pooled (a failed boot, or killed while idle): dropped, counted, replaced.
      const list = this.slots.get(key);
      if (list?.includes(slot)) list.splice(list.indexOf(slot), 1);
      this.failed();
      this.fill(key, plan);
    });
    return slot;
  }

  private failed(): void {
    this.failures += 1;
    if (this.failures >= FAILURES_BEFORE_PAUSE) {
      this.pausedUntil = Date.now() + Math.min(MAX_PAUSE_MS, PAUSE_MS * 2 ** (this.failures - FAILURES_BEFORE_PAUSE));
    }
  }
}
