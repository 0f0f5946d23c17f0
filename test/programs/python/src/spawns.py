"""Starts a child Python process and waits for it."""
import subprocess
import sys

child = subprocess.run([sys.executable, "-c", "print('child says hi')"], capture_output=True, text=True, timeout=20)
print("child output:", child.stdout.strip(), "exit:", child.returncode)
