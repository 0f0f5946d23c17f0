import { BundleError } from './errors.js';

/**
 * What a client may ask of kubectl against a bundle: an allowlist of verbs and, per verb, of flags,
 * parsed the way kubectl's flag parser (spf13/pflag) parses them: `--flag=value`, `--flag value`,
 * `-xVALUE`, `-x=VALUE`, `-x VALUE`, combined boolean shorthands (`-Ap`), `--` ending the flags.
 * Anything the policy does not understand is refused, and kubectl receives an argv rebuilt from the
 * parse (verb first, one spelling per flag), never the client's words.
 */

type Kind = 'bool' | 'value' | 'int' | 'output' | 'template';

interface FlagSpec {
  long: string;
  short?: string;
  kind: Kind;
}

const f = (long: string, kind: Kind, short?: string): FlagSpec => ({ long, kind, short });

/** Kubectl's own options that only change how kubectl talks or prints, never where. */
const GLOBAL: FlagSpec[] = [
  f('namespace', 'value', 'n'),
  f('request-timeout', 'value'),
  f('v', 'int', 'v'),
  f('match-server-version', 'bool'),
  f('warnings-as-errors', 'bool'),
  f('help', 'bool', 'h'),
];

/** Plain output formats; template formats (`jsonpath=...`) are checked separately. */
const PRINT_FORMATS = ['json', 'yaml', 'name'];
/** Output formats that carry their template inline (the `-file` forms read host files and are refused). */
const INLINE_TEMPLATES = ['jsonpath', 'jsonpath-as-json', 'go-template', 'template', 'custom-columns'];

interface VerbSpec {
  flags: FlagSpec[];
  /** Plain `-o` formats this verb accepts; templates too when `templates`. */
  outputs?: string[];
  templates?: boolean;
  /** Most positional arguments (resource types and names); undefined: any number. */
  maxArgs?: number;
  /** The first positional must be one of these (a subcommand). */
  subcommands?: string[];
}

const ALL_NS = f('all-namespaces', 'bool', 'A');
const SELECTOR = f('selector', 'value', 'l');
const CHUNK = f('chunk-size', 'int');
const NO_HEADERS = f('no-headers', 'bool');
const OUTPUT = f('output', 'output', 'o');
const TEMPLATE = f('template', 'template');
const MISSING_KEYS = f('allow-missing-template-keys', 'bool');
const MANAGED = f('show-managed-fields', 'bool');
const SORT_BY = f('sort-by', 'value');

export const VERBS: Record<string, VerbSpec> = {
  get: {
    flags: [
      ALL_NS,
      CHUNK,
      f('field-selector', 'value'),
      f('ignore-not-found', 'bool'),
      f('label-columns', 'value', 'L'),
      NO_HEADERS,
      OUTPUT,
      SELECTOR,
      f('server-print', 'bool'),
      f('show-kind', 'bool'),
      f('show-labels', 'bool'),
      MANAGED,
      SORT_BY,
      f('subresource', 'value'),
      TEMPLATE,
      MISSING_KEYS,
    ],
    outputs: [...PRINT_FORMATS, 'wide'],
    templates: true,
  },
  describe: { flags: [ALL_NS, CHUNK, SELECTOR, f('show-events', 'bool')] },
  logs: {
    flags: [
      f('all-containers', 'bool'),
      f('all-pods', 'bool'),
      f('container', 'value', 'c'),
      f('follow', 'bool', 'f'),
      f('ignore-errors', 'bool'),
      f('limit-bytes', 'int'),
      f('max-log-requests', 'int'),
      f('pod-running-timeout', 'value'),
      f('prefix', 'bool'),
      f('previous', 'bool', 'p'),
      SELECTOR,
      f('tail', 'int'),
    ],
    maxArgs: 2,
  },
  events: {
    flags: [ALL_NS, CHUNK, f('for', 'value'), NO_HEADERS, OUTPUT, MANAGED, f('types', 'value'), TEMPLATE, MISSING_KEYS],
    outputs: PRINT_FORMATS,
    templates: true,
    maxArgs: 0,
  },
  'api-resources': {
    flags: [f('api-group', 'value'), f('cached', 'bool'), f('categories', 'value'), f('namespaced', 'bool'), NO_HEADERS, OUTPUT, SORT_BY, f('verbs', 'value')],
    outputs: ['wide', 'name', 'json', 'yaml'],
    maxArgs: 0,
  },
  'api-versions': { flags: [], maxArgs: 0 },
  version: { flags: [f('client', 'bool'), OUTPUT], outputs: ['json', 'yaml'], maxArgs: 0 },
  'cluster-info': { flags: [], maxArgs: 0 },
  explain: { flags: [f('api-version', 'value'), f('recursive', 'bool'), OUTPUT], outputs: ['plaintext', 'plaintext-openapiv2'], maxArgs: 1 },
  top: {
    flags: [ALL_NS, SELECTOR, NO_HEADERS, f('containers', 'bool'), SORT_BY, f('sum', 'bool'), f('use-protocol-buffers', 'bool'), f('show-capacity', 'bool')],
    subcommands: ['pod', 'pods', 'po', 'node', 'nodes', 'no'],
    maxArgs: 2,
  },
};

