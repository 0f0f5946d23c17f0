import { TIMESTAMP } from './types.js';

/**
 * A YAML emitter that writes what Go's gopkg.in/yaml.v3 (Keploy's encoder) writes, so mock files
 * we produce look like Keploy's own:
 *
 * - indentation 4, snapped to multiples of 4 (`4 * floor((indent + 4) / 4)`), except that the
 *   content of a sequence item starts 2 columns in, after `- ` (so `- name:` under `parse:` at
 *   column 10 is at column 12, its next key at 14);
 * - no line folding (yaml.v3 sets an unlimited width);
 * - a string is plain unless plain would read back as something else (`"2"`, `"on"`, `""`) or
 *   libyaml's analysis forbids it (then single quotes, `'{"a":1}'`, `'b64:...'` in flow), double
 *   quotes for control characters, `|`/`|-`/`|+` literals for multi-line text in block context;
 * - empty mappings and sequences as `{}` and `[]`;
 * - bytes that are not UTF-8 as `!!binary` base64 (a block literal of 70-column lines when long);
 * - one departure: past QUOTED_STRING_MAX / QUOTED_DOCUMENT_MAX a string that would be
 *   double-quoted is written as `!!binary` too, and base64 in flow as one plain line.
 *
 * The tree given here already says what is a mapping, a sequence or a scalar, in which order and
 * in which collection style; this module only decides scalar styles and layout.
 *
 * Why not the `yaml` package's document API (`new Document(...).toString(options)`): it cannot lay
 * out what yaml.v3 lays out. yaml indents every nested block collection by `indent` from its
 * parent key, so under a list item (`- identifier: ...` with keys at column 10) a nested mapping
 * goes to column 14, where yaml.v3 snaps it to column 12. Re-writing yaml's own parse of Keploy's
 * files with the closest options (`indent: 4, indentSeq: true, lineWidth: 0,
 * doubleQuotedMinMultiLineLength: Infinity, flowCollectionPadding: false`) changes 85 of the 309
 * lines of the mux-sql fixture and 8 of the 38 of the Redis one (the elasticsearch one, without
 * collections inside list items, comes out equal); emit.test.ts keeps that evidence. Its scalar
 * styles differ from libyaml's too (it double-quotes `{"a":1}` where yaml.v3 single-quotes, and
 * escapes as JSON does: no `\x7F`, no escaped BOM), so the choices below would be needed anyway.
 */

export type ENode =
  /** A string, quoted as yaml.v3 quotes a Go string. */
  | { kind: 'str'; value: string }
  /** Text written as is (numbers, booleans, null, timestamps that are known to be plain-safe). */
  | { kind: 'raw'; text: string }
  /** Bytes, written as `!!binary` base64 (`oneLine`: as one plain line, never in lines of 70). */
  | { kind: 'binary'; value: Uint8Array; oneLine?: boolean }
  | { kind: 'map'; entries: Array<[string, ENode]>; flow?: boolean }
  | { kind: 'seq'; items: ENode[]; flow?: boolean };

const INDENT = 4;

/** yaml.v3's indentation step for a collection or block scalar nested under `indent`. */
function snap(indent: number): number {
  return INDENT * Math.floor((indent + INDENT) / INDENT);
}

/** One YAML document (a mapping at the root), ending with a newline. */
export function emitDocument(root: ENode): string {
  quotedLeft = QUOTED_DOCUMENT_MAX;
  const lines: string[] = [];
  if (root.kind === 'map' && !root.flow && root.entries.length > 0) emitMap(root.entries, 0, lines);
  else lines.push(inline(root, false));
  return lines.join('\n') + '\n';
}

function emitMap(entries: Array<[string, ENode]>, indent: number, lines: string[], prefix?: string): void {
  entries.forEach(([key, value], i) => {
    const lead = i === 0 && prefix !== undefined ? prefix : ' '.repeat(indent);
    if (isSimpleKey(key)) {
      emitValue(`${lead}${scalarText(key, false, true)}:`, value, indent, lines);
    } else {
      // libyaml's complex key: `? key` then `: value` (keys over 128 characters or multi-line).
      lines.push(`${lead}? ${doubleQuoted(key)}`);
      emitValue(`${' '.repeat(indent)}:`, value, indent, lines);
    }
  });
}

