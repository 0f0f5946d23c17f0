import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findProxychains, proxiedCommand, writeProxychainsConfig } from './proxychains.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'debugkit-pc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeProxychainsConfig', () => {
  it('writes a private strict, quiet, proxy_dns config whose only proxy is ours', () => {
    const file = writeProxychainsConfig(dir, 40001, { httpPort: 40002 });
    expect(file).toBe(path.join(dir, 'proxychains.conf'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const lines = readFileSync(file, 'utf8').split('\n');
    for (const line of ['strict_chain', 'quiet_mode', 'proxy_dns', 'remote_dns_subnet 224', 'tcp_connect_time_out 5000', 'tcp_read_time_out 10000']) {
      expect(lines).toContain(line);
    }
    // Only our own ports bypass the chain; loopback as a whole is captured.
    expect(lines.filter((l) => l.startsWith('localnet'))).toEqual(['localnet 127.0.0.1:40001/255.255.255.255', 'localnet 127.0.0.1:40002/255.255.255.255']);
    expect(lines.slice(lines.indexOf('[ProxyList]'))).toEqual(['[ProxyList]', 'socks5 127.0.0.1 40001', '']);
  });

  it('can leave DNS to the program, and bounds the timeouts', () => {
    const text = readFileSync(writeProxychainsConfig(dir, 40001, { proxyDns: false, connectTimeoutMs: 1e9, readTimeoutMs: 1 }), 'utf8');
    expect(text).not.toMatch(/proxy_dns/);
    expect(text).toMatch(/^tcp_connect_time_out 60000$/m);
    expect(text).toMatch(/^tcp_read_time_out 100$/m);
    expect(text.match(/^localnet .*$/gm)).toEqual(['localnet 127.0.0.1:40001/255.255.255.255']);
  });

  it('rejects ports that are not ports', () => {
    expect(() => writeProxychainsConfig(dir, 0)).toThrow(/socksPort must be an integer port/);
    expect(() => writeProxychainsConfig(dir, 1.5)).toThrow(/socksPort/);
    expect(() => writeProxychainsConfig(dir, 1080, { httpPort: 70000 })).toThrow(/httpPort/);
  });
});

describe("the capture proxy's credential (attack 18u P6)", () => {
  const credential = { user: 'debugkit', password: 'Ab-_09xyz' };

  it('goes into the proxychains proxy line as user and password, and into the proxy URLs as userinfo', () => {
    expect(readFileSync(writeProxychainsConfig(dir, 40001, { httpPort: 40002, credential }), 'utf8')).toContain('[ProxyList]\nsocks5 127.0.0.1 40001 debugkit Ab-_09xyz\n');
    const { env } = proxiedCommand(['app'], { socksPort: 41001, httpPort: 41002, configPath: '/tmp/x/p.conf', proxychains: '/usr/bin/proxychains4', env: {}, credential });
    expect([env.HTTP_PROXY, env.https_proxy, env.ALL_PROXY]).toEqual([
      'http://debugkit:Ab-_09xyz@127.0.0.1:41002',
      'http://debugkit:Ab-_09xyz@127.0.0.1:41002',
      'socks5h://debugkit:Ab-_09xyz@127.0.0.1:41001',
    ]);
  });

  it('refuses a credential proxychains could not read back (a blank splits its line)', () => {
    expect(() => writeProxychainsConfig('/nonexistent', 40001, { credential: { user: 'a b', password: 'x' } })).toThrow(/printable ASCII characters without blanks/);
  });
});

describe('proxiedCommand', () => {
  const base = { socksPort: 41001, httpPort: 41002, configPath: '/tmp/x/proxychains.conf', proxychains: '/usr/bin/proxychains4' };

  it('runs the argv under proxychains4 -q -f <config>, untouched and without a shell', () => {
    const cmd = proxiedCommand(['curl', '-s', 'http://h/$(id);x'], { ...base, env: {} });
    expect(cmd.command).toBe('/usr/bin/proxychains4');
    expect(cmd.args).toEqual(['-q', '-f', '/tmp/x/proxychains.conf', 'curl', '-s', 'http://h/$(id);x']);
  });

  it('points the proxy variables, in both cases, at the proxy and clears NO_PROXY', () => {
    const { env } = proxiedCommand(['app'], { ...base, env: { PATH: '/bin', NO_PROXY: 'localhost', no_proxy: '127.0.0.1', HTTP_PROXY: 'http://corp:3128' } });
    expect(env).toEqual({
      PATH: '/bin',
      HTTP_PROXY: 'http://127.0.0.1:41002',
      http_proxy: 'http://127.0.0.1:41002',
      HTTPS_PROXY: 'http://127.0.0.1:41002',
      https_proxy: 'http://127.0.0.1:41002',
      ALL_PROXY: 'socks5h://127.0.0.1:41001',
      all_proxy: 'socks5h://127.0.0.1:41001',
    });
  });

  it('refuses an empty command, a leading "-" (proxychains4 would take it as its option) and a relative config', () => {
    expect(() => proxiedCommand([], base)).toThrow(/empty/);
    expect(() => proxiedCommand(['-f', '/etc/passwd'], base)).toThrow(/must not start with "-"/);
    expect(() => proxiedCommand(['app'], { ...base, configPath: 'proxychains.conf' })).toThrow(/absolute/);
  });

  it('finds proxychains4 on PATH, and names the install command when it is missing', () => {
    expect(findProxychains()).toMatch(/\/proxychains4$/);
    expect(() => findProxychains('/nonexistent')).toThrow(/apt-get install -y proxychains4/);
  });
});
