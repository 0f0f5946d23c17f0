import fs from 'node:fs';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { SQL_FILE } from '../keploy/testkit.js';
import type { PostgresMock } from '../keploy/types.js';
import { decodePasswordBody, FrontendParser, MAX_MESSAGE_BYTES, parseFrontendBytes, PgProtocolError, type FrontendMessage } from './frontend.js';
import { replayPostgres } from './replayer.js';
import { listen } from './testing.js';

/** What node-postgres really sends, captured by a server that replays the fixture and keeps a copy. */
async function captureNodePg(): Promise<Buffer> {
  const mocks = parseMockSet(fs.readFileSync(SQL_FILE, 'utf8'), SQL_FILE) as PostgresMock[];
  const seen: Buffer[] = [];
  const server = await listen((conn) => {
    conn.client.on('data', (chunk: Buffer) => seen.push(Buffer.from(chunk)));
    return replayPostgres(conn, mocks);
  });
  const client = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', application_name: 'capture' });
  await client.connect();
  await client.query('INSERT INTO products(name, price) VALUES($1, $2) RETURNING id', ['Bubbles', 123]);
  await client.query({ name: 'one', text: 'SELECT name, price FROM products WHERE id=$1', values: [1] });
  await client.query({ name: 'one', text: 'SELECT name, price FROM products WHERE id=$1', values: [1] });
  await client.query('SELECT 1').catch(() => undefined); // a miss, still a Query message
  await client.end();
  await server.close();
  return Buffer.concat(seen);
}

/** Messages without their raw bytes, for comparing parses of one stream cut differently. */
const shapes = (messages: FrontendMessage[]) => messages.map((m) => ({ ...m, raw: m.raw.toString('hex') }));

function parseInPieces(bytes: Buffer, cuts: number[]): FrontendMessage[] {
  const parser = new FrontendParser();
  const out: FrontendMessage[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...parser.push(bytes.subarray(from, cut)));
    from = cut;
  }
  expect(parser.buffered).toBe(0);
  return out;
}

describe('FrontendParser on what node-postgres sends', () => {
  it('parses the whole conversation: startup, extended protocol with unnamed and named statements, simple query, Terminate', async () => {
    const bytes = await captureNodePg();
    const messages = parseInPieces(bytes, []);
    expect(messages.map((m) => m.type).join(' ')).toBe('startup P B D E S P B D E S B D E S Q X');
    const [startup, parse, bind, describeMsg, execute] = messages;
    expect(startup).toMatchObject({ type: 'startup', protocolVersion: 196608, parameters: { user: 'postgres', database: 'postgres', application_name: 'capture', client_encoding: 'UTF8' } });
    expect(parse).toMatchObject({ type: 'P', name: '', query: 'INSERT INTO products(name, price) VALUES($1, $2) RETURNING id', paramTypes: [] });
    expect(bind).toMatchObject({ type: 'B', portal: '', statement: '', paramFormats: [0, 0], resultFormats: [0] });
    expect((bind as { params: Buffer[] }).params.map(String)).toEqual(['Bubbles', '123']);
    expect(describeMsg).toMatchObject({ type: 'D', target: 'P', name: '' });
    expect(execute).toMatchObject({ type: 'E', portal: '', maxRows: 0 });
    expect(messages[6]).toMatchObject({ type: 'P', name: 'one' });
    expect(messages[11]).toMatchObject({ type: 'B', statement: 'one' }); // the second run skips Parse
    expect(messages[15]).toMatchObject({ type: 'Q', query: 'SELECT 1' });
  });

  it('gives the same messages however the bytes are cut: at every boundary, and byte by byte', async () => {
    const bytes = await captureNodePg();
    const whole = shapes(parseInPieces(bytes, []));
    for (let cut = 1; cut < bytes.length; cut++) expect(shapes(parseInPieces(bytes, [cut]))).toEqual(whole);
    expect(
      shapes(
        parseInPieces(
          bytes,
          Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
        ),
      ),
    ).toEqual(whole);
  });
});

