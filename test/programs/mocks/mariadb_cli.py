"""Runs the mariadb command-line client (TLS when the server offers it, without verifying: its default) and writes its output to cli-out.txt."""
import subprocess
import sys

port, password = sys.argv[1], sys.argv[2]
out = subprocess.run(
    ["/usr/bin/mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", port, "-u", "app", f"-p{password}", "shop", "-e", "SELECT 'cli' AS who, 6 * 7 AS answer"],
    check=True,
    capture_output=True,
    text=True,
    timeout=60,
)
with open("cli-out.txt", "w") as f:
    f.write(out.stdout)
