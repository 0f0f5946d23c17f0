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
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        /* closed meanwhile */
      }
    }
  }
  const ports = new Set<number>();
  if (inodes.size === 0) return ports;
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
      if (fields.length < 10 || fields[3] !== '0A' || !inodes.has(fields[9]!)) continue;
      ports.add(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}
