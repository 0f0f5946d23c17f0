"""A loop for breakpoint conditions: `itme > 2` (a typo) raises NameError at every hit."""


def total(items):
    s = 0
    for item in items:
        s += item
    return s


if __name__ == "__main__":
    print("total", total([1, 2, 3, 4]))
