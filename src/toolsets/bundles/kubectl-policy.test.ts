import { describe, expect, it } from 'vitest';
import { parseCommand } from './command.js';
import { VERBS } from './kubectl-policy.js';

function refusal(line: string): Error {
  try {
    parseCommand(line);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`accepted: ${line} -> ${JSON.stringify(parseCommand(line).argv)}`);
}

/** [command, the part the error must name]. Every one of these reached kubectl (or a file) under the old denylist or would under a naive one. */
const HOSTILE: Array<[string, string | RegExp]> = [
  // Connection flags, every spelling pflag accepts.
  ['get pods -s https://evil', "'-s'"],
  ['get pods -shttps://evil', "'-s' (in '-shttps://evil')"],
  ['get pods -s=https://evil', "'-s' (in '-s=https://evil')"],
  ['get pods -As https://evil', "'-s' (in '-As')"],
  ['get pods -Ashttps://evil', "'-s' (in '-Ashttps://evil')"],
  ['get pods --server https://evil', "'--server'"],
  ['get pods --server=https://evil', "'--server'"],
  ['--server=https://evil get pods', "'--server'"],
  ['-s https://evil get pods', "'-s'"],
  ['get pods --kubeconfig /etc/kubernetes/admin.conf', "'--kubeconfig'"],
  ['get pods --kubeconfig=/root/.kube/config', "'--kubeconfig'"],
  ['--kubeconfig=/root/.kube/config get pods', "'--kubeconfig'"],
  ['get pods --context prod', "'--context'"],
  ['get pods --cluster=prod', "'--cluster'"],
  ['get pods --user admin', "'--user'"],
  ['get pods --token=abc', "'--token'"],
  ['get pods --as system:admin', "'--as'"],
  ['get pods --as-group=system:masters', "'--as-group'"],
  ['get pods --as-uid 0', "'--as-uid'"],
  ['get pods --certificate-authority=/etc/ssl/ca.pem', "'--certificate-authority'"],
  ['get pods --client-certificate /x', "'--client-certificate'"],
  ['get pods --client-key=/x', "'--client-key'"],
  ['get pods --username=a', "'--username'"],
  ['get pods --password=b', "'--password'"],
  ['get pods --insecure-skip-tls-verify', "'--insecure-skip-tls-verify'"],
  ['get pods --tls-server-name=evil', "'--tls-server-name'"],
  ['get pods --proxy-url=http://evil', "'--proxy-url'"],
  ['logs x --insecure-skip-tls-verify-backend', "'--insecure-skip-tls-verify-backend'"],
  // Flags that read host files.
  ['get -f /etc/passwd', "'-f'"],
  ['get -f/etc/passwd', "'-f' (in '-f/etc/passwd')"],
  ['get -Af/etc/passwd', "'-f' (in '-Af/etc/passwd')"],
  ['get --filename=/etc/shadow', "'--filename'"],
  ['describe -f /etc/passwd', "'-f'"],
  ['get -k /etc', "'-k'"],
  ['get --kustomize=/etc', "'--kustomize'"],
  ['get -R -f /etc', "'-R'"],
  ['get --raw /api/v1/namespaces', "'--raw'"],
  ['get --raw=/metrics', "'--raw'"],
  // Output formats that read files.
  ['get pods -o go-template-file=/etc/passwd', 'go-template-file=/etc/passwd'],
  ['get pods -ogo-template-file=/etc/passwd', 'go-template-file=/etc/passwd'],
  ['get pods -o=go-template-file=/etc/passwd', 'go-template-file=/etc/passwd'],
  ['get pods --output=jsonpath-file=/etc/passwd', 'jsonpath-file=/etc/passwd'],
  ['get pods --output jsonpath-file=/etc/passwd', 'jsonpath-file=/etc/passwd'],
  ['get pods -o templatefile=/etc/passwd', 'templatefile=/etc/passwd'],
  ['get pods -o templatefile --template=/etc/passwd', 'templatefile'],
  ['get pods -o go-template-file --template /etc/passwd', 'go-template-file'],
  ['get pods -o custom-columns-file=/etc/passwd', 'custom-columns-file=/etc/passwd'],
  ['get pods --template=/etc/passwd', "'--template'"],
  ['get pods -Ao jsonpath-file=/etc/passwd', 'jsonpath-file=/etc/passwd'],
  ['events -o go-template-file=/etc/passwd', 'go-template-file=/etc/passwd'],
  ['get pods -o json -o jsonpath-file=/etc/passwd', 'jsonpath-file=/etc/passwd'],
  // Flags that write files or change logging.
  ['get pods --profile=cpu', "'--profile'"],
  ['get pods --profile cpu --profile-output=/etc/cron.d/x', "'--profile'"],
  ['get pods --profile-output /tmp/x', "'--profile-output'"],
  ['get pods --log-file=/etc/cron.d/x', "'--log-file'"],
  ['get pods --log-dir /tmp', "'--log-dir'"],
  ['get pods --cache-dir=/tmp/x', "'--cache-dir'"],
  ['get pods --alsologtostderr', "'--alsologtostderr'"],
  ['get pods --vmodule=*=9', "'--vmodule'"],
  ['cluster-info dump --output-directory=/tmp/x', "'--output-directory'"],
  ['cluster-info dump', 'cluster-info dump'],
  ['--log-file=/tmp/x get pods', "'--log-file'"],
  // Verbs that change a cluster, or run something, in any position.
  ['exec -it x -- sh', 'kubectl exec'],
  ['-n get delete pods', 'kubectl delete'],
  ['-n=x delete pods', 'kubectl delete'],
  ['-nget delete pods', 'kubectl delete'],
  ['--namespace get delete pod x', 'kubectl delete'],
  ['--v 9 delete pod x', 'kubectl delete'],
  ['-A get pods', "'-A'"],
  ['--all-namespaces get pods', "'--all-namespaces'"],
  ['-- delete pod x', 'kubectl delete'],
  ['apply -f x.yaml', 'kubectl apply'],
  ['edit deploy x', 'kubectl edit'],
  ['patch pod x -p {}', 'kubectl patch'],
  ['cp x:/etc/passwd /tmp/p', 'kubectl cp'],
  ['port-forward x 80', 'kubectl port-forward'],
  ['proxy --port=0', 'kubectl proxy'],
  ['config view --raw', 'kubectl config'],
  ['plugin list', 'kubectl plugin'],
  ['evil-plugin', 'kubectl evil-plugin'],
  ['debug node/x -it --image=busybox', 'kubectl debug'],
  ['auth can-i --list', 'kubectl auth'],
  ['top pod -- --server=x', 'resource names never start'],
  ['get -- -s', 'resource names never start'],
  ['top', "'kubectl top'"],
  ['top secrets', "'kubectl top secrets'"],
  ['version extra', "'kubectl version extra'"],
  ['api-versions x', "'kubectl api-versions x'"],
  // Watches, and times a bundle's logs do not have.
  ['get pods -w', "'-w'"],
  ['get pods --watch', "'--watch'"],
  ['get pods -Aw', "'-w' (in '-Aw')"],
  ['get pods --watch-only', "'--watch-only'"],
  ['logs x --since=1h', "'--since'"],
  ['logs x --since 1h', "'--since'"],
  ['logs x --since-time=2025-04-11T00:00:00Z', "'--since-time'"],
  ['logs x --timestamps', "'--timestamps'"],
  // Flags of another verb, unknown flags, bad values and bad syntax.
  ['describe pods -o json', "'-o'"],
  ['logs x -o json', "'-o'"],
  ['get pods -c x', "'-c'"],
  ['get pods --follow', "'--follow'"],
  ['get pods --no-such-flag', "'--no-such-flag'"],
  ['get pods -Z', "'-Z'"],
  ['get pods -A=maybe', 'true or false'],
  ['get pods --all-namespaces=yes', 'true or false'],
  ['logs x --tail=ten', 'whole number'],
  ['logs x --tail', 'needs a value'],
  ['get pods -n', 'needs a value'],
  ['get pods ---server=x', 'not valid flag syntax'],
  ['get pods --=x', 'not valid flag syntax'],
  ['get pods -A=', "'-='"],
  ['get pods -o yaml2', "'-o yaml2'"],
  ['version -o wide', "'-o wide'"],
  ['get pods -o custom-columns', "'-o custom-columns'"],
  ['', 'No kubectl command given'],
  ['kubectl', 'No kubectl command given'],
  ['-n kube-system', 'No kubectl command given'],
];

