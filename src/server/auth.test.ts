import { describe, expect, it } from 'vitest';
import { allowedHostHeaders, isLoopbackHost, keyMatches, originAllowed } from './auth.js';

const KEY = 'dk_3f9a8c7e6b5d4c3b2a19';

describe('keyMatches', () => {
  it('accepts the exact key with the Bearer scheme', () => {
    expect(keyMatches(`Bearer ${KEY}`, KEY)).toBe(true);
  });

  it.each(['bearer', 'BEARER', 'BeArEr'])('treats the scheme case-insensitively (%s)', (scheme) => {
    expect(keyMatches(`${scheme} ${KEY}`, KEY)).toBe(true);
  });

  it('compares the key itself case-sensitively', () => {
    expect(keyMatches(`Bearer ${KEY.toUpperCase()}`, KEY)).toBe(false);
  });

  it('tolerates several spaces or a tab after the scheme and trailing whitespace', () => {
    expect(keyMatches(`Bearer    ${KEY}`, KEY)).toBe(true);
    expect(keyMatches(`Bearer\t${KEY}`, KEY)).toBe(true);
    expect(keyMatches(`Bearer ${KEY}   `, KEY)).toBe(true);
    expect(keyMatches(`Bearer ${KEY}\t`, KEY)).toBe(true);
  });

  it('refuses leading whitespace, a missing separator and extra words', () => {
    expect(keyMatches(` Bearer ${KEY}`, KEY)).toBe(false);
    expect(keyMatches(`Bearer${KEY}`, KEY)).toBe(false);
    expect(keyMatches(`Bearer ${KEY} extra`, KEY)).toBe(false);
    expect(keyMatches(`Bearer ${KEY} ${KEY}`, KEY)).toBe(false);
    expect(keyMatches(`Bearer Bearer ${KEY}`, KEY)).toBe(false);
  });

  it('refuses a wrong key, a prefix of the key and the key with extra characters', () => {
    expect(keyMatches('Bearer wrong', KEY)).toBe(false);
    expect(keyMatches(`Bearer ${KEY.slice(0, -1)}`, KEY)).toBe(false);
    expect(keyMatches(`Bearer ${KEY}x`, KEY)).toBe(false);
    expect(keyMatches(`Bearer x${KEY}`, KEY)).toBe(false);
  });

  it('refuses a missing or empty header', () => {
    expect(keyMatches(undefined, KEY)).toBe(false);
    expect(keyMatches('', KEY)).toBe(false);
    expect(keyMatches('Bearer', KEY)).toBe(false);
    expect(keyMatches('Bearer ', KEY)).toBe(false);
  });

  it('never matches an empty configured key', () => {
    expect(keyMatches('Bearer ', '')).toBe(false);
    expect(keyMatches('Bearer', '')).toBe(false);
    expect(keyMatches('Bearer x', '')).toBe(false);
    expect(keyMatches('', '')).toBe(false);
    expect(keyMatches(undefined, '')).toBe(false);
  });

  it.each([
    ['Basic', `Basic ${Buffer.from(`user:${KEY}`).toString('base64')}`],
    ['Basic with the raw key', `Basic ${KEY}`],
    ['Token', `Token ${KEY}`],
    ['Digest', `Digest ${KEY}`],
    ['no scheme', KEY],
    ['Bearer as a suffix', `XBearer ${KEY}`],
    ['colon separator', `Bearer:${KEY}`],
  ])('refuses other schemes: %s', (_name, header) => {
    expect(keyMatches(header, KEY)).toBe(false);
  });

  it('handles keys of very different lengths without throwing', () => {
    // timingSafeEqual throws on unequal lengths; hashing first must prevent that.
    expect(keyMatches('Bearer a', 'x'.repeat(500))).toBe(false);
    expect(keyMatches(`Bearer ${'y'.repeat(10_000)}`, 'short')).toBe(false);
    const long = 'k'.repeat(4096);
    expect(keyMatches(`Bearer ${long}`, long)).toBe(true);
  });

  it('accepts keys with punctuation and non-ASCII characters', () => {
    expect(keyMatches('Bearer a.b-c_d~e+f/g=', 'a.b-c_d~e+f/g=')).toBe(true);
    expect(keyMatches('Bearer clé-ü', 'clé-ü')).toBe(true);
    expect(keyMatches('Bearer cle-u', 'clé-ü')).toBe(false);
  });
});

