"""Two functions recursing in turn: Python cannot fold the repeated frames, so the
RecursionError's traceback runs to about 200 KB of stderr, its header far from its end."""


def ping(n, note):
    return pong(n + 1, note + "!") + 1


def pong(n, note):
    return ping(n + 1, note[-8:]) + 1


if __name__ == "__main__":
    ping(0, "start")
    print("never reached")
