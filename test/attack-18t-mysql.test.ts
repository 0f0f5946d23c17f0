import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMariadb, type RunningMariadb } from '../src/toolsets/mocks/mysql/testing.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { mocksWorkspace } from './helpers/programs.js';

let root: string;
let dk: TestClient;
let db: RunningMariadb | undefined;

// mysql2: a text result of 5,000 rows (more packets than a MySQL mock is structured from), then a
// prepared statement of two parameters (its execute read with the count the prepare gave).
const PROGRAM = `import { writeFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
const [port, password] = process.argv.slice(2);
const conn = await mysql.createConnection({ host: '127.0.0.1', port: Number(port), user: 'app', password, database: 'shop' });
const [rows] = await conn.query('SELECT seq FROM seq_1_to_5000');
const [sum] = await conn.execute('SELECT ? + ? AS s', [40, 2]);
await conn.end();
writeFileSync('big-out.txt', \`rows=\${rows.length} last=\${rows.at(-1).seq} s=\${sum[0].s}\\n\`);
`;

beforeAll(async () => {
  root = mocksWorkspace('debugkit-attack-18t-mysql-', { nodeModules: true });
  writeFileSync(path.join(root, 'big.mjs'), PROGRAM);
  db = await startMariadb();
  dk = await connectStdio({ root, args: ['--toolsets', 'mocks'] });
}, 120_000);
afterAll(async () => {
  await dk?.close();
  await db?.stop();
});

describe('attack 18t: MySQL recording (a real MariaDB)', () => {
  it("keeps a 5,000-row answer as a Generic mock (K4), reads an execute with its prepare's parameter count (M5), and replays both without the server", async () => {
    const port = db!.port;
    const command = (password: string) => `node big.mjs ${port} ${password}`;
    const rec = await dk.structured('keploy_mock_record', { command: command(db!.password), path: 'keploy-big' });
    expect(rec).toMatchObject({ success: true });
    const recorded = readFileSync(path.join(root, 'big-out.txt'), 'utf8');
    expect(recorded).toBe('rows=5000 last=5000 s=42\n');
    const written = readFileSync(path.resolve(root, rec.mockFilePath), 'utf8');
    // The big answer: one Generic mock of its bytes, not 5,000 row entries.
    expect(written.match(/^kind: Generic$/gm)).toHaveLength(1);
    expect(written).not.toMatch(/packet_type: TextRow/);
    expect(written).toMatch(/packet_type: COM_STMT_EXECUTE\n\s+message:\n\s+status: 23\n[^]*?parameter_count: 2\n/);
    await db!.stop();
    db = undefined;

    writeFileSync(path.join(root, 'big-out.txt'), '');
    const replay = await dk.structured('keploy_mock_test', { command: command('other-password'), path: 'keploy-big' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'big-out.txt'), 'utf8')).toBe(recorded);
  }, 120_000);
});
