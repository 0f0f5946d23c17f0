import { BundleError } from '../errors.js';

/**
 * A glob matcher for grep_files' glob_pattern (node's path.matchesGlob is missing before 20.17
 * and experimental after). Supports `*` and `?` (not crossing `/`), `**` (any depth, `**\/`
 * also matching no directory), `[abc]`, `[a-z]`, `[!x]`/`[^x]`, `{a,b}` (nestable) and `\` escapes.
 * A pattern without `/` is matched against the file name, one with `/` against the path relative
 * to the searched directory.
 */
export interface GlobMatcher {
  readonly pattern: string;
  matches(relativePath: string): boolean;
}

export function compileGlob(pattern: string): GlobMatcher {
  const re = new RegExp(`^${globToRegExpSource(pattern)}$`);
  const byName = !pattern.includes('/');
  return {
    pattern,
    matches(relativePath: string): boolean {
      const subject = byName ? relativePath.slice(relativePath.lastIndexOf('/') + 1) : relativePath;
      return re.test(subject);
    },
  };
}

function globToRegExpSource(glob: string): string {
  let out = '';
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    switch (c) {
      case '\\':
        if (i + 1 < glob.length) out += escapeRe(glob[++i]!);
        else out += '\\\\';
        break;
      case '*':
        if (glob[i + 1] === '*') {
          i++;
          if (glob[i + 1] === '/') {
            i++;
            out += '(?:.*/)?'; // "**/" : zero or more directories
          } else {
            out += '.*';
          }
        } else {
          out += '[^/]*';
        }
        break;
      case '?':
        out += '[^/]';
        break;
      case '[': {
        const end = classEnd(glob, i);
        if (end < 0) {
          out += '\\[';
          break;
        }
        let body = glob.slice(i + 1, end);
        let negate = false;
        if (body.startsWith('!') || body.startsWith('^')) {
          negate = true;
          body = body.slice(1);
        }
        out += `[${negate ? '^/' : ''}${body.replace(/\\/g, '\\\\').replace(/\]/g, '\\]')}]`;
        i = end;
        break;
      }
      case '{':
        depth++;
        out += '(?:';
        break;
      case '}':
        if (depth > 0) {
          depth--;
          out += ')';
        } else {
          out += '\\}';
        }
        break;
      case ',':
        out += depth > 0 ? '|' : ',';
        break;
      default:
        out += escapeRe(c);
    }
  }
  if (depth > 0) throw new BundleError('InvalidPatternError', `Invalid glob_pattern '${glob}': unclosed '{'`);
  return out;
}

/** Index of the `]` closing the class opened at `start`, or -1 (a `]` right after `[` or `[!` is literal). */
function classEnd(glob: string, start: number): number {
  let i = start + 1;
  if (glob[i] === '!' || glob[i] === '^') i++;
  if (glob[i] === ']') i++;
  for (; i < glob.length; i++) if (glob[i] === ']') return i;
  return -1;
}

function escapeRe(c: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(c) ? `\\${c}` : c;
}
