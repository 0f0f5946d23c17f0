#include <stddef.h>

struct node { int value; struct node *next; };

static int sum_list(struct node *head) {
  int total = 0;
  while (1) {
    total += head->value; /* walks off the end: head becomes NULL */
    head = head->next;
  }
  return total;
}

int main(void) {
  struct node b = { 2, NULL };
  struct node a = { 1, &b };
  return sum_list(&a);
}