describe('the kubectl policy refuses hostile spellings', () => {
  it('has a table of at least 80', () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(80);
  });

  it.each(HOSTILE)('%s', (line, part) => {
    const err = refusal(line);
    expect(err.name).toBe('CommandNotSupportedError');
    if (typeof part === 'string') expect(err.message).toContain(part);
    else expect(err.message).toMatch(part);
  });

  it('says what is allowed', () => {
    expect(refusal('get pods -s x').message).toMatch(/it would point kubectl away from the bundle.*Flags 'kubectl get' accepts: -A\/--all-namespaces, /);
    expect(refusal('get pods -o go-template-file=/etc/passwd').message).toMatch(/read a template from a file.*Formats allowed: json, yaml, name, wide, jsonpath=\.\.\./);
    expect(refusal('delete pod x').message).toMatch(/supported: get, describe, logs, events, api-resources/);
    expect(refusal('-A get pods').message).toMatch(/write the command first, then its flags/);
    expect(refusal('logs x --since=1h').message).toMatch(/use --tail N/);
  });
});

describe('the kubectl policy accepts what reads the bundle, rebuilt', () => {
  it.each([
    ['get pods -A', ['get', 'pods', '-A']],
    ['kubectl get pods', ['get', 'pods']],
    ['get pods -n kube-system', ['get', 'pods', '-n', 'kube-system']],
    ['-n kube-system get pods', ['get', 'pods', '-n', 'kube-system']],
    ['-nkube-system get pods', ['get', 'pods', '-n', 'kube-system']],
    ['-n=kube-system get pods', ['get', 'pods', '-n', 'kube-system']],
    ['--namespace=kube-system describe pod x', ['describe', 'pod', 'x', '-n', 'kube-system']],
    ['get pods -owide', ['get', 'pods', '-o', 'wide']],
    ['get pods -Aowide', ['get', 'pods', '-A', '-o', 'wide']],
    ['get pods --output=json', ['get', 'pods', '-o', 'json']],
    ['get pods -A=false', ['get', 'pods', '-A=false']],
    ['get pods --all-namespaces=0', ['get', 'pods', '-A=false']],
    ['get pods --show-labels', ['get', 'pods', '--show-labels']],
    ['get pods -l app=web,tier!=db', ['get', 'pods', '-l', 'app=web,tier!=db']],
    ['get pods -lapp=web', ['get', 'pods', '-l', 'app=web']],
    ['get pods --field-selector status.phase=Running', ['get', 'pods', '--field-selector=status.phase=Running']],
    ['get pods -o jsonpath={.items[*].metadata.name}', ['get', 'pods', '-o', 'jsonpath={.items[*].metadata.name}']],
    ['get pods -o go-template --template={{.kind}}', ['get', 'pods', '-o', 'go-template', '--template={{.kind}}']],
    ['get pods -o custom-columns=NAME:.metadata.name', ['get', 'pods', '-o', 'custom-columns=NAME:.metadata.name']],
    ['get pods --sort-by=.metadata.name', ['get', 'pods', '--sort-by=.metadata.name']],
    ['get -- pods', ['get', 'pods']],
    ['logs x -n ns --tail 50', ['logs', 'x', '-n', 'ns', '--tail=50']],
    ['logs x -c app -p', ['logs', 'x', '-c', 'app', '-p']],
    ['logs x -pcapp', ['logs', 'x', '-p', '-c', 'app']],
    ['logs x -f', ['logs', 'x', '-f']],
    ['logs deploy/x --all-containers --prefix', ['logs', 'deploy/x', '--all-containers', '--prefix']],
    ['events -A --types=Warning', ['events', '-A', '--types=Warning']],
    ['api-resources --namespaced=true -o wide', ['api-resources', '--namespaced', '-o', 'wide']],
    ['api-versions', ['api-versions']],
    ['version -o json', ['version', '-o', 'json']],
    ['cluster-info', ['cluster-info']],
    ['explain pods --recursive', ['explain', 'pods', '--recursive']],
    ['top pod -A', ['top', 'pod', '-A']],
    ['get pods -v=6 --request-timeout 5s', ['get', 'pods', '-v', '6', '--request-timeout=5s']],
    ['get pods -n -A', ['get', 'pods', '-n', '-A']],
  ])('%s', (line, argv) => {
    expect(parseCommand(line).argv).toEqual(argv);
  });

  it('reports the output format it chose', () => {
    expect(parseCommand('get pods').output).toBeUndefined();
    expect(parseCommand('get pods -oyaml').output).toBe('yaml');
    expect(parseCommand('get pods -o json -o name').output).toBe('name');
  });
});

