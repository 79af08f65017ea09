// Address classification: only public unicast passes; every special-purpose range, and every
// IPv6 form that embeds a refused IPv4 address, is refused; the operator allowlist admits ranges.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { NetError, classifyAddress, parseAllowCidrs, parseIp } from '../../src/net/index.ts';

const REFUSED: readonly string[] = [
  // IPv4 (IANA IPv4 special-purpose registry + multicast)
  '0.0.0.0', '0.255.255.255', '10.0.0.1', '10.255.255.255', '100.64.0.1', '100.127.255.255', '100.100.100.200',
  '127.0.0.1', '127.255.255.254', '169.254.0.1', '169.254.169.254', '172.16.0.1', '172.31.255.255',
  '192.0.0.1', '192.0.0.170', '192.0.2.1', '192.31.196.1', '192.52.193.1', '192.88.99.1', '192.168.0.1',
  '192.168.255.255', '192.175.48.1', '198.18.0.1', '198.19.255.255', '198.51.100.1', '203.0.113.1',
  '224.0.0.1', '239.255.255.250', '240.0.0.1', '250.1.2.3', '255.255.255.255',
  // IPv6
  '::', '::1', '0:0:0:0:0:0:0:1', 'fe80::1', 'fe80::1%eth0', 'febf::1', 'fc00::1', 'fd00::2', 'fd00:ec2::254',
  'ff02::1', 'ff0e::1', 'fec0::1', '100::1', '100:0:0:1::1', '2001:db8::1', '2001:db8:ffff::1', '3fff::1',
  '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:2::1', '2001:10::1', '2001:20::1', '2620:4f:8000::1',
  '5f00::1', '64:ff9b:1::a00:1', '::2', '1::1', '4000::1', 'e000::1',
  // IPv4 embedded in IPv6
  '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '::ffff:10.0.0.1', '::ffff:0.0.0.0',
  '::127.0.0.1', '::7f00:1', '::8.8.8.8', '::ffff:0:127.0.0.1', '::ffff:0:808:808',
  '64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe', '64:ff9b::c0a8:101', '64:ff9b::ffff:ffff',
  '2002:7f00:1::1', '2002:c0a8:101::1', '2002:a9fe:a9fe::', '2002:808:808::1',
];

const ALLOWED: readonly string[] = [
  '1.1.1.1', '8.8.8.8', '93.184.216.34', '100.63.255.255', '100.128.0.0', '172.15.255.255', '172.32.0.0',
  '192.0.1.255', '192.0.3.0', '192.167.255.255', '192.169.0.0', '198.17.255.255', '198.20.0.0', '223.255.255.255',
  '2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001::1', '2001:200::1',
  '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::8.8.8.8', '64:ff9b::808:808',
];

const NOT_ADDRESSES = ['', 'localhost', '0177.0.0.1', '127.1', '2130706433', '0x7f.0.0.1', '01.2.3.4', '1.2.3.256',
  '1.2.3', '1:2:3:4:5:6:7:8:9', '1::2::3', ':1::', '1::2:', 'g::1', '::1.2.3', '1.2.3.4::', '[::1', '::ffff:1.2.3.4.5'];

test('every special-purpose, private, loopback, link-local, multicast and reserved address is refused', () => {
  for (const a of REFUSED) {
    const v = classifyAddress(a);
    assert.equal(v.allowed, false, `${a} should be refused`);
    assert.notEqual(v.reason, 'public', a);
  }
});

test('public unicast addresses, including their IPv4-mapped and NAT64 forms, are allowed', () => {
  for (const a of ALLOWED) assert.equal(classifyAddress(a).allowed, true, `${a} should be allowed (${classifyAddress(a).reason})`);
});

test('anything that is not canonical address text is refused, never guessed at', () => {
  for (const a of NOT_ADDRESSES) {
    assert.equal(parseIp(a), null, a);
    assert.equal(classifyAddress(a).allowed, false, a);
  }
});

test('the refusal names the range and the embedded form', () => {
  assert.match(classifyAddress('169.254.169.254').reason, /link-local.*169\.254\.169\.254/);
  assert.match(classifyAddress('::ffff:127.0.0.1').reason, /^IPv4-mapped loopback/);
  assert.match(classifyAddress('64:ff9b::a9fe:a9fe').reason, /^NAT64.*link-local/);
  assert.match(classifyAddress('2002:c0a8:101::1').reason, /^6to4.*private/);
  assert.match(classifyAddress('fe80::1%eth0').reason, /link-local/);
  assert.equal(classifyAddress('fe80::1%eth0').address, 'fe80::1');
});