/** Why some flags kubectl knows are refused: named in the error, so the agent knows it is not a typo. */
const REFUSED: Array<[string[], string]> = [
  [
    [
      'kubeconfig',
      'server',
      's',
      'token',
      'context',
      'cluster',
      'user',
      'as',
      'as-group',
      'as-uid',
      'certificate-authority',
      'client-certificate',
      'client-key',
      'username',
      'password',
      'insecure-skip-tls-verify',
      'tls-server-name',
      'proxy-url',
      'insecure-skip-tls-verify-backend',
    ],
    'it would point kubectl away from the bundle (debugkit connects kubectl to the bundle itself)',
  ],
  [['filename', 'f', 'kustomize', 'k', 'recursive', 'R', 'raw'], "it would make kubectl read files or raw URLs instead of the bundle's resources"],
  [
    [
      'profile',
      'profile-output',
      'log-file',
      'log-dir',
      'log-file-max-size',
      'cache-dir',
      'output-directory',
      'log-backtrace-at',
      'vmodule',
      'add-dir-header',
      'alsologtostderr',
      'logtostderr',
      'one-output',
      'skip-headers',
      'skip-log-headers',
      'stderrthreshold',
    ],
    'it would make kubectl write files or change its logging',
  ],
  [['watch', 'w', 'watch-only', 'output-watch-events'], 'a bundle is a snapshot: nothing changes, so there is nothing to watch'],
  [['since', 'since-time', 'timestamps'], 'the logs in a support bundle carry no per-line times: use --tail N (the newest lines) or read_file on the log file'],
];

export interface ParsedFlag {
  spec: FlagSpec;
  value: string;
}

export interface KubectlCommand {
  verb: string;
  positionals: string[];
  flags: ParsedFlag[];
  /** The last `-o` value, if any. */
  output?: string;
  /** The argv for kubectl, rebuilt from the parse. */
  argv: string[];
}

function refuse(message: string): never {
  throw new BundleError('CommandNotSupportedError', message);
}

function verbList(): string {
  return Object.keys(VERBS).join(', ');
}

function flagName(spec: FlagSpec): string {
  return spec.short ? `-${spec.short}/--${spec.long}` : `--${spec.long}`;
}

function allowedFlags(verb: string | undefined): string {
  const specs = verb ? [...(VERBS[verb]?.flags ?? []), ...GLOBAL] : GLOBAL;
  return specs.map(flagName).join(', ');
}

function refusedReason(name: string): string | undefined {
  return REFUSED.find(([names]) => names.includes(name))?.[1];
}

function unknownFlag(flag: string, name: string, verb: string | undefined, word = flag): never {
  const shown = word === flag ? `'${flag}'` : `'${flag}' (in '${word}')`;
  const reason = refusedReason(name);
  const where = verb ? `'kubectl ${verb}'` : 'the command';
  if (!verb && !reason) {
    refuse(
      `Flag ${shown} is not supported before the command in bundle context: write the command first, then its flags (e.g. "get pods -A"). Flags allowed before the command: ${allowedFlags(undefined)}`,
    );
  }
  const why = reason ? `: ${reason}` : '';
  refuse(`Flag ${shown} is not supported by ${where} in bundle context${why}. Flags ${verb ? `'kubectl ${verb}'` : 'kubectl'} accepts: ${allowedFlags(verb)}`);
}

const BOOL_VALUES: Record<string, boolean> = { '1': true, t: true, T: true, true: true, TRUE: true, True: true, '0': false, f: false, F: false, false: false, FALSE: false, False: false };

/** Checks one flag's value by its kind; returns the value kubectl will get. */
function checkValue(spec: FlagSpec, written: string, value: string, verb: string | undefined): string {
  if (spec.kind === 'bool') {
    const b = BOOL_VALUES[value];
    if (b === undefined) refuse(`Flag '${written}' takes true or false, not '${value}'`);
    return String(b);
  }
  if (spec.kind === 'int' && !/^-?\d{1,12}$/.test(value)) refuse(`Flag '${written}' takes a whole number, not '${value}'`);
  if (spec.kind === 'output') checkOutput(written, value, verb);
  return value;
}

function checkOutput(written: string, value: string, verb: string | undefined): void {
  const spec = verb ? VERBS[verb] : undefined;
  const plain = spec?.outputs ?? [];
  if (plain.includes(value)) return;
  const eq = value.indexOf('=');
  const format = eq < 0 ? value : value.slice(0, eq);
  if (spec?.templates && INLINE_TEMPLATES.includes(format) && (eq >= 0 || format !== 'custom-columns')) return;
  const allowed = [...plain, ...(spec?.templates ? INLINE_TEMPLATES.map((t) => `${t}=...`) : [])].join(', ');
  const fileNote = /-file$|^templatefile$/.test(format) ? ': output formats that read a template from a file are refused (give the template inline)' : '';
  refuse(`Output format '${written} ${value}' is not supported by 'kubectl ${verb}' in bundle context${fileNote}. Formats allowed: ${allowed || 'none'}`);
}

