/* Twelve locals with names of 2,560 characters, all changed on one line of a loop: each position of
   a trace holds twelve changed values (attack u2-1: an export of such a trace held the server's loop). */
#define PASTE(a, b) a##b
#define JOIN(a, b) PASTE(a, b)
#define TWICE(x) JOIN(x, x)
#define LONG(tail) JOIN(TWICE(TWICE(TWICE(TWICE(TWICE(TWICE(TWICE(TWICE(TWICE(long_))))))))), tail)

int main(void) {
  volatile long LONG(a) = 0, LONG(b) = 0, LONG(c) = 0, LONG(d) = 0, LONG(e) = 0, LONG(f) = 0;
  volatile long LONG(g) = 0, LONG(h) = 0, LONG(i) = 0, LONG(j) = 0, LONG(k) = 0, LONG(l) = 0;
  for (long n = 0; n < 100000; n++) {
    LONG(a) += 1, LONG(b) += 2, LONG(c) += 3, LONG(d) += 4, LONG(e) += 5, LONG(f) += 6, LONG(g) += 7, LONG(h) += 8, LONG(i) += 9, LONG(j) += 10, LONG(k) += 11, LONG(l) += 12;
  }
  return 0;
}
