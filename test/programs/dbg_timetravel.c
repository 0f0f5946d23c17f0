#include <stdio.h>
#include <string.h>

struct record { int id; char name[8]; int checksum; };

int counter = 0;

static void bump(int by) {
  counter += by;
}

static void fill_name(struct record *r, const char *text) {
  strcpy(r->name, text); /* overruns name into checksum when text is long */
}

int main(void) {
  struct record rec = { 1, "ok", 1234 };
  int x = 10;
  char buf[32] = { 0 };
  x = 20;
  memcpy(buf, "abcdefghij", 11);
  printf("x=%d buf=%s\n", x, buf);
  x = 30;
  for (int i = 0; i < 5; i++) bump(i);
  fill_name(&rec, "overlong-name");
  printf("checksum=%d counter=%d\n", rec.checksum, counter);
  return 0;
}
