"""Talks a small line protocol over plain TCP and writes what it got to kv-out.txt."""
import socket
import sys

port, key = int(sys.argv[1]), sys.argv[2]
with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
    s.sendall(f"GET {key}\n".encode())
    answer = s.recv(1024).decode().strip()
with open("kv-out.txt", "w") as f:
    f.write(f"{answer}\n")
