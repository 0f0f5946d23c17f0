// Talks to MySQL/MariaDB with mysql2: prepared statements (COM_STMT_PREPARE/EXECUTE, binary rows)
// and a multi-statement query; writes what it got to shop-node-out.txt.
import { readFileSync, writeFileSync } from 'node:fs';
import mysql from 'mysql2/promise';

const [port, password, item, tls] = process.argv.slice(2);
// A 4th argument `tls`: TLS, verifying the server against debugkit's CA (NODE_EXTRA_CA_CERTS).
const ssl = tls === 'tls' ? { ssl: { ca: readFileSync(process.env.NODE_EXTRA_CA_CERTS) } } : {};
const conn = await mysql.createConnection({ host: '127.0.0.1', port: Number(port), user: 'app', password, database: 'shop', multipleStatements: true, ...ssl });
const version = conn.connection.stream.getProtocol?.() ?? 'none';
await conn.query('CREATE TABLE IF NOT EXISTS stock_node (name VARCHAR(40) PRIMARY KEY, qty INT NOT NULL, price DECIMAL(8,2), seen DATETIME)');
await conn.execute('INSERT INTO stock_node VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE qty = qty + 1', [item, 1, 2.5, '2026-11-23 10:00:00']);
const [rows] = await conn.execute('SELECT name, qty, price, seen FROM stock_node WHERE name = ?', [item]);
const [sets] = await conn.query('SELECT COUNT(*) AS n FROM stock_node; SELECT 41 + 1 AS answer');
await conn.end();
const row = rows[0];
writeFileSync(
  'shop-node-out.txt',
  `${row.name} qty=${row.qty} price=${row.price} seen=${row.seen.toISOString()} n=${sets[0][0].n} answer=${sets[1][0].answer}${tls === 'tls' ? ` tls=${version}` : ''}\n`,
);
