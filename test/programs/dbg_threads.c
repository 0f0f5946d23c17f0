/* main starts a second thread (clone3: record full gives up there, history switches to checkpoints) that sleeps. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *sleeper(void *arg) {
  (void)arg;
  sleep(1000);
  return 0;
}

int main(void) {
  pthread_t t;
  fprintf(stderr, "threads: started pid %d\n", (int)getpid());
  pthread_create(&t, 0, sleeper, 0);
  pthread_join(t, 0);
  return 0;
}
