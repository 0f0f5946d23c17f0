/**
 * The gdb policy's test corpus: spellings of every refusal family (SHELL: leaves the debugger;
 * FILES: a host path outside the root) and commands that stay inside (ALLOWED). The unit tests
 * (policy.test.ts) classify them; the e2e test (test/gdb-scopes.test.ts) sends them through a
 * real server three ways. Pids: 4242 is the session's own program in the unit tests.
 */

export const SHELL = [
  'shell id', 'she id', 'shel id', '!id', '! id', 'pipe print 1 | sh', 'pip p 1 | sh', '| p 1 | sh', '|p 1|sh',
  'python import os', 'py import os', 'pyt import os', 'pi', 'python-interactive', 'PYTHON import os',
  'guile (system "id")', 'gu 1', 'guile-repl', 'gr', 'source /tmp/x.gdb', 'sou x.gdb', 'so x', 'eval "shell id"', 'ev "she"',
  'make', 'mak all', 'edit main', 'compile code system("id")', 'define evil', 'def evil', 'document x', 'commands 1',
  'comm', 'if 1', 'while 1', 'alias x = shell', 'cd /', 'cd sub', 'target remote | sh -c id', 'tar ext :1234',
  'targ remote 10.0.0.1:1', 'new-ui mi /dev/pts/1', 'interpreter-exec console "shell id"', 'maintenance print msymbols /tmp/x',
  'mt print x', 'jit-reader-load /tmp/x.so', 'add-auto-load-safe-path /', 'remote put /etc/passwd x', 'load',
  'thread apply all shell id', 't a all she id', 'thread apply 1-3 -q python 1', 'frame apply all -s shell id',
  'f apply level 1 py 1', 'faas shell id', 'taas -q shell id', 'tfaas !id', 'with print pretty -- shell id',
  'w print pretty -- python 1', 'thread apply all thread apply all shell id',
  'set exec-wrapper /bin/sh -c id', 'set startup-with-shell on', 'set auto-load safe-path /', 'set debuginfod enabled on',
  'set sysroot /', 'set data-directory /tmp', 'set python print-stack full', 'set remote exec-file /bin/sh',
  'run $(id)', 'run `id`', 'r ; id', 'run | tee /tmp/x', 'run > /tmp/out', 'start $(id)', 'starti && id',
  'set args $(id)', 'set ar `id`',
  // The program's environment runs code before main through the start-up shell or the loader.
  'set environment BASH_ENV=/w/x.sh', 'set env LD_PRELOAD=/w/x.so', 'set enviro FOO=1', '-gdb-set environment BASH_ENV=x',
  'path /tmp', '-environment-path /tmp',
  '-interpreter-exec console "shell id"', '-interpreter-exec console "python import os"', '-interpreter-exec mi "-interpreter-exec console \\"shell id\\""',
  '-interpreter-exec guile "x"', '-break-commands 1 "shell id"', '-break-commands 1 "print x" "py 1"', '-gdb-set exec-wrapper sh',
  '-gdb-set startup-with-shell on', '-environment-cd /', '-target-select remote | sh', '-target-file-get /etc/passwd x',
  '-exec-arguments $(id)', '-gdb-set --thread 1 exec-wrapper sh',
  // The host's process, file and socket tables.
  'set index-cache directory /tmp', 'set index-cache enabled on',
  'info os processes', 'info os', 'i os files', 'info o sockets', 'inf os', '-info-os processes', 'thread apply all info os', 'print $_shell("id")', '-break-insert -c "$_shell(\\"id\\")==0" main', '12-interpreter-exec console "shell id"', '-interpreter-exec --thread 1 console "she id"',
];

export const FILES = [
  'dump memory /tmp/x 0 10', 'dump binary value /tmp/x y', 'append binary memory /tmp/x 0 1', 'restore /etc/passwd binary 0',
  'save breakpoints /tmp/x', 'gcore /tmp/core', 'generate-core-file /tmp/core', 'tsave /tmp/t', 'record save /tmp/r',
  'file /bin/sh', 'exec-file /bin/bash', 'symbol-file /usr/lib/x', 'core-file /tmp/core', 'add-symbol-file /x 0',
  'directory /etc', 'dir /etc:/root', 'tty /dev/pts/0', 'add-inferior -exec /bin/sh', 'set logging file /tmp/log',
  'set logg f /tmp/log', 'set history filename /root/.x', 'set cwd /', 'set inferior-tty /dev/tty', 'dump memory ../x 0 1',
  'with logging file /tmp/x -- print 1', '-gdb-set logging file /tmp/x', '-file-exec-and-symbols /bin/sh',
  '-environment-directory /etc', 'file ~/x', 'dump memory sub/../../x 0 1',
  // gdb's argument splitter removes quotes and backslashes: each of these is a path outside the root.
  "file '/bin/sh'", 'file \\/bin/sh', 'file "/bin/sh"', "file '/bin'/sh", "file '/bin/sh' extra", "exec-file '/bin/bash'",
  'symbol-file \\/usr/lib/x', "add-inferior -exec '/bin/sh'", 'add-inferior -copies 1 -exec \\/bin/sh', "directory '/etc'",
  'dir "/etc":sub', "core-file '/tmp/core'", "add-symbol-file '/x' 0", '-interpreter-exec console "file \'/bin/sh\'"',
  "thread apply all file '/bin/sh'", 'with print pretty -- file \\/bin/sh', '-file-exec-and-symbols "/bin/sh"',
  "interpreter-exec console \"file '/bin/sh'\"", "set logging file '/tmp/x'",   'set remotelogfile /tmp/x', 'set tdesc filename /etc/passwd', "file -readnow '/bin/sh'", 'file sub/../../x',
];

export const ALLOWED = [
  'break main', 'b main', 'run', 'r', 'run arg1 arg2', 'run &', 'c', 'continue', 'next', 'n', 's', 'step', 'p x', 'print x + 1',
  'bt', 'info locals', 'i r', 'info functions', 'x/4x &x', 'finish', 'frame 1', 'f 0', 'thread 1', 'thread apply all bt',
  'frame apply all p x', 'faas p x', 'with print pretty -- p s', 'set var x = 3', 'set print pretty on', 'set logging on',
  'set logging file log.txt', 'dump memory out.bin 0 10', 'save breakpoints sub/bp.txt', 'record', 'record full',
  'record stop', 'file prog', 'display x', 'delete 1', 'd 1', 'do', 'down', 'info sharedlibrary', 'show version',
  'disassemble main', 'detach', 'kill', 'attach 4242', 'list main', 'l', 'j 10', 'ptype x', 'watch x', 'tbreak f',
  '-break-insert main', '-exec-run', '-exec-continue', '-stack-list-frames', '-data-evaluate-expression x',
  '-interpreter-exec console "bt"', '-break-commands 1 "print x" "continue"', '-gdb-set print pretty on',
  '-exec-arguments a b c', '-file-exec-and-symbols prog', 'set args a b', 'echo hi\\n', 'printf "%d\\n", 1', 'call f(1)',
  // The session's own program: no PID, or one it started.
  'info proc', 'info proc mappings', 'i proc cmdline', 'info proc 4242', 'info proc cmdline 4242', 'info program', 'info probes',
];
