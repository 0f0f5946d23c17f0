#include <stdlib.h>
#include <string.h>

struct job {
  int id;
  char payload[16];
};

static void fill(struct job *j, int n) {
  for (int i = 0; i < n; i++) j->payload[i] = (char)('a' + i);
}

static void corrupt(struct job *j) {
  j->payload[8] = 'Z';
}

int main(void) {
  struct job *j = malloc(sizeof *j);
  memset(j, 0x11, sizeof *j);
  j->id = 7;
  fill(j, 12);
  corrupt(j);
  int done = 1;
  free(j);
  return done - 1;
}
