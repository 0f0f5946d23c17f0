// Talks to PostgreSQL with node-postgres and writes what it got to db-node-out.txt.
import { writeFileSync } from 'node:fs';
import pg from 'pg';

const [port, password, fruit] = process.argv.slice(2);
const client = new pg.Client({ host: '127.0.0.1', port: Number(port), user: 'postgres', password, database: 'postgres' });
await client.connect();
await client.query('CREATE TABLE IF NOT EXISTS fruit (name text PRIMARY KEY, qty int NOT NULL)');
const up = await client.query('INSERT INTO fruit VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET qty = fruit.qty + 1 RETURNING qty', [fruit, 1]);
const all = await client.query('SELECT name, qty FROM fruit WHERE name = $1', [fruit]);
await client.end();
writeFileSync('db-node-out.txt', `qty=${up.rows[0].qty} rows=${JSON.stringify(all.rows)}\n`);
