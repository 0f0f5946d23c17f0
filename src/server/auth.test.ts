import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { allowedHostRules, authorizationFields, bearerChallenge, hostAllowed, isLoopbackHost, isOAuthProbe, keyMatches, NO_OAUTH, originAllowed, parseHostHeader, sameOrigin } from './auth.js';

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

describe('hostAllowed (the Host header, against DNS rebinding)', () => {
  const loopbackBind = allowedHostRules('127.0.0.1', []);

  it.each(['localhost', 'localhost:7412', 'localhost:9000', '127.0.0.1', '127.0.0.1:1', '127.0.0.1:65535', '[::1]', '[::1]:9000', 'LOCALHOST:9000', '127.0.0.2:80', '[0:0:0:0:0:0:0:1]:9000'])(
    'accepts the loopback name %s on any port (an SSH tunnel, a proxy)',
    (host) => {
      expect(hostAllowed(host, loopbackBind)).toBe(true);
    },
  );

  it.each([
    'evil.com',
    'evil.com:7412',
    'localhost.evil.com',
    'localhost.evil.com:7412',
    '127.0.0.1.nip.io:7412',
    '127.example.com',
    'evil.com@localhost',
    'localhost:7412@evil.com',
    'localhost/evil',
    'localhost:',
    ':7412',
    'localhost:0',
    'localhost:65536',
    'localhost:99999',
    'localhost:7412:7412',
    'localhost.',
    '[::2]:7412',
    '[::1',
    '0.0.0.0:7412',
    '',
    ' localhost',
    'local host',
  ])('refuses %j', (host) => {
    expect(hostAllowed(host, loopbackBind)).toBe(false);
  });

  it('refuses a missing Host header', () => {
    expect(hostAllowed(undefined, loopbackBind)).toBe(false);
  });

  it('accepts the address the server is bound to on any port, never the wildcard', () => {
    expect(hostAllowed('192.168.1.5:9000', allowedHostRules('192.168.1.5', []))).toBe(true);
    expect(hostAllowed('192.168.1.6', allowedHostRules('192.168.1.5', []))).toBe(false);
    expect(hostAllowed('[fe80::1]:4000', allowedHostRules('fe80::1', []))).toBe(true);
    expect(hostAllowed('[FE80:0::1]', allowedHostRules('fe80::1', []))).toBe(true);
    expect(hostAllowed('fe80::1', allowedHostRules('fe80::1', []))).toBe(false); // an IPv6 Host needs its brackets
    for (const wildcard of ['0.0.0.0', '::']) {
      expect(allowedHostRules(wildcard, [])).toEqual([]);
      expect(hostAllowed('0.0.0.0:7412', allowedHostRules(wildcard, []))).toBe(false);
      expect(hostAllowed('localhost:7412', allowedHostRules(wildcard, []))).toBe(true);
    }
  });

  it('accepts --allowed-host names on any port, or on the one port given, in any case', () => {
    const rules = allowedHostRules('127.0.0.1', ['Debug.Example.COM', 'devbox.lan:8443', '[fd00::7]']);
    expect(hostAllowed('debug.example.com', rules)).toBe(true);
    expect(hostAllowed('DEBUG.example.com:9000', rules)).toBe(true);
    expect(hostAllowed('devbox.lan:8443', rules)).toBe(true);
    expect(hostAllowed('devbox.lan:8444', rules)).toBe(false);
    expect(hostAllowed('devbox.lan', rules)).toBe(false);
    expect(hostAllowed('[fd00::7]:1234', rules)).toBe(true);
    expect(hostAllowed('example.com', rules)).toBe(false);
    expect(hostAllowed('x.debug.example.com', rules)).toBe(false);
  });

  it('refuses an --allowed-host value that is not a host name, at start', () => {
    for (const bad of ['http://devbox', 'devbox/', 'a b', '', 'devbox:0', 'user@devbox']) {
      expect(() => allowedHostRules('127.0.0.1', [bad]), bad).toThrow(/--allowed-host/);
    }
  });

  it('parses Host values into a canonical name and port', () => {
    expect(parseHostHeader('LocalHost:9000')).toEqual({ name: 'localhost', port: 9000 });
    expect(parseHostHeader('[::1]')).toEqual({ name: '[::1]' });
    expect(parseHostHeader('[0::1]:80')).toEqual({ name: '[::1]', port: 80 });
    expect(parseHostHeader('evil.com@localhost')).toBeUndefined();
  });
});