function emitSeq(items: ENode[], indent: number, lines: string[], prefix?: string): void {
  items.forEach((item, i) => {
    const dash = `${i === 0 && prefix !== undefined ? prefix : ' '.repeat(indent)}- `;
    const inner = indent + 2;
    if (item.kind === 'map' && !item.flow && item.entries.length > 0) emitMap(item.entries, inner, lines, dash);
    else if (item.kind === 'seq' && !item.flow && item.items.length > 0) emitSeq(item.items, inner, lines, dash);
    else {
      const block = blockScalar(item, inner, null);
      if (block) lines.push(dash.trimEnd() + ' ' + block.header, ...block.body);
      else lines.push(dash + inline(item, false));
    }
  });
}

/** `head` is everything before the value on its line (`    key:`). */
function emitValue(head: string, value: ENode, parentIndent: number, lines: string[]): void {
  const child = snap(parentIndent);
  if (value.kind === 'map' && !value.flow && value.entries.length > 0) {
    lines.push(head);
    emitMap(value.entries, child, lines);
  } else if (value.kind === 'seq' && !value.flow && value.items.length > 0) {
    lines.push(head);
    emitSeq(value.items, child, lines);
  } else {
    const block = blockScalar(value, child, parentIndent);
    if (block) lines.push(`${head} ${block.header}`, ...block.body);
    else lines.push(`${head} ${inline(value, false)}`);
  }
}

/**
 * A literal block for `node` in block context, or null when it is written inline. `parentIndent`
 * is the indentation of the mapping holding it (null for a sequence item): an indentation
 * indicator is only written where it can be expressed relative to that.
 */
function blockScalar(node: ENode, contentIndent: number, parentIndent: number | null): { header: string; body: string[] } | null {
  let text: string;
  let tag = '';
  if (node.kind === 'str') {
    if (scalarStyle(node.value, false, false) !== 'literal') return null;
    text = node.value;
  } else if (node.kind === 'binary') {
    if (node.oneLine) return null;
    text = base64Lines(node.value);
    if (!text.includes('\n')) return null;
    tag = '!!binary ';
  } else return null;

  let indicator = '';
  if (text.startsWith(' ') || text.startsWith('\n')) {
    const hint = parentIndent === null ? 0 : contentIndent - parentIndent;
    if (hint < 1 || hint > 9) return null; // cannot be said with an indicator here: caller quotes it
    indicator = String(hint);
  }
  let chomp = '';
  if (!text.endsWith('\n')) chomp = '-';
  else if (text === '\n' || text.endsWith('\n\n')) chomp = '+';

  const pad = ' '.repeat(contentIndent);
  const content = text.endsWith('\n') ? text.slice(0, -1) : text;
  const body = content.split('\n').map((line) => (line === '' ? '' : pad + line));
  return { header: `${tag}|${indicator}${chomp}`, body };
}

/** A node on one line: scalars, flow collections, empty collections. */
function inline(node: ENode, inFlow: boolean): string {
  node = longQuotedAsBinary(node, inFlow);
  switch (node.kind) {
    case 'str':
      return scalarText(node.value, inFlow, false);
    case 'raw':
      return node.text;
    case 'binary': {
      const b64 = base64Lines(node.value);
      if (!b64.includes('\n')) return `!!binary ${b64}`;
      // yaml.v3 double-quotes multi-line base64 here; past the bounds it is one plain line (see QUOTED_STRING_MAX).
      const quoted = doubleQuoted(b64);
      return `!!binary ${node.oneLine || !mayQuote(quoted.length - 2) ? b64.replaceAll('\n', '') : quoted}`;
    }
    case 'map':
      return `{${node.entries.map(([k, v]) => `${isSimpleKey(k) ? scalarText(k, true, true) : doubleQuoted(k)}: ${inline(v, true)}`).join(', ')}}`;
    case 'seq':
      return `[${node.items.map((item) => inline(item, true)).join(', ')}]`;
  }
}

/**
 * The longest double-quoted scalar written, and the most double-quoted characters in one
 * document (as written, between the quotes). The `yaml` package reads a double-quoted scalar one character at a time (`res +=
 * ch`) and keeps what it built: about 30 bytes of heap per character once a set is read, where
 * plain or base64 text costs about one. 30 HTTP answers of 1 MB of `\r\n` lines (attack 18t M3),
 * or 31 MiB of Redis commands (18r J2), took over 1 GB to read back, past the 768 MB a mock-set
 * thread may use, so those sets were never written; 27 MiB of 128-character quoted strings (50 per
 * document, as Postgres rows with tabs could give) held 381 MB where the same as plain text held 27.
 *
 * So a string that would need double quotes (`\r`, tabs and other control characters, line
 * breaks inside a flow collection) is written as `!!binary` base64 of its UTF-8 bytes once it is
 * longer than QUOTED_STRING_MAX or the document has used QUOTED_DOCUMENT_MAX such characters,
 * whatever the field. yaml.v3 reads `!!binary` into a Go string as those bytes (Keploy's HTTP
 * `Body`, Generic `Data`, Postgres `RowValues` and `Query`, MySQL `Query` are strings), and
 * debugkit's readers take UTF-8 `!!binary` as that text where they expect text (types.ts `text`,
 * mysql/structured.ts). Short strings (`+OK\r\n`, `*1\r\n$4\r\nPING\r\n`) stay readable. A set
 * within the parse bounds (20,000 documents) then holds at most about 5 M quoted characters.
 */
