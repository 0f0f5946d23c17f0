"""A stack deeper than one answer shows: 61 calls of down() under main()."""


def down(n):
    if n == 0:
        marker = "bottom"
        return marker
    return down(n - 1)


def main():
    start = 60
    return down(start)


if __name__ == "__main__":
    print(main())
