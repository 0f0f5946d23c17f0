/* Holds 3 MiB of memory GDB writes with a recording (a core keeps anonymous memory, touched or not),
   so that its record save file is several pages of a binary debugger_export_trace (attack w2-2: a
   29 MB one was sent as one answer and held the loop ~2 s). */
#include <stdio.h>

static char block[3u << 20];

int main(void) {
  block[7] = 'y';
  block[sizeof block - 1] = 'z';
  printf("%c%c\n", block[7], block[sizeof block - 1]);
  return 0;
}