export const QUOTED_STRING_MAX = 128;
export const QUOTED_DOCUMENT_MAX = 256;

/** Double-quoted characters the document being written may still have (emitDocument is synchronous and sets it). */
let quotedLeft = QUOTED_DOCUMENT_MAX;

/** Whether `chars` more double-quoted characters (as written, between the quotes) are within the bounds; if so they are counted. */
function mayQuote(chars: number): boolean {
  if (chars > QUOTED_STRING_MAX || chars > quotedLeft) return false;
  quotedLeft -= chars;
  return true;
}

/** `node` as written inline: a string that would be double-quoted past the bounds becomes its UTF-8 bytes, on one line. */
function longQuotedAsBinary(node: ENode, inFlow: boolean): ENode {
  if (node.kind !== 'str') return node;
  const style = scalarStyle(node.value, inFlow, false);
  // 'literal' here is a block scalar the caller could not place: it is double-quoted (scalarText).
  if (style === 'plain' || style === 'single') return node;
  // Counted as written, escapes and all (`\x01` is 4 characters to read).
  if (node.value.length <= QUOTED_STRING_MAX && mayQuote(doubleQuoted(node.value).length - 2)) return node;
  // A lone surrogate has no UTF-8 bytes: such text (never recorded: recorders decode strictly) stays escaped.
  if (/\p{Cs}/u.test(node.value)) return node;
  // One line: the 70-column lines of a block literal add their indentation to every line (a fifth
  // more bytes), enough to push a set that fit as text past the 32 MiB a set may have.
  return { kind: 'binary', value: Buffer.from(node.value, 'utf8'), oneLine: true };
}

/** yaml.v3's `encodeBase64`: lines of 70 characters, each ending with a newline, once it is that long. */
function base64Lines(bytes: Uint8Array): string {
  const b64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  if (b64.length < 70) return b64;
  let out = '';
  for (let i = 0; i < b64.length; i += 70) out += b64.slice(i, i + 70) + '\n';
  return out;
}

// ---------------------------------------------------------------- scalar styles

type Style = 'plain' | 'single' | 'double' | 'literal';

function scalarText(s: string, inFlow: boolean, isKey: boolean): string {
  switch (scalarStyle(s, inFlow, isKey)) {
    case 'plain':
      return s;
    case 'single':
      return `'${s.replaceAll("'", "''")}'`;
    default:
      // 'literal' never reaches here: block scalars are handled by blockScalar().
      return doubleQuoted(s);
  }
}

/** yaml.v3's `stringv` choice, then libyaml's `yaml_emitter_select_scalar_style` downgrades. */
export function scalarStyle(s: string, inFlow: boolean, isKey: boolean): Style {
  let style: Style;
  if (s.includes('\n')) style = inFlow ? 'double' : 'literal';
  else if (plainReadsAsString(s)) style = 'plain';
  else style = 'double';

  const a = analyze(s);
  if (style === 'plain') {
    if (inFlow ? !a.flowPlain : !a.blockPlain) style = 'single';
    if (s.length === 0 && (inFlow || isKey)) style = 'single';
  }
  if (style === 'single' && !a.single) style = 'double';
  if (style === 'literal' && (!a.block || inFlow || isKey)) style = 'double';
  // NEL, LS and PS are line breaks to YAML 1.1 readers but not to 1.2 ones: never leave them unescaped.
  if (style !== 'double' && /[\u0085\u2028\u2029]/.test(s)) style = 'double';
  return style;
}

function isSimpleKey(key: string): boolean {
  return key.length <= 128 && !/[\n\r\u0085\u2028\u2029]/.test(key);
}

interface Analysis {
  flowPlain: boolean;
  blockPlain: boolean;
  single: boolean;
  block: boolean;
}

