import { isAlias, isMap, isScalar, isSeq, LineCounter, parseAllDocuments, type Document, type Node as YamlNode } from 'yaml';
import type { z } from 'zod';
import { DebugkitError } from '../../../core/errors.js';
import { markStyle } from './style.js';
import { defineKey, isPlainObject, MOCK_SCHEMAS, MODELED_KINDS, PASS_THROUGH_KINDS, Plain, type Mock } from './types.js';

/**
 * Parses a Keploy `mocks.yaml`: YAML documents separated by `---`, one mock each, each read into
 * plain data and then through its kind's schema (types.ts), which reads it the way Keploy (Go,
 * yaml.v3) does. `!!binary` is bytes (what yaml.v3 writes for a non-UTF-8 Go string); timestamps
 * stay the strings they are; empty documents (a trailing `---`) are skipped.
 *
 * Anything wrong throws `DebugkitError('INVALID_ARGUMENT')` naming the file, the document
 * (1-based, with the mock's name when known), the line and the field: never a crash, never a
 * partially parsed set.
 */
export function parseMockSet(text: string, file: string): Mock[] {
  return parseMockDocuments(text, file).mocks;
}

/**
 * A YAML document of a set's text as the parser found it: where it is (`start` to `end`: its `---`
 * marker, content, comments and `...` marker; what lies between two documents, comments and
 * directives, is in neither), whether it opens with `---`, whether YAML directives are in force
 * for it, and the mock it holds (an index into `mocks`; none for an empty or null document, which
 * parseMockSet skips).
 */
export interface MockDocument {
  start: number;
  end: number;
  explicitStart: boolean;
  /**
   * Directives are in force for this document (a `%YAML`, a `%TAG` beyond the default `!!`, or one
   * the parser does not know): those before it, or, for `%YAML 1.1`, those before an earlier
   * document (the parser keeps 1.1's directives for every later document that has none of its
   * own). Keploy writes no directives.
   */
  directives: boolean;
  mock?: number;
}

/** parseMockSet, with the documents the mocks came from: the text and its mocks paired as the parser split them. */
export function parseMockDocuments(text: string, file: string): { mocks: Mock[]; documents: MockDocument[] } {
  if (typeof text !== 'string') throw new DebugkitError('INVALID_ARGUMENT', `Invalid Keploy mock set ${file}: not text`);
  const lines = new LineCounter();
  let docs;
  try {
    docs = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false, version: '1.2', schema: 'core' });
  } catch (err) {
    throw new DebugkitError('INVALID_ARGUMENT', `Invalid Keploy mock set ${file}: not YAML: ${(err as Error).message}`, { cause: err });
  }
  const mocks: Mock[] = [];
  const documents: MockDocument[] = [];
  let index = 0;
  for (const doc of docs) {
    index++;
    const [start, , end] = doc.range;
    const document: MockDocument = { start, end, explicitStart: doc.directives.docStart === true, directives: underDirectives(doc) };
    documents.push(document);
    const fail: Fail = (node, path, message) => {
      const line = node?.range ? lines.linePos(node.range[0]).line : undefined;
      const nameNode = isMap(doc.contents) ? doc.contents.get('name', true) : undefined;
      const name = isScalar(nameNode) && typeof nameNode.value === 'string' ? ` (${nameNode.value})` : '';
      const where = `document ${index}${name}${line ? `, line ${line}` : ''}`;
      throw new DebugkitError('INVALID_ARGUMENT', `Invalid Keploy mock set ${file}: ${where}: ${path.length ? `${pathText(path)}: ` : ''}${message}`);
    };
    const error = doc.errors[0];
    if (error) {
      const line = error.linePos?.[0]?.line ?? lines.linePos(error.pos[0]).line;
      throw new DebugkitError('INVALID_ARGUMENT', `Invalid Keploy mock set ${file}: document ${index}, line ${line}: not valid YAML: ${error.message.split('\n')[0]!.trim()}`);
    }
    if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) continue; // empty document
    const root = doc.contents as YamlNode;
    const value = toData(root, (node, message) => fail(node, pathTo(root, node) ?? [], message));
    if (!isPlainObject(value)) fail(root, [], `expected a mock document (a mapping with version, kind, name and spec), got ${describe(root)}`);
    const kind = value.kind;
    if (kind === undefined) fail(root, ['kind'], `missing; expected one of ${KINDS.join(', ')}`);
    if (typeof kind !== 'string' || !Object.hasOwn(MOCK_SCHEMAS, kind)) {
      fail(nodeAt(doc, ['kind']), ['kind'], `unknown kind ${JSON.stringify(kind instanceof Plain ? kind.source : kind)}; Keploy's kinds are ${KINDS.join(', ')}`);
    }
    const result = MOCK_SCHEMAS[kind as keyof typeof MOCK_SCHEMAS].safeParse(value);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      const node = nodeAt(doc, issue.path);
      let at = node;
      for (let n = issue.path.length; at === undefined && n > 0;) at = nodeAt(doc, issue.path.slice(0, --n));
      fail(at ?? root, issue.path, issueText(issue, node));
    }
    document.mock = mocks.length;
    mocks.push(result.data as Mock);
  }
  return { mocks, documents };
}

/**
 * Whether directives are in force for `doc` (MockDocument.directives), as the parser applied them:
 * an explicit `%YAML` (the parser marks it `explicit`, and keeps a 1.1 one for the documents
 * after), a `%TAG` handle or prefix other than the default (`!!` as `tag:yaml.org,2002:`), or an
 * unknown or unsupported directive (the parser's BAD_DIRECTIVE warning on the document after it).
 */
