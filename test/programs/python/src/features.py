"""Exercises what agents need beyond the contract: loops, big values, stdin, threads, async."""
import asyncio
import sys
import threading


class Account:
    def __init__(self, owner, balance):
        self.owner = owner
        self.balance = balance


def squares(limit):
    out = []
    for i in range(limit):
        out.append(i * i)
    return out


def worker(results):
    value = sum(squares(10))
    results.append(value)


async def fetch(n):
    await asyncio.sleep(0)
    doubled = n * 2
    return doubled


def main():
    account = Account("ada", 100)
    big = "x" * 5000
    many = {f"k{i}": i for i in range(300)}
    line = sys.stdin.readline()
    print("stdin:", repr(line))
    results = []
    thread = threading.Thread(target=worker, args=(results,))
    thread.start()
    thread.join()
    got = asyncio.run(fetch(21))
    print("thread:", results[0], "async:", got, "owner:", account.owner, len(big), len(many))
    print("to stderr", file=sys.stderr)


main()