describe('isLoopbackHost', () => {
  it.each(['127.0.0.1', 'localhost', '::1', '127.0.0.2', '127.1.2.3', '127.255.255.254'])('%s is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  it.each([
    '0.0.0.0',
    '::',
    '192.168.1.10',
    '10.0.0.1',
    '128.0.0.1',
    '1.127.0.0',
    'example.com',
    '', // empty
    '[::1]', // bracketed form is a Host header spelling, not a bind address
    'LOCALHOST.', // trailing-dot FQDN
    'localhost.example.com',
    '127.example.com', // a name that merely starts with "127." may resolve anywhere
    '127.0.0.1.nip.io',
    '127.0.0.1.',
    '127.999.0.1',
    '::ffff:10.0.0.1',
  ])('%j is not loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('allowedHostHeaders', () => {
  const loopback = (port: number) => [
    '127.0.0.1',
    `127.0.0.1:${port}`,
    'localhost',
    `localhost:${port}`,
    '[::1]',
    `[::1]:${port}`,
  ];

  it('allows the loopback names with and without the port for a loopback bind', () => {
    expect([...allowedHostHeaders('127.0.0.1', 3000, [])].sort()).toEqual(loopback(3000).sort());
  });

  it('adds nothing for 0.0.0.0 or :: (the wildcard is not a name clients use)', () => {
    const v4 = allowedHostHeaders('0.0.0.0', 8080, []);
    expect([...v4].sort()).toEqual(loopback(8080).sort());
    expect(v4.has('0.0.0.0')).toBe(false);
    expect(v4.has('0.0.0.0:8080')).toBe(false);
    const v6 = allowedHostHeaders('::', 8080, []);
    expect([...v6].sort()).toEqual(loopback(8080).sort());
    expect(v6.has('[::]:8080')).toBe(false);
  });

  it('adds a specific bound IPv4 address or name', () => {
    const allowed = allowedHostHeaders('192.168.1.5', 4000, []);
    expect([...allowed].sort()).toEqual([...loopback(4000), '192.168.1.5', '192.168.1.5:4000'].sort());
  });

  it('brackets a bound IPv6 literal', () => {
    const allowed = allowedHostHeaders('fe80::1', 4000, []);
    expect(allowed.has('[fe80::1]')).toBe(true);
    expect(allowed.has('[fe80::1]:4000')).toBe(true);
    expect(allowed.has('fe80::1')).toBe(false);
    expect(allowed.size).toBe(8);
  });

  it('does not duplicate ::1 (it is already a loopback name)', () => {
    expect([...allowedHostHeaders('::1', 3000, [])].sort()).toEqual(loopback(3000).sort());
  });

  it('lower-cases bound names and extra names', () => {
    const allowed = allowedHostHeaders('MyBox.Local', 80, ['Debug.Example.COM']);
    expect(allowed.has('mybox.local')).toBe(true);
    expect(allowed.has('mybox.local:80')).toBe(true);
    expect(allowed.has('debug.example.com')).toBe(true);
    expect(allowed.has('debug.example.com:80')).toBe(true);
    expect(allowed.has('Debug.Example.COM')).toBe(false);
    expect(allowed.size).toBe(10);
  });

  it('adds the operator\'s extra names', () => {
    const allowed = allowedHostHeaders('127.0.0.1', 3000, ['devbox', 'devbox.lan']);
    expect([...allowed].sort()).toEqual([...loopback(3000), 'devbox', 'devbox:3000', 'devbox.lan', 'devbox.lan:3000'].sort());
  });

  it('does not allow foreign hosts, other ports or prefix tricks', () => {
    const allowed = allowedHostHeaders('127.0.0.1', 3000, []);
    for (const host of ['evil.com', 'evil.com:3000', 'localhost:3001', '127.0.0.1:30000', 'localhost.evil.com', '127.0.0.1.nip.io:3000', '0.0.0.0:3000', '', ':3000']) {
      expect(allowed.has(host), host).toBe(false);
    }
  });
});

describe('originAllowed', () => {
  const allowed = allowedHostHeaders('127.0.0.1', 3000, []);

  it('allows a request without an Origin (non-browser clients)', () => {
    expect(originAllowed(undefined, allowed)).toBe(true);
  });

  it.each([
    'http://localhost:3000',
    'http://127.0.0.1:3000',
    'http://[::1]:3000',
    'https://localhost:3000',
    'http://localhost',
    'http://LOCALHOST:3000',
    'http://localhost:3000/some/path?q=1',
  ])('allows loopback origin %s', (origin) => {
    expect(originAllowed(origin, allowed)).toBe(true);
  });

  it('allows a default port that URL drops (the bare name is allowed)', () => {
    expect(originAllowed('http://localhost:80', allowed)).toBe(true);
    expect(originAllowed('https://127.0.0.1:443', allowed)).toBe(true);
  });

  it.each([
    'http://evil.com',
    'http://evil.com:3000',
    'http://localhost:3001',
    'http://localhost.evil.com:3000',
    'http://127.0.0.1.nip.io:3000',
    'http://localhost:3000@evil.com',
    'http://0.0.0.0:3000',
    'http://[::2]:3000',
  ])('refuses foreign origin %s', (origin) => {
    expect(originAllowed(origin, allowed)).toBe(false);
  });

  it.each(['', 'null', 'localhost:3000', 'not a url', '://localhost:3000', 'http://[::1:3000'])('refuses malformed origin %j', (origin) => {
    expect(originAllowed(origin, allowed)).toBe(false);
  });

  it('refuses origins whose scheme carries no host', () => {
    expect(originAllowed('file:///etc/passwd', allowed)).toBe(false);
    expect(originAllowed('data:text/html,hi', allowed)).toBe(false);
  });

  it('allows an operator-added name, and nothing when the set is empty', () => {
    const withExtra = allowedHostHeaders('0.0.0.0', 8080, ['devbox.lan']);
    expect(originAllowed('http://devbox.lan:8080', withExtra)).toBe(true);
    expect(originAllowed('http://devbox.lan:9090', withExtra)).toBe(false);
    expect(originAllowed('http://localhost:8080', new Set())).toBe(false);
    expect(originAllowed(undefined, new Set())).toBe(true);
  });
});
