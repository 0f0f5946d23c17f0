"""Values debugpy shortens inside its repr, each in another form, and values that only look cut."""


class Thing:
    def __repr__(self):
        return "Thing(name='abcdefghijklmnopqrstuvwxyz', size=1234567)"


def main():
    nested_tuple = [(1, (2, (3, 4)))]
    nested_dict = {"a": {"b": {"c": 1}}}
    long_inner = ["x" * 50]
    objects = [Thing()]
    many = list(range(100))
    plain = "wait... done"
    short = [1, 2, 3]
    return nested_tuple, nested_dict, long_inner, objects, many, plain, short


if __name__ == "__main__":
    main()
