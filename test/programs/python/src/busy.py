"""Runs for a long time: for timeouts, ending sessions mid-run and the process table."""
import os
import sys

print("busy: pid", os.getpid(), flush=True)
counter = 0
while True:
    counter += 1
    if counter % 1_000_000 == 0:
        print("tick", counter, file=sys.stderr, flush=True)
print("never reached")
