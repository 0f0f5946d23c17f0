/*
 * Ways a program leaves processes behind, for the lifetime tests (test/lifetime-*.test.ts).
 * Every process left behind writes its pid to a file (written whole, then renamed into place) and
 * then waits for signals forever.
 *
 *   escape linger FILE    write the pid, wait forever (the process a spelling leaves behind)
 *   escape fork FILE      fork a child that lingers; the parent exits at once
 *   escape pgrp FILE      fork a child that moves to a process group of its own and lingers; exit
 *   escape daemon FILE    the classic daemon: fork, setsid, fork again, chdir /, stdio to
 *                         /dev/null; the grandchild lingers, the first child and the parent exit
 *   escape envclear FILE  fork a child that starts a new session and re-executes itself with an
 *                         empty environment (`linger`); the parent exits
 *   escape forker PREFIX  fork a child that lingers (PREFIX.a) and a daemon (setsid, fork again)
 *                         that lingers (PREFIX.c); then wait forever: a debuggee that forks
 *   escape leavegroup FILE DIR   fork a child that writes itself into cgroup DIR (its cgroup.procs),
 *                         starts a new session and lingers; the parent exits
 *   escape leaveclear FILE DIR   the same, and the child re-executes itself with an empty
 *                         environment (`linger`)
 *   escape leaveall FILE DIR     fork a child that writes itself into cgroup DIR, sets its own
 *                         RLIMIT_LOCKS, moves to a process group of its own (no new session) and
 *                         re-executes itself with an empty environment (`linger`); the parent exits
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void linger(const char *file) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.tmp", file);
  FILE *f = fopen(tmp, "w");
  if (!f) _exit(2);
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  if (rename(tmp, file) != 0) _exit(2);
  for (;;) pause();
}

/* Moves the calling process into cgroup `dir`; exits 3 when it may not. */
static void enter_group(const char *dir) {
  char procs[PATH_MAX];
  snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
  FILE *f = fopen(procs, "w");
  if (!f) _exit(3);
  fprintf(f, "%d\n", (int)getpid());
  if (fclose(f) != 0) _exit(3);
}

static void daemonize(const char *file) {
  pid_t first = fork();
  if (first == 0) {
    setsid();
    if (fork() == 0) {
      if (chdir("/") != 0) _exit(2);
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      linger(file);
    }
    _exit(0);
  }
  waitpid(first, NULL, 0);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: escape linger|fork|pgrp|daemon|envclear|forker FILE, escape leavegroup|leaveclear FILE DIR\n");
    return 2;
  }
  const char *mode = argv[1];
  const char *file = argv[2];
  if (strcmp(mode, "linger") == 0) linger(file);
  if (strcmp(mode, "fork") == 0) {
    if (fork() == 0) linger(file);
    return 0;
  }
  if (strcmp(mode, "pgrp") == 0) {
    if (fork() == 0) {
      setpgid(0, 0);
      linger(file);
    }
    return 0;
  }
  if (strcmp(mode, "daemon") == 0) {
    daemonize(file);
    return 0;
  }
  if (strcmp(mode, "envclear") == 0) {
    if (fork() == 0) {
      setsid();
      char *args[] = {argv[0], "linger", (char *)file, NULL};
      char *env[] = {NULL};
      execve("/proc/self/exe", args, env);
      _exit(2);
    }
    return 0;
  }
  if (strcmp(mode, "leavegroup") == 0 || strcmp(mode, "leaveclear") == 0) {
    if (argc < 4) return 2;
    if (fork() == 0) {
      enter_group(argv[3]);
      setsid();
      if (strcmp(mode, "leaveclear") == 0) {
        char *args[] = {argv[0], "linger", (char *)file, NULL};
        char *env[] = {NULL};
        execve("/proc/self/exe", args, env);
        _exit(2);
      }
      linger(file);
    }
    return 0;
  }
  if (strcmp(mode, "leaveall") == 0) {
    if (argc < 4) return 2;
    if (fork() == 0) {
      enter_group(argv[3]);
      struct rlimit locks = {7, RLIM_INFINITY};
      if (setrlimit(RLIMIT_LOCKS, &locks) != 0) _exit(4);
      setpgid(0, 0);
      char *args[] = {argv[0], "linger", (char *)file, NULL};
      char *env[] = {NULL};
      execve("/proc/self/exe", args, env);
      _exit(2);
    }
    return 0;
  }
  if (strcmp(mode, "forker") == 0) {
    char a[PATH_MAX], c[PATH_MAX];
    snprintf(a, sizeof a, "%s.a", file);
    snprintf(c, sizeof c, "%s.c", file);
    if (fork() == 0) linger(a);
    daemonize(c);
    for (;;) pause();
  }
  fprintf(stderr, "escape: unknown mode %s\n", mode);
  return 2;
}
