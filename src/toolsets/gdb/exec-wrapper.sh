#!/bin/sh
# gdb runs every debuggee through this script (set exec-wrapper). debugkit starts gdb with two
# extra pipes on fds 3 and 4; the debuggee's stdout and stderr go there, apart from the MI channel,
# and its stdin reads EOF. Streams the user redirected in `run ... > file` are left alone: only
# fds that still point where gdb's own do are replaced. The final exec must be the only one:
# gdb counts the execs it expects before the program proper starts.
gdb_pid=$PPID
inherited() { [ "$(readlink "/proc/$$/fd/$1")" = "$(readlink "/proc/$gdb_pid/fd/$1")" ]; }
if [ -e /proc/$$/fd/3 ] && [ -e /proc/$$/fd/4 ]; then
  if inherited 0; then exec 0</dev/null; fi
  if inherited 1; then exec 1>&3; fi
  if inherited 2; then exec 2>&4; fi
  exec 3>&- 4>&-
fi
# Everything the debuggee starts inherits this (forks, setsid, daemons): detaching a program the
# session started ends those processes with it, and leaves the session's other processes alone.
DEBUGKIT_INFERIOR=$$
export DEBUGKIT_INFERIOR
exec "$@"