const isBreak = (c: string) => c === '\r' || c === '\n' || c === '\u0085' || c === '\u2028' || c === '\u2029';
const isBlankz = (c: string | undefined) => c === undefined || c === ' ' || c === '\t' || isBreak(c) || c === '\0';

function isPrintable(cp: number): boolean {
  return cp === 0x0a || (cp >= 0x20 && cp <= 0x7e) || cp === 0x85 || (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd && cp !== 0xfeff) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/** libyaml's `yaml_emitter_analyze_scalar` (unicode output on, as yaml.v3 sets it). */
function analyze(s: string): Analysis {
  if (s.length === 0) return { flowPlain: false, blockPlain: true, single: true, block: false };
  const chars = Array.from(s);
  let flowIndicators = false;
  let blockIndicators = false;
  let lineBreaks = false;
  let special = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let previousSpace = false;
  let previousBreak = false;

  if (s.startsWith('---') || s.startsWith('...')) flowIndicators = blockIndicators = true;
  let precededByWhitespace = true;
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    const followedByWhitespace = isBlankz(chars[i + 1]);
    const first = i === 0;
    const last = i === chars.length - 1;
    if (first) {
      if ('#,[]{}&*!|>\'"%@`'.includes(c)) flowIndicators = blockIndicators = true;
      if (c === '?' || c === ':') {
        flowIndicators = true;
        if (followedByWhitespace) blockIndicators = true;
      }
      if (c === '-' && followedByWhitespace) flowIndicators = blockIndicators = true;
    } else {
      if (',?[]{}'.includes(c)) flowIndicators = true;
      if (c === ':') {
        flowIndicators = true;
        if (followedByWhitespace) blockIndicators = true;
      }
      if (c === '#' && precededByWhitespace) flowIndicators = blockIndicators = true;
    }
    const cp = c.codePointAt(0)!;
    // A lone surrogate is not a character at all: escape it.
    if (!isPrintable(cp) || (cp >= 0xd800 && cp <= 0xdfff)) special = true;
    if (isBreak(c)) lineBreaks = true;
    if (c === ' ') {
      if (first) leadingSpace = true;
      if (last) trailingSpace = true;
      if (previousBreak) breakSpace = true;
      previousSpace = true;
      previousBreak = false;
    } else if (isBreak(c)) {
      if (first) leadingBreak = true;
      if (last) trailingBreak = true;
      if (previousSpace) spaceBreak = true;
      previousSpace = false;
      previousBreak = true;
    } else {
      previousSpace = false;
      previousBreak = false;
    }
    precededByWhitespace = isBlankz(c);
  }

  const a: Analysis = { flowPlain: true, blockPlain: true, single: true, block: true };
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) a.flowPlain = a.blockPlain = false;
  if (trailingSpace) a.block = false;
  if (breakSpace) a.flowPlain = a.blockPlain = a.single = false;
  if (spaceBreak || special) a.flowPlain = a.blockPlain = a.single = a.block = false;
  if (lineBreaks) a.flowPlain = a.blockPlain = false;
  if (flowIndicators) a.flowPlain = false;
  if (blockIndicators) a.blockPlain = false;
  return a;
}

// ---------------------------------------------------------------- yaml.v3 resolve()

const RESOLVES_TO_NON_STRING = new Set([
  '',
  '~',
  'null',
  'Null',
  'NULL',
  'true',
  'True',
  'TRUE',
  'false',
  'False',
  'FALSE',
  '.inf',
  '.Inf',
  '.INF',
  '+.inf',
  '+.Inf',
  '+.INF',
  '-.inf',
  '-.Inf',
  '-.INF',
  '.nan',
  '.NaN',
  '.NAN',
  '<<',
]);
/** YAML 1.1 booleans: yaml.v3 reads them as strings but quotes them so YAML 1.1 readers do too. */
const OLD_BOOLS = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'on', 'On', 'ON', 'n', 'N', 'no', 'No', 'NO', 'off', 'Off', 'OFF']);
const BASE60_FLOAT = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/;
const YAML_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** Whether yaml.v3 would write `s` unquoted: it would read back as the same string. */
export function plainReadsAsString(s: string): boolean {
  if (RESOLVES_TO_NON_STRING.has(s) || OLD_BOOLS.has(s) || BASE60_FLOAT.test(s)) return false;
  const c = s[0]!;
  if ((c >= '0' && c <= '9') || c === '+' || c === '-' || c === '.') {
    if (TIMESTAMP.test(s)) return false;
    const plain = s.replaceAll('_', '');
    if (isGoInt(plain)) return false;
    if (YAML_FLOAT.test(plain)) return false;
    if (c === '.' && goParseFloatOk(s)) return false;
  }
  return true;
}

/** Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeding (range ignored: bigger is still a number to Go). */
function isGoInt(s: string): boolean {
  return /^[-+]?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO]?[0-7]+|[1-9][0-9]*|0)$/.test(s);
}

function goParseFloatOk(s: string): boolean {
  return /^[-+]?(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|inf|infinity|nan)$/i.test(s);
}

function doubleQuoted(s: string): string {
  let out = '"';
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    const printable = isPrintable(cp) && !(cp >= 0xd800 && cp <= 0xdfff);
    if (printable && !isBreak(c) && c !== '"' && c !== '\\' && cp !== 0xfeff) {
      out += c;
      continue;
    }
    switch (cp) {
      case 0x00:
        out += '\\0';
        break;
      case 0x07:
        out += '\\a';
        break;
      case 0x08:
        out += '\\b';
        break;
      case 0x09:
        out += '\\t';
        break;
      case 0x0a:
        out += '\\n';
        break;
      case 0x0b:
        out += '\\v';
        break;
      case 0x0c:
        out += '\\f';
        break;
      case 0x0d:
        out += '\\r';
        break;
      case 0x1b:
        out += '\\e';
        break;
      case 0x22:
        out += '\\"';
        break;
      case 0x5c:
        out += '\\\\';
        break;
      case 0x85:
        out += '\\N';
        break;
      case 0xa0:
        out += '\\_';
        break;
      case 0x2028:
        out += '\\L';
        break;
      case 0x2029:
        out += '\\P';
        break;
      default:
        if (cp <= 0xff) out += '\\x' + hex(cp, 2);
        else if (cp <= 0xffff) out += '\\u' + hex(cp, 4);
        else out += '\\U' + hex(cp, 8);
    }
  }
  return out + '"';
}

const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, '0');

// ---------------------------------------------------------------- numbers and keys

/** A number as yaml.v3 writes a Go int or float64 (`strconv.FormatFloat(f, 'g', -1, 64)`). */
export function formatNumber(n: number | bigint): string {
  if (typeof n === 'bigint') return n.toString();
  if (Number.isNaN(n)) return '.nan';
  if (n === Infinity) return '.inf';
  if (n === -Infinity) return '-.inf';
  // An integral value may have been a Go int: write it as one.
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return Object.is(n, -0) ? '-0' : BigInt(n).toString();
  // Go 'g' with the shortest digits: %e when the decimal exponent is < -4 or >= 6
  // (strconv: `if shortest { eprec = 6 }`), %f otherwise.
  const [mantissa, expText] = n.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? '-' : '+';
    const e = String(Math.abs(exp)).padStart(2, '0');
    return `${mantissa}e${sign}${e}`;
  }
  return String(n);
}

/**
 * yaml.v3's map key order (`keyList.Less`): by code point, except that runs of digits compare
 * as numbers and letters sort after non-letters.
 */
export function compareKeys(a: string, b: string): number {
  return keyLess(a, b) ? -1 : keyLess(b, a) ? 1 : 0;
}

const isDigit = (c: string) => /\p{Nd}/u.test(c);
const isLetter = (c: string) => /\p{L}/u.test(c);

function keyLess(a: string, b: string): boolean {
  const ar = Array.from(a);
  const br = Array.from(b);
  let digits = false;
  for (let i = 0; i < ar.length && i < br.length; i++) {
    if (ar[i] === br[i]) {
      digits = isDigit(ar[i]!);
      continue;
    }
    const al = isLetter(ar[i]!);
    const bl = isLetter(br[i]!);
    if (al && bl) return ar[i]!.codePointAt(0)! < br[i]!.codePointAt(0)!;
    if (al || bl) return digits ? al : bl;
    let an = 0n;
    let bn = 0n;
    if (ar[i] === '0' || br[i] === '0') {
      for (let j = i - 1; j >= 0 && isDigit(ar[j]!); j--) {
        if (ar[j] !== '0') {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && isDigit(ar[ai]!); ai++) an = an * 10n + BigInt(ar[ai]!.codePointAt(0)! - 48);
    let bi = i;
    for (; bi < br.length && isDigit(br[bi]!); bi++) bn = bn * 10n + BigInt(br[bi]!.codePointAt(0)! - 48);
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return ar[i]!.codePointAt(0)! < br[i]!.codePointAt(0)!;
  }
  return ar.length < br.length;
}
