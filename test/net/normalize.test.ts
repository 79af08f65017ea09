// Host normalization: which obfuscations WHATWG `new URL` already undoes (pinned here, so a Node
// upgrade that changed it would fail loudly), what normalize.ts adds, and URL acceptance.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NetError, normalizeHost, parseTargetUrl } from '../../src/net/index.ts';

const code = (c: NetError['code']) => (e: unknown) => e instanceof NetError && e.code === c;

test('WHATWG URL already turns every obfuscated IPv4 literal into dotted decimal', () => {
  for (const host of ['2130706433', '0177.0.0.1', '0x7f.1', '127.1', '0x7f000001', '0x7F.0.0.01', '0177.0x0.0.1',
    '00000177.0.0.1', '127.0.1', '127.0.0.1.', '%31%32%37.0.0.1', '０x7f.1', '①②⑦.0.0.1', '127。0。0。1']) {
    assert.equal(new URL(`http://${host}/`).hostname, '127.0.0.1', host);
    assert.deepEqual(parseTargetUrl(`http://${host}/`).host, '127.0.0.1', host);
  }
});

test('WHATWG URL compresses IPv6 and embedded IPv4; normalize strips the brackets', () => {
  for (const host of ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:FFFF:127.0.0.1]']) {
    assert.equal(new URL(`http://${host}/`).hostname, '[::ffff:7f00:1]', host);
    assert.deepEqual(parseTargetUrl(`http://${host}:8080/`), { ...parseTargetUrl(`http://${host}:8080/`), host: '::ffff:7f00:1', ip: 6, port: 8080 });
  }
});

test('WHATWG URL rejects zone ids and non-IPv4 numeric hosts; normalize reports INVALID', () => {
  for (const url of ['http://[fe80::1%25eth0]/', 'http://1.2.3.4.5/', 'http://4294967296/', 'http://09.0.0.1/', 'http://a b/', 'http://[::1/']) {
    assert.throws(() => new URL(url), url);
    assert.throws(() => parseTargetUrl(url), code('INVALID'), url);
  }
});

test('what WHATWG leaves, normalize handles: trailing dots and case on names', () => {
  assert.equal(new URL('http://LOCALHOST./').hostname, 'localhost.');
  assert.equal(parseTargetUrl('http://LOCALHOST./').host, 'localhost');
  assert.equal(parseTargetUrl('http://Metadata.Google.Internal./x').host, 'metadata.google.internal');
  assert.throws(() => parseTargetUrl('http://a..b/'), code('INVALID'));
  assert.throws(() => normalizeHost('localhost..'), code('INVALID'));
});

test('bare hosts (socket brokers) go through the same parser, with zone ids dropped', () => {
  assert.deepEqual(normalizeHost('2130706433'), { host: '127.0.0.1', ip: 4 });
  assert.deepEqual(normalizeHost('0x7f.1'), { host: '127.0.0.1', ip: 4 });
  assert.deepEqual(normalizeHost('::FFFF:127.0.0.1'), { host: '::ffff:7f00:1', ip: 6 });
  assert.deepEqual(normalizeHost('[::1]'), { host: '::1', ip: 6 });
  assert.deepEqual(normalizeHost('fe80::1%eth0'), { host: 'fe80::1', ip: 6 });
  assert.deepEqual(normalizeHost('[fe80::1%25eth0]'), { host: 'fe80::1', ip: 6 });
  assert.deepEqual(normalizeHost('Example.COM.'), { host: 'example.com', ip: 0 });
  assert.deepEqual(normalizeHost('пример.рф'), { host: 'xn--e1afmkfd.xn--p1ai', ip: 0 });
  for (const bad of ['', 'a/b', 'a@b', 'a:80', 'a b', 'x?y', 'x#y', 'a\\b', 'fe80::1%', 'fe80::1%a/b', '1.2.3.4.5', ':::']) {
    assert.throws(() => normalizeHost(bad), code('INVALID'), bad);
  }
});

test('only http: and https: are fetched; credentials in a url are refused', () => {
  for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'data:text/plain,hi', 'ws://example.com/', 'javascript:alert(1)']) {
    assert.throws(() => parseTargetUrl(url), code('DENIED'), url);
  }
  for (const url of ['http://user:pass@example.com/', 'http://user@example.com/', 'https://:pw@example.com/']) {
    assert.throws(() => parseTargetUrl(url), code('DENIED'), url);
  }
  assert.throws(() => parseTargetUrl('not a url'), code('INVALID'));
  assert.throws(() => parseTargetUrl(`http://example.com/${'a'.repeat(9000)}`), code('TOO_LARGE'));
});

test('ports: any valid port, defaults by scheme; the fragment is dropped', () => {
  assert.equal(parseTargetUrl('http://example.com/').port, 80);
  assert.equal(parseTargetUrl('https://example.com/').port, 443);
  assert.equal(parseTargetUrl('https://example.com:1/').port, 1);
  assert.equal(parseTargetUrl('http://example.com:65535/a#frag').url.href, 'http://example.com:65535/a');
  assert.throws(() => parseTargetUrl('http://example.com:65536/'), code('INVALID'));
});
