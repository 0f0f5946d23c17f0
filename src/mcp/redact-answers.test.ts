import type { CallToolResult } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { redactAnswer } from './redact-answers.js';

const JWT = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HecLQ9\n-----END RSA PRIVATE KEY-----';

const text = (t: string, structuredContent?: Record<string, unknown>): CallToolResult => ({ content: [{ type: 'text', text: t }], ...(structuredContent ? { structuredContent } : {}) });
const textOf = (r: CallToolResult) => (r.content[0] as { text: string }).text;

describe('redactAnswer: what looks like a credential is hidden, saying what', () => {
  it('by shape: JWTs, private keys, cloud and forge keys, in any text', () => {
    const r = redactAnswer(text(`[program stdout]\nauth ok ${JWT}\n${PEM}\naws AKIAIOSFODNN7EXAMPLE and ghp_${'a'.repeat(36)}`));
    expect(textOf(r)).toBe(
      '[program stdout]\nauth ok [redacted JWT]\n-----BEGIN RSA PRIVATE KEY-----[redacted private key]-----END RSA PRIVATE KEY-----\naws [redacted AWS access key] and [redacted GitHub token]\n' +
        "[debugkit: hid 4 values that look like a credential (JWT, private key, AWS access key, GitHub token); the server's --no-redact shows them]",
    );
  });

  it("by name: a debugger's locals, a char pointer's string, YAML and JSON; a lexer's token and a `key` stay", () => {
    const locals = 'password = 0x5555555592a0 "hunter2"\ncount = 3\ntoken = {kind = 4, text = 0x55555555a2c0 "ident"}\nkey = 42';
    expect(
      textOf(redactAnswer(text(locals)))
        .split('\n')
        .slice(0, 4),
    ).toEqual(['password = 0x5555555592a0 "[redacted password]"', 'count = 3', 'token = {kind = 4, text = 0x55555555a2c0 "ident"}', 'key = 42']);
    const yaml = 'data:\n  db_password: aHVudGVyMg==\n  user: admin\n';
    expect(textOf(redactAnswer(text(yaml)))).toContain('db_password: [redacted db_password]\n  user: admin');
  });

  it('structured content: strings under a secret name (not their type), the value beside a secret `name`, every string by shape; types and shape kept', () => {
    const r = redactAnswer(
      text('see structured', {
        locals: { password: { type: 'str', repr: "'hunter2'", isTruncated: false }, token: { type: 'Token', repr: "Token(kind='NAME', text='x')" }, n: { type: 'int', repr: '3' } },
        variables: [
          { name: 'api_key', value: '"k-123456"' },
          { name: 'keys', value: '[1, 2]' },
        ],
        output: `got ${JWT}`,
      }),
    );
    expect(r.structuredContent).toEqual({
      locals: {
        password: { type: 'str', repr: '[redacted secret-named value]', isTruncated: false },
        token: { type: 'Token', repr: "Token(kind='NAME', text='x')" },
        n: { type: 'int', repr: '3' },
      },
      variables: [
        { name: 'api_key', value: '[redacted secret-named value]' },
        { name: 'keys', value: '[1, 2]' },
      ],
      output: 'got [redacted JWT]',
    });
    expect(textOf(r)).toMatch(/^see structured\n\[debugkit: hid 3 values that look like a credential \(secret-named value, JWT\)/);
  });

  // Attack 18s (N5): past 32 levels nothing was looked at, in the structure or in its JSON text.
  it('a value nested past what is walked is hidden whole, in the structure and in its JSON text', () => {
    let deep: Record<string, unknown> = { name: 'password', value: 'hunter2', env: 'PGPASSWORD=s3cr3t' };
    for (let i = 0; i < 16; i++) deep = { children: [deep] };
    const structured = { tree: deep };
    const r = redactAnswer({ content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured });
    for (const out of [JSON.stringify(r.structuredContent), textOf(r)]) {
      expect(out).not.toContain('hunter2');
      expect(out).not.toContain('s3cr3t');
      expect(out).toContain('[redacted value nested past 32 levels]');
    }
    // A shallower one is walked: its secrets are hidden one by one and the rest is kept.
    let shallow: Record<string, unknown> = { name: 'password', value: 'hunter2', count: 3 };
    for (let i = 0; i < 14; i++) shallow = { children: [shallow] };
    const s = redactAnswer({ content: [{ type: 'text', text: 'x' }], structuredContent: { tree: shallow } });
    expect(JSON.stringify(s.structuredContent)).toContain('"count":3');
    expect(JSON.stringify(s.structuredContent)).not.toContain('hunter2');
  });

  it('an answer with nothing to hide is the same object (a --tool-prefix name is not a debugkit key)', () => {
    const plain = text('$1 = 42', { output: '$1 = 42\n', tool: 'dk_debugger_get_comprehensive_audit' });
    expect(redactAnswer(plain)).toBe(plain);
  });

  it('names hidden alike are numbered on, in one pass (10,000 of them were ~50 million looks); a local named __proto__ stays an entry', () => {
    const token = (i: number) => `ghp_${String(i).padStart(36, 'a')}`;
    const locals: Record<string, unknown> = {};
    for (let i = 0; i < 10_000; i++) locals[token(i)] = i;
    const out = redactAnswer(text('{}', { locals })).structuredContent as { locals: Record<string, number> };
    const names = Object.keys(out.locals);
    expect(names).toHaveLength(10_000);
    expect(names.slice(0, 3)).toEqual(['[redacted GitHub token]', '[redacted GitHub token] (2)', '[redacted GitHub token] (3)']);
    expect(out.locals['[redacted GitHub token] (10000)']).toBe(9_999);
    const proto = JSON.parse('{"locals":{"__proto__":"ghp_' + 'b'.repeat(36) + '","x":1}}') as Record<string, unknown>;
    const hidden = redactAnswer(text('{}', proto)).structuredContent as { locals: Record<string, unknown> };
    expect(Object.keys(hidden.locals)).toEqual(['__proto__', 'x']);
    expect(Object.getPrototypeOf(hidden.locals)).toBe(Object.prototype);
    expect(JSON.stringify(hidden)).toBe('{"locals":{"__proto__":"[redacted GitHub token]","x":1}}');
  });
});
