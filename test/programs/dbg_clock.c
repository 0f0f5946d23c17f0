#include <stdio.h>
#include <sys/time.h>
#include <time.h>

/* Reads the clock three ways (test/debugger.test.ts): through the vDSO these never return under GDB's record full. */
int main(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  struct timeval tv;
  gettimeofday(&tv, 0);
  long now = (long)time(0);
  long ok = ts.tv_sec >= 0 && tv.tv_sec > 0 && now > 0;
  printf("clock ok=%ld\n", ok);
  return ok ? 0 : 1;
}