test('the allowlist admits exactly its ranges (and the IPv4-mapped form of an IPv4 entry)', () => {
  const allow = parseAllowCidrs(['127.0.0.1/32', '10.1.0.0/16', 'fd00::/64']);
  assert.equal(classifyAddress('127.0.0.1', allow).reason, 'allowlisted');
  assert.equal(classifyAddress('::ffff:127.0.0.1', allow).allowed, true);
  assert.equal(classifyAddress('127.0.0.2', allow).allowed, false);
  assert.equal(classifyAddress('10.1.255.255', allow).allowed, true);
  assert.equal(classifyAddress('10.2.0.0', allow).allowed, false);
  assert.equal(classifyAddress('fd00::2', allow).allowed, true);
  assert.equal(classifyAddress('fd00:0:0:1::2', allow).allowed, false);
  assert.equal(classifyAddress('169.254.169.254', allow).allowed, false);
});

test('the default allowlist is empty and a malformed entry is INVALID', () => {
  assert.equal(classifyAddress('127.0.0.1').allowed, false);
  assert.equal(parseAllowCidrs().ranges.length, 0);
  for (const bad of ['127.0.0.1/33', '::1/129', 'localhost/8', '127.1/32', '10.0.0.0/x', '10.0.0.0/']) {
    assert.throws(() => parseAllowCidrs([bad]), (e: unknown) => e instanceof NetError && e.code === 'INVALID', bad);
  }
});

const hex = (a: number, b: number): string => ((a << 8) | b).toString(16);

/** An IPv4 address inside one of the refused IPv4 ranges. */
const refusedV4 = fc.oneof(
  ...(
    [
      [[0, 0, 0, 0], 8], [[10, 0, 0, 0], 8], [[100, 64, 0, 0], 10], [[127, 0, 0, 0], 8], [[169, 254, 0, 0], 16],
      [[172, 16, 0, 0], 12], [[192, 0, 0, 0], 24], [[192, 0, 2, 0], 24], [[192, 168, 0, 0], 16], [[198, 18, 0, 0], 15],
      [[198, 51, 100, 0], 24], [[203, 0, 113, 0], 24], [[224, 0, 0, 0], 4], [[240, 0, 0, 0], 4],
    ] as const
  ).map(([net, bits]) =>
    fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((host) => {
      const n = (((net[0] << 24) | (net[1] << 16) | (net[2] << 8) | net[3]) >>> 0) + host;
      return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255] as const;
    }),
  ),
);

test('property: a refused IPv4 address is refused in every IPv6 form that embeds it', () => {
  fc.assert(
    fc.property(refusedV4, ([a, b, c, d]) => {
      const dotted = `${a}.${b}.${c}.${d}`;
      const forms = [
        dotted,
        `::ffff:${dotted}`,
        `::ffff:${hex(a, b)}:${hex(c, d)}`,
        `0:0:0:0:0:ffff:${hex(a, b)}:${hex(c, d)}`,
        `64:ff9b::${dotted}`,
        `64:ff9b::${hex(a, b)}:${hex(c, d)}`,
        `::${dotted}`,
        `2002:${hex(a, b)}:${hex(c, d)}::1`,
      ];
      for (const f of forms) assert.equal(classifyAddress(f).allowed, false, f);
    }),
    { numRuns: 2000 },
  );
});

test('property: a public IPv4 address is allowed as itself, IPv4-mapped and NAT64 alike', () => {
  fc.assert(
    fc.property(fc.tuple(fc.integer({ min: 0, max: 255 }), fc.nat(255), fc.nat(255), fc.nat(255)), ([a, b, c, d]) => {
      const dotted = `${a}.${b}.${c}.${d}`;
      const plain = classifyAddress(dotted).allowed;
      assert.equal(classifyAddress(`::ffff:${dotted}`).allowed, plain, dotted);
      assert.equal(classifyAddress(`64:ff9b::${hex(a, b)}:${hex(c, d)}`).allowed, plain, dotted);
    }),
    { numRuns: 2000 },
  );
});