describe('originAllowed', () => {
  const rules = allowedHostRules('127.0.0.1', []);

  it('allows a request without an Origin (non-browser clients)', () => {
    expect(originAllowed(undefined, rules)).toBe(true);
  });

  it.each([
    'http://localhost:3000',
    'http://localhost:9000',
    'http://127.0.0.1:7412',
    'http://[::1]:3000',
    'https://localhost:3000',
    'http://localhost',
    'http://LOCALHOST:3000',
    'http://localhost:3000/some/path?q=1',
    'https://127.0.0.1:443',
  ])('allows loopback origin %s, on any port', (origin) => {
    expect(originAllowed(origin, rules)).toBe(true);
  });

  it.each([
    'http://evil.com',
    'http://evil.com:3000',
    'http://localhost.evil.com:3000',
    'http://127.0.0.1.nip.io:3000',
    'http://localhost:3000@evil.com',
    'http://user:pw@localhost:3000',
    'http://0.0.0.0:3000',
    'http://[::2]:3000',
  ])('refuses foreign origin %s', (origin) => {
    expect(originAllowed(origin, rules)).toBe(false);
  });

  it.each(['', 'null', 'localhost:3000', 'not a url', '://localhost:3000', 'http://[::1:3000'])('refuses malformed origin %j', (origin) => {
    expect(originAllowed(origin, rules)).toBe(false);
  });

  it('refuses origins whose scheme carries no host or is not the web', () => {
    expect(originAllowed('file:///etc/passwd', rules)).toBe(false);
    expect(originAllowed('data:text/html,hi', rules)).toBe(false);
    expect(originAllowed('ftp://localhost:21', rules)).toBe(false);
  });

  it('allows an operator-added name as a Host would be: any port, or the port given (default ports included)', () => {
    const withExtra = allowedHostRules('0.0.0.0', ['devbox.lan', 'secure.lan:443']);
    expect(originAllowed('http://devbox.lan:8080', withExtra)).toBe(true);
    expect(originAllowed('http://devbox.lan:9090', withExtra)).toBe(true);
    expect(originAllowed('https://secure.lan', withExtra)).toBe(true);
    expect(originAllowed('http://secure.lan', withExtra)).toBe(false);
    expect(originAllowed('http://other.lan', withExtra)).toBe(false);
  });
});

describe('sameOrigin (required under --no-auth)', () => {
  it.each([
    [undefined, 'localhost:7412'],
    ['http://localhost:7412', 'localhost:7412'],
    ['http://LOCALHOST:7412', 'localhost:7412'],
    ['http://localhost:9000', 'localhost:9000'],
    ['http://localhost', 'localhost'],
    ['http://localhost:80', 'localhost'],
    ['https://localhost', 'localhost:443'],
    ['http://[::1]:9000', '[::1]:9000'],
  ])('%s to Host %s is the same origin', (origin, host) => {
    expect(sameOrigin(origin, host)).toBe(true);
  });

  it.each([
    ['http://localhost:3000', 'localhost:7412'],
    ['http://127.0.0.1:7412', 'localhost:7412'],
    ['http://evil.com:7412', 'localhost:7412'],
    ['null', 'localhost:7412'],
    ['http://localhost:7412', undefined],
    ['http://localhost:7412', 'evil.com@localhost:7412'],
  ])('%s to Host %s is not', (origin, host) => {
    expect(sameOrigin(origin, host)).toBe(false);
  });
});

describe('the 401 challenge, duplicated Authorization, OAuth probes', () => {
  it('names the error and how to authenticate, with no quote that could end the parameter', () => {
    expect(bearerChallenge('invalid_request')).toBe('Bearer realm="debugkit", error="invalid_request", error_description="send the API key as Authorization: Bearer KEY"');
    expect(bearerChallenge('invalid_token', 'key "x"\r\nSet-Cookie: a')).toBe(`Bearer realm="debugkit", error="invalid_token", error_description="key 'x'''Set-Cookie: a"`);
  });

  it('counts every Authorization field, not the one Node keeps', () => {
    const req = (headersDistinct: Record<string, string[]>, authorization?: string) => ({ headersDistinct, headers: { authorization } }) as unknown as IncomingMessage;
    expect(authorizationFields(req({}))).toBe(0);
    expect(authorizationFields(req({ authorization: ['Bearer a'] }, 'Bearer a'))).toBe(1);
    expect(authorizationFields(req({ authorization: ['Bearer a', 'Bearer b'] }, 'Bearer a'))).toBe(2);
  });

  it.each([
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/mcp',
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/mcp',
    '/.well-known/openid-configuration',
    '/.well-known/openid-configuration/mcp',
    '/mcp/.well-known/openid-configuration',
    '/mcp/.well-known/oauth-authorization-server',
    '/mcp/.well-known/oauth-protected-resource',
    '/register',
    '/authorize',
    '/token',
  ])('%s is an OAuth probe', (path) => {
    expect(isOAuthProbe(path)).toBe(true);
  });

  it.each(['/mcp', '/sessions', '/sessions/x', '/.well-known/security.txt', '/.well-known', '/registerx', '/x/register', '/.well-known/oauth-protected-resourcex'])('%s is not', (path) => {
    expect(isOAuthProbe(path)).toBe(false);
  });

  it('answers with an RFC 6749 error body, which the MCP SDK shows its description of', () => {
    expect(NO_OAUTH.error).toBe('invalid_request');
    expect(NO_OAUTH.error_description).toMatch(/^debugkit does not use OAuth: send the API key as Authorization: Bearer KEY/);
  });
});
