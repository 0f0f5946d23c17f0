"""Calls an HTTP API, waits, and calls it again: a run that outlasts a client's request timeout."""
import sys
import time
import urllib.request

port, pause = sys.argv[1], float(sys.argv[2])
for i, step in enumerate(["first", "second"]):
    if i:
        time.sleep(pause)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/{step}", timeout=10) as r:
        print(step, r.status, r.read().decode(), flush=True)
