import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startMariadb } from '../src/toolsets/mocks/mysql/testing.js';
import { mocksFixture } from './helpers/mocks-fixture.js';

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

const f = mocksFixture('debugkit-attack-18t-mysql-', () => startMariadb(), {
  nodeModules: true,
  prepare: (root) => {
    writeFileSync(path.join(root, 'big.mjs'), PROGRAM);
  },
});

describe('attack 18t: MySQL recording (a real MariaDB)', () => {
  it("keeps a 5,000-row answer as a Generic mock (K4), reads an execute with its prepare's parameter count (M5), and replays both without the server", async () => {
    const port = f.db.port;
    const command = (password: string) => `node big.mjs ${port} ${password}`;
    const rec = await f.dk.structured('keploy_mock_record', { command: command(f.db.password), path: 'keploy-big' });
    expect(rec).toMatchObject({ success: true });
    const recorded = readFileSync(path.join(f.root, 'big-out.txt'), 'utf8');
    expect(recorded).toBe('rows=5000 last=5000 s=42\n');
    const written = readFileSync(path.resolve(f.root, rec.mockFilePath), 'utf8');
    // The big answer: one Generic mock of its bytes, not 5,000 row entries.
    expect(written.match(/^kind: Generic$/gm)).toHaveLength(1);
    expect(written).not.toMatch(/packet_type: TextRow/);
    expect(written).toMatch(/packet_type: COM_STMT_EXECUTE\n\s+message:\n\s+status: 23\n[^]*?parameter_count: 2\n/);
    await f.db.stop();

    writeFileSync(path.join(f.root, 'big-out.txt'), '');
    const replay = await f.dk.structured('keploy_mock_test', { command: command('other-password'), path: 'keploy-big' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(f.root, 'big-out.txt'), 'utf8')).toBe(recorded);
  }, 120_000);
});
