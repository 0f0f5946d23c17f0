/* A writer racing debugkit's path checks: swaps two names (a file or directory and a symlink)
 * with renameat2(RENAME_EXCHANGE), atomically and as fast as it can, until it is killed or its
 * parent exits. Usage: flipper A B [HOLD_US]: with HOLD_US, each state is held for a random
 * 0..HOLD_US microseconds (sleeping: the writer then leaves the CPU to the reader), so that some
 * checks and opens see one state and others a swap in between. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: flipper A B [HOLD_US]\n");
    return 2;
  }
  long hold_us = argc == 4 ? atol(argv[3]) : 0;
  srandom((unsigned)getpid());
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 0;
  if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) {
    perror("renameat2");
    return 1;
  }
  /* Ready: the parent waits for this line before it starts racing. */
  printf("flipping\n");
  fflush(stdout);
  for (;;) {
    renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE);
    if (hold_us > 0) usleep((useconds_t)(random() % (hold_us + 1)));
  }
}
