#include <stdio.h>

/* Prints many lines, then a last line that tells where it ended (a failure is usually there). */
int main(void) {
  for (int i = 0; i < 5000; i++) printf("line %d of noise\n", i);
  fflush(stdout);
  fprintf(stderr, "THE END: exit 3\n");
  return 3;
}
