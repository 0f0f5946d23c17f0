/* Maps a sparse file of 256 MiB privately and writes one byte of it: GDB's record save then writes
   the whole mapping, which the estimate from anonymous mappings alone missed (attack z2-1: a 2 GiB
   one made a 2.15 GB file before its size was checked). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
  int fd = open("filemap.bin", O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, 256L << 20) != 0) return 1;
  char *p = mmap(NULL, 256L << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return 1;
  p[4096] = 'x';
  printf("%c\n", p[4096]);
  munmap(p, 256L << 20);
  close(fd);
  unlink("filemap.bin");
  return 0;
}
