#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Three distinct crash sites, chosen by argv[1], so signatures differ. */
struct item { int value; struct item *next; };

static int walk(struct item *it) { int t = 0; while (1) { t += it->value; it = it->next; } return t; }
static int divide(int a, int b) { return a / b; }
static void corrupt(char *p) { strcpy(p, "x"); }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "walk";
  if (strcmp(mode, "walk") == 0) { struct item b = { 2, NULL }, a = { 1, &b }; return walk(&a); }
  if (strcmp(mode, "divide") == 0) return divide(argc, argc - 2);
  if (strcmp(mode, "null") == 0) corrupt(NULL);
  if (strcmp(mode, "abort") == 0) abort();
  return 0;
}
