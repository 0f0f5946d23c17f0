import picomatch from 'picomatch';
import { BundleError } from '../errors.js';

/**
 * grep_files' glob_pattern, matched with picomatch (no hand-written glob-to-RegExp translation:
 * a class like `[...]` is parsed, never pasted into a RegExp). Supported: `*` and `?` (not crossing
 * `/`), `**` (any depth, `**\/` also matching no directory), `[abc]`, `[a-z]`, `[!x]`/`[^x]`,
 * POSIX classes (`[[:digit:]]`), `{a,b}` (nestable) and `\` escapes. Extglobs (`+(a|b)`) and a
 * leading `!` (negation) are off: those characters are matched as themselves. Dot files match.
 * A pattern without `/` is matched against the file name, one with `/` against the path relative
 * to the searched directory.
 */
export interface GlobMatcher {
  readonly pattern: string;
  matches(relativePath: string): boolean;
}

const MAX_GLOB_LENGTH = 1000;

export function compileGlob(pattern: string): GlobMatcher {
  if (pattern.length > MAX_GLOB_LENGTH) throw invalid(pattern, `longer than ${MAX_GLOB_LENGTH} characters`);
  const unbalanced = unbalancedBrace(pattern);
  if (unbalanced) throw invalid(pattern, unbalanced);
  let test: (subject: string) => boolean;
  try {
    test = picomatch(literalGroups(pattern), { dot: true, noextglob: true, nonegate: true, posix: true, strictSlashes: true });
  } catch (err) {
    throw invalid(pattern, err instanceof Error ? err.message : String(err));
  }
  const byName = !pattern.includes('/');
  return {
    pattern,
    matches(relativePath: string): boolean {
      const subject = byName ? relativePath.slice(relativePath.lastIndexOf('/') + 1) : relativePath;
      return test(subject);
    },
  };
}

/**
 * picomatch reads `(a|b)` as a regex group even with extglobs off; the old matcher (and the
 * documented syntax) has no groups: `(`, `)` and `|` outside `[...]` are escaped to match themselves.
 */
function literalGroups(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '\\') {
      out += glob.slice(i, i + 2);
      i++;
    } else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close < 0) out += c;
      else {
        out += glob.slice(i, close + 1);
        i = close;
      }
    } else if (c === '(' || c === ')' || c === '|') {
      out += `\\${c}`;
    } else {
      out += c;
    }
  }
  return out;
}

function invalid(glob: string, why: string): BundleError {
  return new BundleError('InvalidPatternError', `Invalid glob_pattern '${glob}': ${why}`);
}

/** Why the braces of `glob` do not pair up ('' when they do); `\{` and braces inside `[...]` do not count. */
function unbalancedBrace(glob: string): string {
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '\\') i++;
    else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close > 0) i = close;
    } else if (c === '{') depth++;
    else if (c === '}' && depth > 0) depth--;
  }
  return depth > 0 ? "unclosed '{'" : '';
}