describe('FrontendParser on every message type', () => {
  const stream = Buffer.concat([
    serialize.requestSsl(),
    serialize.startup({ user: 'u', database: 'd' }),
    serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', 'n,,n=*,r=abc'),
    serialize.query('SELECT 1'),
    serialize.parse({ name: 's1', text: 'SELECT $1::int', types: [23] }),
    serialize.bind({ portal: 'p1', statement: 's1', values: ['42', null, Buffer.from([1, 2])], binary: true }),
    serialize.describe({ type: 'S', name: 's1' }),
    serialize.execute({ portal: 'p1', rows: 10 }),
    serialize.flush(),
    serialize.close({ type: 'P', name: 'p1' }),
    serialize.sync(),
    serialize.copyData(Buffer.from('1\t2\n')),
    serialize.copyDone(),
    serialize.copyFail('stop'),
    serialize.end(),
  ]);

  it('decodes each one', () => {
    const m = parseInPieces(stream, []);
    expect(m.map((x) => x.type).join(' ')).toBe('ssl startup p Q P B D E H C S d c f X');
    expect(m[2]!.type === 'p' && decodePasswordBody(m[2].body, 10)).toEqual({ kind: 'sasl-initial', mechanism: 'SCRAM-SHA-256', data: Buffer.from('n,,n=*,r=abc') });
    expect(m[4]).toMatchObject({ name: 's1', query: 'SELECT $1::int', paramTypes: [23] });
    expect(m[5]).toMatchObject({ portal: 'p1', statement: 's1', paramFormats: [0, 0, 1], params: [Buffer.from('42'), null, Buffer.from([1, 2])], resultFormats: [1] });
    expect(m[7]).toMatchObject({ portal: 'p1', maxRows: 10 });
    expect(m[9]).toMatchObject({ type: 'C', target: 'P', name: 'p1' });
    expect(m[11]!.type === 'd' && m[11].body.toString()).toBe('1\t2\n');
    expect(m.map((x) => x.raw.length).reduce((a, b) => a + b)).toBe(stream.length);
    for (let cut = 1; cut < stream.length; cut++) expect(shapes(parseInPieces(stream, [cut]))).toEqual(shapes(m));
  });

  it('reads a CancelRequest as the whole of its connection', () => {
    expect(parseInPieces(serialize.cancel(1234, 5678), [])).toMatchObject([{ type: 'cancel', processId: 1234, secretKey: Buffer.from([0, 0, 0x16, 0x2e]) }]);
  });

  it('reads a recorded payload without a startup phase', () => {
    expect(parseFrontendBytes(Buffer.concat([serialize.query('SELECT 1'), serialize.sync()])).map((m) => m.type)).toEqual(['Q', 'S']);
    expect(() => parseFrontendBytes(serialize.query('SELECT 1').subarray(0, 7))).toThrow(/trailing bytes/);
  });
});

describe('FrontendParser refuses what is not the protocol', () => {
  const typed = (type: string, length: number) => Buffer.concat([Buffer.from(type), Buffer.from([length >>> 24, (length >>> 16) & 255, (length >>> 8) & 255, length & 255])]);
  const fresh = () => new FrontendParser({ startup: false });

  it('bounds message lengths before buffering them', () => {
    expect(() => fresh().push(typed('Q', MAX_MESSAGE_BYTES + 1))).toThrow(PgProtocolError);
    expect(() => fresh().push(typed('Q', 3))).toThrow(/outside 4\.\./);
    expect(() => new FrontendParser().push(Buffer.from([0, 0, 0x40, 0, 0, 3, 0, 0]))).toThrow(/startup packet length 16384/);
  });

  it('rejects unknown message types and protocol versions, and malformed bodies', () => {
    expect(() => fresh().push(typed('Z', 4))).toThrow(/unknown frontend message type 0x5a/);
    expect(() => new FrontendParser().push(Buffer.from([0, 0, 0, 8, 0, 2, 0, 0]))).toThrow(/unsupported protocol version 2\.0/);
    expect(() => fresh().push(Buffer.concat([typed('D', 6), Buffer.from('X\0')]))).toThrow(/targets 'X'/);
    expect(() => fresh().push(Buffer.concat([typed('B', 8), Buffer.from([0, 0, 0, 5])]))).toThrow(/truncated/);
    expect(() => fresh().push(Buffer.concat([typed('Q', 7), Buffer.from('abc')]))).toThrow(/unterminated string/);
    // Bind: portal "", statement "", then a count of -1 parameter formats.
    expect(() => fresh().push(Buffer.concat([typed('B', 10), Buffer.from([0, 0, 0xff, 0xff, 0, 0])]))).toThrow(/'B' message has a negative count/);
    // Parse: name "", query "", then -2 parameter types.
    expect(() => fresh().push(Buffer.concat([typed('P', 8), Buffer.from([0, 0, 0xff, 0xfe])]))).toThrow(/'P' message has a negative count/);
  });
});