function underDirectives(doc: Document.Parsed): boolean {
  const { yaml, tags } = doc.directives;
  if (yaml.explicit === true || yaml.version !== '1.2') return true;
  const handles = Object.keys(tags);
  if (handles.length !== 1 || tags['!!'] !== 'tag:yaml.org,2002:') return true;
  return doc.warnings.some((w) => w.code === 'BAD_DIRECTIVE');
}

/** The kinds in Keploy's order of importance (the modeled ones first). */
const KINDS = [...MODELED_KINDS, ...PASS_THROUGH_KINDS];

type N = YamlNode | null | undefined;
type Fail = (node: N, path: readonly PropertyKey[], message: string) => never;

/** `spec.req.header."Content-Type"`, `spec.postgresrequests[0].parse`. */
export function pathText(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else {
      const key = String(part);
      out += `${out ? '.' : ''}${/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : JSON.stringify(key)}`;
    }
  }
  return out;
}

/**
 * An issue as a message: the schema's words, with what was there for a wrong type (`expected an
 * integer, got the string "200"`), or "missing" for an absent field. `node`: the value's node.
 */
export function issueText(issue: z.core.$ZodIssue, node: N, what = describe): string {
  const typeError = ['invalid_type', 'invalid_union', 'invalid_format'].includes(issue.code) || (issue.code === 'custom' && issue.params?.got === true);
  if (!typeError) return issue.message;
  return node === undefined ? 'missing' : `${issue.message}, got ${what(node)}`;
}

/** The node at `path` (keys as scalars' values, indices into sequences), or undefined. */
function nodeAt(doc: Document.Parsed, path: readonly PropertyKey[]): YamlNode | undefined {
  let node: unknown = doc.contents;
  for (const part of path) {
    if (isMap(node)) node = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(part))?.value;
    else if (isSeq(node) && typeof part === 'number') node = node.items[part];
    else return undefined;
  }
  return (node ?? undefined) as YamlNode | undefined;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * A YAML node as plain data for the schemas: mappings as objects (style remembered, see
 * style.ts), sequences as arrays, strings, null and bytes as they are, numbers and booleans as
 * `Plain` (value and text), integers beyond 2^53 as bigint. Aliases, non-scalar keys, duplicate
 * keys and bad `!!binary` are errors.
 */
function toData(node: N, fail: (node: YamlNode, message: string) => never): unknown {
  if (node === null || node === undefined) return null;
  if (isMap(node)) {
    const out: Record<string, unknown> = {};
    for (const pair of node.items) {
      const keyNode = pair.key as N;
      if (keyNode !== null && keyNode !== undefined && !isScalar(keyNode)) fail(keyNode, `a mapping key must be a scalar, got ${describe(keyNode)}`);
      const key = keyText(keyNode);
      if (key === undefined) return fail(keyNode as YamlNode, 'a mapping key must be text');
      if (Object.hasOwn(out, key)) fail(keyNode as YamlNode, 'duplicate key');
      defineKey(out, key, toData(pair.value as N, fail));
    }
    return markStyle(out, node.flow);
  }
  if (isSeq(node))
    return markStyle(
      node.items.map((item) => toData(item as N, fail)),
      node.flow,
    );
  if (isAlias(node)) return fail(node, 'YAML aliases are not supported in mock files (Keploy never writes them)');
  if (!isScalar(node)) return fail(node, `unsupported YAML node ${describe(node)}`);
  const v: unknown = node.value;
  const source = node.source ?? '';
  if (v === null || typeof v === 'string') return v;
  if (v instanceof Uint8Array) {
    if (!BASE64.test(source.replace(/\s+/g, ''))) fail(node, '!!binary data is not valid base64');
    return new Uint8Array(v);
  }
  if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v) && /^[-+]?[0-9]+$/.test(source)) return new Plain(BigInt(source), source);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return new Plain(v, source);
  return fail(node, `unsupported scalar ${describe(node)}`);
}

/** A mapping key as text (as toData reads it), undefined for one that has none (bytes). */
function keyText(key: N): string | undefined {
  if (!isScalar(key) || key.value === null) return '';
  if (key.value instanceof Uint8Array) return undefined;
  return typeof key.value === 'string' ? key.value : (key.source ?? String(key.value));
}

/** Where `target` is under `node` (for an error's field path; a key's path is its value's). */
function pathTo(node: unknown, target: unknown, path: PropertyKey[] = []): PropertyKey[] | undefined {
  if (node === target) return path;
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = keyText(pair.key as N) ?? '';
      if (pair.key === target) return isScalar(pair.key) ? [...path, key] : path;
      const found = pathTo(pair.value, target, [...path, key]);
      if (found) return found;
    }
  }
  if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const found = pathTo(node.items[i], target, [...path, i]);
      if (found) return found;
    }
  }
  return undefined;
}

function describe(node: N): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a sequence';
  if (isAlias(node)) return 'an alias';
  if (isScalar(node)) {
    const v: unknown = node.value;
    if (v === null) return 'null';
    if (v instanceof Uint8Array) return '!!binary data';
    if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}...` : v)}`;
    if (typeof v === 'number' || typeof v === 'bigint') return `the number ${node.source ?? String(v)}`;
    if (typeof v === 'boolean') return String(v);
  }
  return 'an unknown node';
}
