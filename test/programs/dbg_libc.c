#include <stdio.h>
#include <string.h>

/* Crashes inside libc: strlen of a NULL the program passes it. */
static size_t parse_line(const char *line) {
  size_t n = strlen(line);
  return n;
}

int main(int argc, char **argv) {
  const char *line = argc > 5 ? argv[1] : NULL;
  printf("%zu\n", parse_line(line));
  return 0;
}
