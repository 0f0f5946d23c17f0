#include <stdio.h>
#include <unistd.h>

volatile unsigned long counter = 0;

int main(void) {
  fprintf(stderr, "spin: started pid %d\n", (int)getpid());
  for (;;) {
    counter++;
  }
  return 0;
}
