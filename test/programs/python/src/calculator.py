"""A small calculator, the program the OpenAPI examples debug."""
import sys


def divide(a, b):
    return a / b


def add(x, y):
    result = x + y
    return result


def main(argv):
    x = 10
    y = 20
    result = add(x, y)
    final_result = result + divide(25, 2)
    print("final", final_result)
    if "--divide-by-zero" in argv:
        print(divide(1, 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
