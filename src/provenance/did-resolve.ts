/**
 * Resolving a `did:web` signer's document for `requireSigned`: from the documents the operator
 * supplied (`didDocuments`), else — only when the operator turned it on (`didWebFetch`) — from
 * `https://HOST[:PORT]/.well-known/did.json` through the network guard (net/fetch.ts: the same
 * floor, pinning and allowCidrs a guest's fetch gets; no redirects; a small body cap).
 *
 * Owns: the did:web → URL mapping (host and port only: `did:web:HOST` or `did:web:HOST%3APORT`;
 * path-form DIDs are refused), the fetch bounds, and a short cache of fetched documents.
 * Invariant: a document is used for a DID only if its own `id` is that DID (a document supplied or
 * served under one name cannot vouch for another); nothing is fetched unless `fetch` is on, and
 * then only over https through the guard; every failure is a reason, never a throw.
 *
 * Does not protect against: the host (or whoever controls its DNS and TLS certificate) publishing
 * another key — did:web trusts the web host by design; a fetched document is believed for up to
 * `DID_CACHE_MS` after a swap on the host.
 */

import { guardedFetch, type FetchOptions } from '../net/fetch.ts';

/** A fetched document larger than this is not one. */
export const MAX_DID_DOCUMENT_BYTES = 64 * 1024;
/** Fetched documents are reused this long. */
export const DID_CACHE_MS = 60_000;
export const DID_FETCH_TIMEOUT_MS = 5_000;
const MAX_CACHED = 64;
const HOST = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

export interface DidResolverOptions {
  /** Operator-supplied documents, keyed by DID (`did:web:example.com`). */
  readonly documents?: Readonly<Record<string, unknown>>;
  /** Fetch unsupplied did:web documents through the network guard (off by default). */
  readonly fetch?: boolean;
  /** The guard's settings for that fetch (the engine's `brokers.net`: allowCidrs, resolver; tests: ca). */
  readonly net?: Pick<FetchOptions, 'allowCidrs' | 'resolver' | 'ca'>;
}

export type Resolved = { readonly doc: unknown; readonly source: 'supplied' | 'fetched' } | { readonly reason: string };

/** `https://HOST[:PORT]/.well-known/did.json` for a host-form did:web, or null. */
export function didWebUrl(did: string): string | null {
  if (typeof did !== 'string' || !did.startsWith('did:web:')) return null;
  const rest = did.slice('did:web:'.length);
  if (rest.includes(':')) return null; // path-form did:web (did:web:host:path) is not supported
  const m = /^([^%]+)(?:%3[Aa](\d{1,5}))?$/.exec(rest);
  if (!m || !HOST.test(m[1]!) || (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535))) return null;
  return `https://${m[1]}${m[2] !== undefined ? `:${m[2]}` : ''}/.well-known/did.json`;
}

const idOf = (doc: unknown): unknown => (doc !== null && typeof doc === 'object' && !Array.isArray(doc) ? (doc as Record<string, unknown>)['id'] : undefined);

export class DidResolver {
  private readonly supplied: ReadonlyMap<string, unknown>;
  private readonly cache = new Map<string, { doc: unknown; until: number }>();

  constructor(private readonly options: DidResolverOptions = {}) {
    this.supplied = new Map(Object.entries(options.documents ?? {}));
  }

  /** The document for `did`, or why there is none. */
  async resolve(did: string): Promise<Resolved> {
    if (didWebUrl(did) === null) return { reason: `${did.slice(0, 120)} is not a host-form did:web (did:web:HOST or did:web:HOST%3APORT)` };
    if (this.supplied.has(did)) {
      const doc = this.supplied.get(did);
      return idOf(doc) === did ? { doc, source: 'supplied' } : { reason: `the DID document supplied for ${did} names another DID (${String(idOf(doc)).slice(0, 120)})` };
    }
    if (!this.options.fetch) return { reason: `no DID document for ${did}: supply it (didDocuments / --did-doc) or turn on didWebFetch` };
    const hit = this.cache.get(did);
    if (hit && hit.until > Date.now()) return { doc: hit.doc, source: 'fetched' };
    const fetched = await this.fetchDocument(did);
    if ('doc' in fetched) {
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(did, { doc: fetched.doc, until: Date.now() + DID_CACHE_MS });
    }
    return fetched;
  }

  private async fetchDocument(did: string): Promise<Resolved> {
    const url = didWebUrl(did)!;
    let text: string;
    try {
      const res = await guardedFetch({ url, method: 'GET', headers: { accept: 'application/did+json, application/json' } }, { ...this.options.net, maxRedirects: 0, maxBodyBytes: MAX_DID_DOCUMENT_BYTES, timeoutMs: DID_FETCH_TIMEOUT_MS });
      if (res.status !== 200) return { reason: `fetching ${url} answered HTTP ${res.status}` };
      text = new TextDecoder('utf-8', { fatal: true }).decode(res.body);
    } catch (e) {
      const code = e !== null && typeof e === 'object' && 'code' in e ? String((e as { code: unknown }).code) : 'UNAVAILABLE';
      const message = e instanceof Error ? e.message.slice(0, 200) : '';
      return { reason: `fetching ${url} failed through the network guard: ${code}${message ? ` (${message})` : ''}` };
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      return { reason: `${url} is not a JSON DID document` };
    }
    return idOf(doc) === did ? { doc, source: 'fetched' } : { reason: `the document at ${url} names another DID (${String(idOf(doc)).slice(0, 120)})` };
  }
}