function lookupLong(table: FlagSpec[], name: string): FlagSpec | undefined {
  return table.find((s) => s.long === name);
}

function lookupShort(table: FlagSpec[], ch: string): FlagSpec | undefined {
  return table.find((s) => s.short === ch);
}

/** Parses a split command (optionally starting with "kubectl") against the policy. */
export function parseKubectl(words: string[]): KubectlCommand {
  const args = words[0] === 'kubectl' ? words.slice(1) : words;
  let verb: string | undefined;
  let table = GLOBAL;
  const positionals: string[] = [];
  const flags: ParsedFlag[] = [];
  let dashdash = false;

  const take = (spec: FlagSpec, written: string, value: string) => flags.push({ spec, value: checkValue(spec, written, value, verb) });
  const positional = (word: string) => {
    if (verb === undefined) {
      if (!Object.hasOwn(VERBS, word)) {
        refuse(`Command 'kubectl ${word}' is not supported in bundle context: a bundle is read-only (supported: ${verbList()})`);
      }
      verb = word;
      table = [...VERBS[word]!.flags, ...GLOBAL];
      return;
    }
    if (word.startsWith('-')) refuse(`Argument '${word}' is not supported in bundle context: resource names never start with '-'`);
    positionals.push(word);
  };

  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (dashdash || word === '-' || !word.startsWith('-')) {
      positional(word);
      continue;
    }
    if (word === '--') {
      dashdash = true;
      continue;
    }
    if (word.startsWith('--')) {
      const body = word.slice(2);
      const eq = body.indexOf('=');
      const name = eq < 0 ? body : body.slice(0, eq);
      if (name === '' || name.startsWith('-') || name.startsWith('=')) refuse(`Flag '${word}' is not valid flag syntax`);
      const spec = lookupLong(table, name);
      if (!spec) unknownFlag(`--${name}`, name, verb);
      if (eq >= 0) take(spec, `--${name}`, body.slice(eq + 1));
      else if (spec.kind === 'bool') take(spec, `--${name}`, 'true');
      else if (i + 1 < args.length) take(spec, `--${name}`, args[++i]!);
      else refuse(`Flag '--${name}' needs a value`);
      continue;
    }
    // Shorthands: "-abc" is -a -b -c while they are booleans; a value flag takes the rest of the
    // word ("-nkube-system", "-n=kube-system") or, at its end, the next word.
    let shorts = word.slice(1);
    while (shorts.length > 0) {
      const ch = shorts[0]!;
      const spec = lookupShort(table, ch);
      if (!spec) unknownFlag(`-${ch}`, ch, verb, word);
      if (shorts.length > 2 && shorts[1] === '=') {
        take(spec, `-${ch}`, shorts.slice(2));
        break;
      }
      if (spec.kind === 'bool') {
        take(spec, `-${ch}`, 'true');
        shorts = shorts.slice(1);
        continue;
      }
      if (shorts.length > 1) take(spec, `-${ch}`, shorts.slice(1));
      else if (i + 1 < args.length) take(spec, `-${ch}`, args[++i]!);
      else refuse(`Flag '-${ch}' needs a value`);
      break;
    }
  }

  if (verb === undefined) refuse(`No kubectl command given: try "get pods -A" (supported: ${verbList()})`);
  const spec = VERBS[verb]!;
  if (spec.subcommands) {
    const sub = positionals[0];
    if (sub === undefined || !spec.subcommands.includes(sub)) {
      refuse(`Command 'kubectl ${verb}${sub ? ` ${sub}` : ''}' is not supported in bundle context: use 'kubectl ${verb}' with one of ${spec.subcommands.join(', ')}`);
    }
  }
  if (spec.maxArgs !== undefined && positionals.length > spec.maxArgs) {
    const extra = positionals[spec.maxArgs]!;
    refuse(`Command 'kubectl ${verb} ${extra}' is not supported in bundle context: 'kubectl ${verb}' takes ${spec.maxArgs === 0 ? 'no arguments' : `at most ${spec.maxArgs}`} here`);
  }
  const outputs = flags.filter((fl) => fl.spec.kind === 'output').map((fl) => fl.value);
  const output = outputs.at(-1);
  if (flags.some((fl) => fl.spec.kind === 'template')) {
    const format = output?.split('=', 1)[0];
    if (!format || !['jsonpath', 'jsonpath-as-json', 'go-template', 'template'].includes(format)) {
      refuse(`Flag '--template' is supported only with an inline template format (-o jsonpath, -o go-template): a template file would be read from the host`);
    }
  }
  return { verb, positionals, flags, output, argv: [verb, ...positionals, ...flags.flatMap(render)] };
}

/** One unambiguous spelling per flag: "-n VALUE" / "-A" for shorthands, "--name=VALUE" otherwise. */
function render({ spec, value }: ParsedFlag): string[] {
  if (spec.kind === 'bool') {
    if (spec.short) return [value === 'true' ? `-${spec.short}` : `-${spec.short}=false`];
    return [value === 'true' ? `--${spec.long}` : `--${spec.long}=false`];
  }
  return spec.short ? [`-${spec.short}`, value] : [`--${spec.long}=${value}`];
}