describe('the kubectl policy on random spellings', () => {
  // Words an attacker would combine: verbs, allowed and refused flags in every pflag spelling, values.
  const WORDS = [
    'get',
    'describe',
    'logs',
    'delete',
    'exec',
    'pods',
    'x',
    '--',
    '-',
    '-A',
    '-As',
    '-sA',
    '-Ao',
    '-oA',
    '-n',
    '-nx',
    '-n=x',
    '-s',
    '-shttp://e',
    '--server=http://e',
    '--server',
    '-o',
    '-ojson',
    '-o=json',
    'json',
    'go-template-file=/etc/passwd',
    '-ogo-template-file=/etc/passwd',
    '--template',
    '--template=/etc/passwd',
    '-f',
    '-f/etc/passwd',
    '-p',
    '-pc',
    '-c',
    '--tail',
    '--tail=5',
    '5',
    '--kubeconfig=/k',
    '-v',
    '-v9',
    '--v=9',
    '-l',
    'a=b',
    '--all-namespaces=false',
    '-A=false',
    '-A=',
    '---x',
    '--=',
    '-h',
    '--raw',
    '/api',
    'cluster-info',
    'dump',
    'top',
    'pod',
  ];
  it('whatever it accepts, it rebuilds into an argv that parses to itself and holds only flags it knows', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      const words = Array.from({ length: 1 + rand(6) }, () => WORDS[rand(WORDS.length)]!);
      let parsed;
      try {
        parsed = parseCommand(words.map((w) => `'${w}'`).join(' '));
      } catch (err) {
        expect((err as Error).name).toBe('CommandNotSupportedError');
        continue;
      }
      accepted++;
      expect(parseCommand(parsed.argv.map((w) => `'${w}'`).join(' ')).argv).toEqual(parsed.argv);
      const again = parseCommand(parsed.argv.map((w) => `'${w}'`).join(' '));
      expect(again.flags.map((f) => [f.spec.long, f.value])).toEqual(parsed.flags.map((f) => [f.spec.long, f.value]));
      const known = new Set([...VERBS[parsed.verb]!.flags.map((f) => f.long), 'namespace', 'request-timeout', 'v', 'match-server-version', 'warnings-as-errors', 'help']);
      for (const f of parsed.flags) expect(known.has(f.spec.long)).toBe(true);
      if (parsed.output !== undefined) expect(parsed.output).not.toMatch(/file/);
    }
    expect(accepted).toBeGreaterThan(100);
  });
});
