"""Calls a plain HTTP API and an HTTPS API, and writes what it got to out.txt."""
import json
import ssl
import sys
import urllib.request

http_port, https_port, item = sys.argv[1], sys.argv[2], sys.argv[3]
lines = []
with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/items/{item}?verbose=1", timeout=10) as r:
    lines.append(f"GET {r.status} {r.read().decode()}")
body = json.dumps({"item": item, "qty": 2}).encode()
req = urllib.request.Request(f"https://localhost:{https_port}/orders", data=body, headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=10, context=ssl.create_default_context()) as r:
    lines.append(f"POST {r.status} {r.read().decode()}")
with open("out.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
