#include <stdio.h>
#include <string.h>

struct point { int x; int y; };

static int add(int a, int b) {
  int sum = a + b;
  return sum;
}

int main(int argc, char **argv) {
  struct point origin = { 3, 4 };
  const char *greeting = "hello";
  int total = 0;
  for (int i = 0; i < 3; i++) {
    total = add(total, i);
  }
  printf("total=%d argc=%d first=%s\n", total, argc, argc > 1 ? argv[1] : "-");
  fprintf(stderr, "to stderr %s %d\n", greeting, origin.x + origin.y);
  return total == 3 ? 0 : 1;
}
