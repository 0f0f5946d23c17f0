// Logs in to MySQL over TLS with mysql2 (verifying the server against NODE_EXTRA_CA_CERTS), then
// leaves; writes what it saw to login-node-out.txt.
import { readFileSync, writeFileSync } from 'node:fs';
import mysql from 'mysql2/promise';

const [port, user, password, database] = process.argv.slice(2);
const conn = await mysql.createConnection({ host: '127.0.0.1', port: Number(port), user, password, database, ssl: { ca: readFileSync(process.env.NODE_EXTRA_CA_CERTS) } });
const line = `server=${conn.connection._handshakePacket.serverVersion} tls=${conn.connection.stream.getProtocol()}\n`;
await conn.end();
writeFileSync('login-node-out.txt', line);
