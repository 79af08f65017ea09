/**
 * Throwaway X.509 certificates for the TLS tests, made with node:crypto alone (no openssl CLI):
 * EC P-256 keys, ECDSA-SHA256 signatures, a DER encoder for the few ASN.1 types a certificate
 * needs. Test material only: no name constraints, no revocation, fixed short validity.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

const der = (tag: number, body: Buffer): Buffer => {
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  if (n > 0xffff) throw new Error('DER value too long for this encoder');
  return Buffer.concat([Buffer.from([tag]), len, body]);
};
const seq = (...items: Buffer[]): Buffer => der(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => der(0x31, Buffer.concat(items));
const ctx = (n: number, body: Buffer): Buffer => der(0xa0 + n, body);
const bool = (v: boolean): Buffer => der(0x01, Buffer.from([v ? 0xff : 0]));
const octets = (b: Buffer): Buffer => der(0x04, b);
const bits = (b: Buffer): Buffer => der(0x03, Buffer.concat([Buffer.from([0]), b]));
const utf8 = (s: string): Buffer => der(0x0c, Buffer.from(s, 'utf8'));

function int(v: number): Buffer {
  let hex = v.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let b = Buffer.from(hex, 'hex');
  if (b[0]! & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return der(0x02, b);
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return der(0x06, Buffer.from(out));
}

function utcTime(d: Date): Buffer {
  const p = (n: number): string => String(n).padStart(2, '0');
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return der(0x17, Buffer.from(s, 'ascii'));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const name = (cn: string): Buffer => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const ext = (id: string, critical: boolean, value: Buffer): Buffer => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

export interface Issued {
  readonly cert: string;
  readonly key: string;
  readonly privateKey: KeyObject;
}

export interface CertSpec {
  readonly commonName: string;
  readonly serial: number;
  /** Issuer: omitted for a self-signed CA. */
  readonly issuer?: { readonly commonName: string; readonly privateKey: KeyObject };
  readonly ca?: boolean;
  /** A DNS subjectAltName (leaf certificates). */
  readonly dnsName?: string;
  readonly days: number;
}

/** A certificate and its fresh P-256 key, both PEM. */
export function issue(spec: CertSpec): Issued {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const now = Date.now();
  const extensions: Buffer[] = [];
  if (spec.ca === true) {
    extensions.push(ext('2.5.29.19', true, seq(bool(true))));
    // keyUsage keyCertSign | cRLSign: bits 5 and 6 → 0x06, 1 unused bit.
    extensions.push(ext('2.5.29.15', true, der(0x03, Buffer.from([0x01, 0x06]))));
  } else {
    extensions.push(ext('2.5.29.19', false, seq()));
    extensions.push(ext('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))));
  }
  if (spec.dnsName !== undefined) extensions.push(ext('2.5.29.17', false, seq(der(0x82, Buffer.from(spec.dnsName, 'ascii')))));
  const tbs = seq(
    ctx(0, int(2)),
    int(spec.serial),
    ECDSA_SHA256,
    name(spec.issuer?.commonName ?? spec.commonName),
    seq(utcTime(new Date(now - 60_000)), utcTime(new Date(now + spec.days * 86_400_000))),
    name(spec.commonName),
    publicKey.export({ format: 'der', type: 'spki' }),
    ctx(3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, spec.issuer?.privateKey ?? privateKey);
  const certDer = seq(tbs, ECDSA_SHA256, bits(signature));
  const b64 = certDer.toString('base64').replace(/.{1,64}/g, '$&\n');
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${b64}-----END CERTIFICATE-----\n`,
    key: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    privateKey,
  };
}
