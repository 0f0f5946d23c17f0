import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { listeningPorts, loopbackListener } from './sockets.js';

describe('listeningPorts', () => {
  it("names the ports a process listens on, not the ones it only connects from, nor another process's", async () => {
    const own = net.createServer();
    await new Promise<void>((r) => own.listen(0, '127.0.0.1', r));
    const ownPort = (own.address() as net.AddressInfo).port;
    // Another process listening on a port of its own, and connected to ours.
    const child = spawn(process.execPath, ['-e', `const s=require('net').createServer().listen(0,'127.0.0.1',()=>{require('net').connect(${ownPort},'127.0.0.1');console.log(s.address().port)})`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [line] = (await once(child.stdout!, 'data')) as [Buffer];
      const childPort = Number(String(line).trim());
      expect([...(await listeningPorts([child.pid!]))]).toEqual([childPort]);
      expect((await listeningPorts([process.pid])).has(ownPort)).toBe(true);
      expect((await listeningPorts([process.pid])).has(childPort)).toBe(false);
      expect((await listeningPorts([2 ** 22 + 12345])).size).toBe(0);
    } finally {
      child.kill();
      own.close();
    }
  });
});

describe('loopbackListener', () => {
  it('names the process listening on a loopback port (another process, or this one); none for a port nothing listens on', async () => {
    const child = spawn(process.execPath, ['-e', `const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const own = net.createServer();
    await new Promise<void>((r) => own.listen(0, '::1', r));
    try {
      const [line] = (await once(child.stdout!, 'data')) as [Buffer];
      expect(await loopbackListener(Number(String(line).trim()))).toBe(child.pid);
      const ownPort = (own.address() as net.AddressInfo).port;
      expect(await loopbackListener(ownPort)).toBe(process.pid);
      await new Promise((r) => own.close(r));
      expect(await loopbackListener(ownPort)).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
      own.close();
    }
  });
});
