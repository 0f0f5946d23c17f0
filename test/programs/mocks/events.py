"""Posts an event carrying a time, a nonce body field and a nonce header; writes the answer to events-out.txt."""
import json
import sys
import time
import urllib.request
import uuid

port, offset = sys.argv[1], int(sys.argv[2])
body = json.dumps({"ts": int(time.time()) + offset, "nonce": str(uuid.uuid4()), "kind": "click"}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/events", data=body, headers={"Content-Type": "application/json", "X-Nonce": uuid.uuid4().hex})
with urllib.request.urlopen(req, timeout=10) as r:
    answer = r.read().decode()
with open("events-out.txt", "w") as f:
    f.write(answer + "\n")
print("sent", flush=True)
