#include <stdio.h>
#include <unistd.h>

volatile unsigned long ticks = 0;
static char src[64] = "text formatted by glibc";
static char dst[256];

int step(int i) {
  ticks += (unsigned long)i;
  snprintf(dst, sizeof dst, "%s %d", src, i); /* glibc's EVEX string code: record full stops here */
  return i * 2;
}

int main(void) {
  fprintf(stderr, "loop: started pid %d\n", (int)getpid());
  for (int i = 0;; i++) {
    step(i % 100);
    if (i % 1000 == 0) usleep(1000);
  }
  return 0;
}
