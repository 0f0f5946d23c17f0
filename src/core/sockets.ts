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

/** The listening TCP sockets of this network namespace (IPv4 and IPv6), from /proc/net/tcp{,6}: address (as the table writes it), port, inode. */
async function listeningSockets(): Promise<Array<{ address: string; port: number; inode: string }>> {
  const sockets: Array<{ address: string; port: number; inode: string }> = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = await readFile(table, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st ... inode: the state 0A is LISTEN; the port is the local address's hex after ':'.
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '0A') continue;
      const [address, port] = fields[1]!.split(':');
      sockets.push({ address: address!, port: parseInt(port!, 16), inode: fields[9]! });
    }
  }
  return sockets;
}

/** Loopback and wildcard addresses as /proc/net/tcp{,6} write them (what a connection to 127.0.0.1 or ::1 reaches). */
const LOOPBACK_ADDRESSES = new Set(['0100007F', '00000000', '00000000000000000000000001000000', '00000000000000000000000000000000', '0000000000000000FFFF00000100007F']);

/**
 * The process that listens on `port` of loopback (127.0.0.1, ::1, or every address): its socket's
 * inode from /proc/net/tcp{,6}, then the process holding that socket, read in the thread pool.
 * Undefined when nothing listens there, or its process cannot be seen (another user's, where /proc
 * hides descriptors).
 */
export async function loopbackListener(port: number): Promise<number | undefined> {
  const inodes = new Set((await listeningSockets()).filter((s) => s.port === port && LOOPBACK_ADDRESSES.has(s.address)).map((s) => s.inode));
  if (inodes.size === 0) return undefined;
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name));
  for (const pid of pids) if ((await socketInodes(Number(pid))).some((inode) => inodes.has(inode))) return Number(pid);
  return undefined;
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
