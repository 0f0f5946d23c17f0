import { readdir, readFile, readlink } from 'node:fs/promises';

/**
 * The TCP ports the processes `pids` listen on (IPv4 and IPv6), read from /proc: each process's
 * socket descriptors, matched by inode against the listening sockets of this network namespace.
 * A process gone, or /proc unreadable, adds none; read in the thread pool (a machine with 18,000
 * sockets has 1.5 MB of tables: attack 18z Y2). What a debugger's own connections on loopback
 * are told apart by (a program under a mock set connects to its debug adapter through the same
 * proxy as to its dependencies).
 */
export async function listeningPorts(pids: readonly number[]): Promise<Set<number>> {
  const inodes = new Set<string>();
  for (const pid of pids) for (const inode of await socketInodes(pid)) inodes.add(inode);
  const ports = new Set<number>();
  if (inodes.size === 0) return ports;
  for (const socket of await listeningSockets()) if (inodes.has(socket.inode)) ports.add(socket.port);
  return ports;
}

/** One TCP socket of this network namespace, as /proc/net/tcp{,6} writes it: addresses in its hex, ports as numbers. */
interface TcpSocket {
  address: string;
  port: number;
  remoteAddress: string;
  remotePort: number;
  /** 0A: listening; 01: established. */
  state: string;
  inode: string;
}

/** The TCP sockets of this network namespace (IPv4 and IPv6), from /proc/net/tcp{,6}, in `states`. */
async function tcpSockets(states: ReadonlySet<string>): Promise<TcpSocket[]> {
  const sockets: TcpSocket[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = await readFile(table, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st ... inode: each address is hex, then ':' and the port in hex.
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !states.has(fields[3]!)) continue;
      const [address, port] = fields[1]!.split(':');
      const [remoteAddress, remotePort] = fields[2]!.split(':');
      sockets.push({ address: address!, port: parseInt(port!, 16), remoteAddress: remoteAddress!, remotePort: parseInt(remotePort!, 16), state: fields[3]!, inode: fields[9]! });
    }
  }
  return sockets;
}

const LISTENING = new Set(['0A']);
const ESTABLISHED = new Set(['01']);

async function listeningSockets(): Promise<TcpSocket[]> {
  return tcpSockets(LISTENING);
}

/**
 * The addresses, as /proc/net/tcp{,6} write them, of the sockets a connection to 127.0.0.1 can
 * reach: 127.0.0.1, 0.0.0.0, ::ffff:127.0.0.1 and a dual-stack :: (never ::1: a process there does
 * not answer 127.0.0.1, attack m2-1).
 */
const REACHED_FROM_127 = new Set(['0100007F', '00000000', '0000000000000000FFFF00000100007F', '00000000000000000000000000000000']);

/**
 * Who listens on 127.0.0.1:`port`: the processes holding the listening sockets a connection there
 * can reach, and how many such sockets no visible process holds (another user's, whose descriptors
 * /proc hides). Read in the thread pool, one scan of /proc at a time.
 */
export async function loopbackListeners(port: number): Promise<{ pids: number[]; unseen: number }> {
  const inodes = new Set((await listeningSockets()).filter((s) => s.port === port && REACHED_FROM_127.has(s.address)).map((s) => s.inode));
  return holdersOf(inodes);
}

/**
 * The processes at the other end of this process's TCP connection from local port `localPort` to
 * 127.0.0.1:`serverPort`: those holding the connection's accepted socket (the server that answers
 * it), and how many such sockets no visible process holds. What a connection reached, whoever listened.
 */
export async function connectionPeers(localPort: number, serverPort: number): Promise<{ pids: number[]; unseen: number }> {
  const inodes = new Set((await tcpSockets(ESTABLISHED)).filter((s) => s.port === serverPort && s.remotePort === localPort && s.inode !== '0').map((s) => s.inode));
  return holdersOf(inodes);
}

let scanning: Promise<unknown> = Promise.resolve();

/** The processes holding any of `inodes`, and how many of the inodes no visible process holds. One scan of every process's descriptors runs at a time (attack m2-5). */
function holdersOf(inodes: ReadonlySet<string>): Promise<{ pids: number[]; unseen: number }> {
  const scan = scanning.then(async () => {
    const pids: number[] = [];
    const held = new Set<string>();
    if (inodes.size === 0) return { pids, unseen: 0 };
    for (const name of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      const found = (await socketInodes(Number(name))).filter((inode) => inodes.has(inode));
      if (found.length === 0) continue;
      pids.push(Number(name));
      for (const inode of found) held.add(inode);
    }
    return { pids, unseen: inodes.size - held.size };
  });
  scanning = scan.catch(() => undefined);
  return scan;
}

/** The inodes of the sockets process `pid` holds (none when it is gone, or its descriptors are hidden). */
async function socketInodes(pid: number): Promise<string[]> {
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
  const inodes: string[] = [];
  for (const fd of fds) {
    // (A descriptor closed meanwhile reads as nothing.)
    const m = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''));
    if (m) inodes.push(m[1]!);
  }
  return inodes;
}
