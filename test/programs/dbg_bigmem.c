/* Reserves 256 MiB it never touches (attack 18am x1-2: debugger_export_trace binary wrote the
   program's whole memory to disk before checking the answer's size). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char *big = malloc(256u << 20);
  big[0] = 1;
  printf("%d\n", big[0]);
  return 0;
}
