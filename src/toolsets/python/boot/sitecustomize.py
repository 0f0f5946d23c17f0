"""debugkit: run the entry that was checked, and make debugpy's own sockets send at once.

The entry. debugkit checks the entry script inside the workspace root and opens it, and gives
debugpy that open file to run: /proc/<server pid>/fd/N (DEBUGKIT_ENTRY_FD), which the kernel
resolves to the opened file itself, never to what the workspace path names by then, so a writer
who swaps the script or a directory above it for a link out of the root after the check cannot
make another file run. Run under that name, the program would see /proc/.../fd/N as its file
and directory: imports of the modules beside it, breakpoints and tracebacks would break. So
where debugpy's copy of runpy (pydevd_runpy, loaded later: hence the meta path entry) reads that
one script, the code is read from the descriptor and named by the real path (DEBUGKIT_ENTRY), as
Python names a script it runs: compiled with the real path as its file name (breakpoints and
tracebacks name the real file), __file__ and sys.argv[0] the real path, sys.path[0] its real
directory (where debugpy put the descriptor's). Nothing of debugkit's is on the stack while the
program runs: the rest is runpy's own, as before. Both variables leave the environment at
start-up, so the program's children see neither. Without this module (an interpreter run with
-S), debugpy runs the descriptor path as it is: the checked file, under the wrong name.

The sockets. debugpy writes each DAP message as two socket writes (header, then body) on
sockets without TCP_NODELAY: Nagle's algorithm holds the body until the header is acknowledged,
and delayed ACKs make that up to 40 ms per message (microsoft/debugpy#2054). This sets
TCP_NODELAY on the sockets debugpy and pydevd open or accept, and on no other socket of the
program; then it runs the sitecustomize module this file shadows, if there is one.
"""
import os
import socket
import sys

_OWNERS = ("debugpy", "_pydevd", "pydevd", "_pydev")


def _from_debugger():
    frame = sys._getframe(2)
    name = frame.f_globals.get("__name__", "") if frame else ""
    return name.startswith(_OWNERS)


def _nodelay(sock):
    try:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


def _patch():
    connect = socket.socket.connect
    accept = socket.socket.accept

    def debugkit_connect(self, address):
        result = connect(self, address)
        if _from_debugger():
            _nodelay(self)
        return result

    def debugkit_accept(self):
        conn, address = accept(self)
        if _from_debugger():
            _nodelay(conn)
        return conn, address

    socket.socket.connect = debugkit_connect
    socket.socket.accept = debugkit_accept


def _checked_entry():
    fd_path = os.environ.pop("DEBUGKIT_ENTRY_FD", None)
    real = os.environ.pop("DEBUGKIT_ENTRY", None)
    if fd_path and real:
        sys.meta_path.insert(0, _AfterImport("_pydevd_bundle.pydevd_runpy", lambda runpy: _read_entry(runpy, fd_path, real)))


def _read_entry(runpy, fd_path, real):
    """Makes `runpy` read the script at `fd_path` (once) as the file at `real` (see "The entry")."""
    original = runpy._get_code_from_file

    def _get_code_from_file(run_name, fname):
        if fname != fd_path:
            return original(run_name, fname)
        runpy._get_code_from_file = original
        import io
        from pkgutil import read_code

        with io.open_code(fd_path) as f:
            data = f.read()
        # As runpy reads a script: compiled code first, else source.
        code = read_code(io.BytesIO(data))
        if code is None:
            code = compile(data, real, "exec")
        if sys.path and sys.path[0] == os.path.dirname(fd_path):
            sys.path[0] = os.path.dirname(real)
        sys.argv[0] = real
        return code, real

    runpy._get_code_from_file = _get_code_from_file


class _AfterImport:
    """A meta path entry that finds nothing itself: it calls then(module) once `name` is loaded."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module
        then = self.then

        def exec_then(module):
            exec_module(module)
            then(module)

        spec.loader.exec_module = exec_then
        return spec


def _run_shadowed():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or os.curdir) == here:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


_checked_entry()
_patch()
_run_shadowed()
