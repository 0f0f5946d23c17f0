#include <stdio.h>
#include <unistd.h>

volatile unsigned long ticks = 0;

int step(int i) {
  ticks += (unsigned long)i;
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
