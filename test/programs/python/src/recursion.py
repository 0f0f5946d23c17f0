"""Recurses until Python gives up: a RecursionError that debugpy does not stop on."""


def depth(n):
    return depth(n + 1) + 1


def main():
    items = {"k%d" % i: list(range(200)) for i in range(200)}
    print("starting", len(items))
    return depth(0)


if __name__ == "__main__":
    main()
    print("never reached")
