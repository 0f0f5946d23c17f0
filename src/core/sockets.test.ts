import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { connectionPeers, listeningPorts, loopbackListeners } from './sockets.js';

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

describe('loopbackListeners, connectionPeers', () => {
  it('name who listens where 127.0.0.1 is reached (another process, or this one), and not a listener on ::1 (attack m2-1)', async () => {
    const child = spawn(process.execPath, ['-e', `const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const decoy = net.createServer();
    try {
      const [line] = (await once(child.stdout!, 'data')) as [Buffer];
      const port = Number(String(line).trim());
      // The same port on ::1, held by this process: a connection to 127.0.0.1 never reaches it.
      await new Promise<void>((r) => decoy.listen({ host: '::1', port, ipv6Only: true }, r));
      expect(await loopbackListeners(port)).toEqual({ pids: [child.pid], unseen: 0 });
      const socket = net.connect(port, '127.0.0.1');
      await once(socket, 'connect');
      expect(await connectionPeers(socket.localPort!, port)).toEqual({ pids: [child.pid], unseen: 0 });
      socket.destroy();
    } finally {
      child.kill('SIGKILL');
      decoy.close();
    }
    const own = net.createServer();
    await new Promise<void>((r) => own.listen(0, '127.0.0.1', r));
    const ownPort = (own.address() as net.AddressInfo).port;
    expect((await loopbackListeners(ownPort)).pids).toEqual([process.pid]);
    await new Promise((r) => own.close(r));
    expect(await loopbackListeners(ownPort)).toEqual({ pids: [], unseen: 0 });
  });
});
