// A zero-copy TCP relay for the mocks bench: the least any out-of-process hop between a program and
// its origin costs on this machine (no SOCKS5, no parsing, no recording, bytes never enter user space).
//
//   splice-relay <origin-port>
//
// Listens on 127.0.0.1, port 0; prints the port it got on stdout (one line); forwards every
// connection it accepts to 127.0.0.1:<origin-port>. Each direction moves bytes socket -> pipe ->
// socket with splice(2). One thread, epoll in edge-triggered mode: every event on either socket of a
// connection pumps both directions until nothing moves; a write that would block waits for the
// destination's EPOLLOUT, a read for the source's EPOLLIN. End of stream on one side becomes
// shutdown(SHUT_WR) on the other once the pipe is empty (half-close); the connection closes when both
// directions have ended, or at once on an error. Exits when its stdin closes: it never outlives the
// process that started it.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define PIPE_BYTES (1 << 20) /* asked of F_SETPIPE_SZ; the kernel may cap it (pipe-max-size) */
#define MAX_EVENTS 64

/** One direction: bytes read from `from` wait in the pipe until `to` takes them. */
struct half {
  int from, to;
  int pipe[2];
  size_t queued; /* bytes in the pipe */
  int eof;       /* `from` reached end of stream */
  int shut;      /* `to` was shut for writing */
};

struct conn {
  int client, origin;
  int connecting; /* the origin's nonblocking connect has not completed */
  int closed;
  struct half h[2]; /* [0] client -> origin, [1] origin -> client */
  struct conn *next_dead;
};

static int ep;
static struct conn *dead; /* closed in this batch of events, freed after it (other events may name them) */
static char listen_tag, stdin_tag; /* epoll cookies for the two fds that are not connections */

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void close_conn(struct conn *c) {
  if (c->closed) return;
  c->closed = 1;
  close(c->client); /* closing removes the fds from the epoll set */
  close(c->origin);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      if (c->h[i].pipe[j] >= 0) close(c->h[i].pipe[j]);
  c->next_dead = dead;
  dead = c;
}

/** Moves what it can in one direction. Returns 0, or -1 on an error (the caller closes the connection). */
static int pump(struct half *h) {
  for (;;) {
    int moved = 0;
    if (!h->eof) {
      ssize_t r = splice(h->from, NULL, h->pipe[1], NULL, PIPE_BYTES, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (r > 0) h->queued += (size_t)r, moved = 1;
      else if (r == 0) h->eof = 1, moved = 1;
      else if (errno != EAGAIN) return -1; /* EAGAIN: the socket is empty, or the pipe full */
    }
    if (h->queued > 0) {
      ssize_t w = splice(h->pipe[0], NULL, h->to, NULL, h->queued, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (w > 0) h->queued -= (size_t)w, moved = 1;
      else if (w < 0 && errno != EAGAIN) return -1; /* EAGAIN: wait for EPOLLOUT on `to` */
    }
    if (h->eof && h->queued == 0 && !h->shut) {
      shutdown(h->to, SHUT_WR);
      h->shut = 1;
    }
    if (!moved) return 0;
  }
}

static void on_conn_event(struct conn *c) {
  if (c->closed) return;
  if (c->connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->origin, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) return close_conn(c);
    struct sockaddr_in peer;
    len = sizeof peer;
    if (getpeername(c->origin, (struct sockaddr *)&peer, &len) < 0) return; /* still connecting */
    c->connecting = 0;
  }
  if (pump(&c->h[0]) < 0 || pump(&c->h[1]) < 0) return close_conn(c);
  if (c->h[0].shut && c->h[1].shut) close_conn(c);
}

static void watch(int fd, void *cookie) {
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = cookie};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
}

static void accept_all(int listener, const struct sockaddr_in *origin) {
  for (;;) {
    int client = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) perror("accept4");
      return;
    }
    int upstream = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct conn *c = calloc(1, sizeof *c);
    if (upstream < 0 || !c) {
      close(client);
      if (upstream >= 0) close(upstream);
      free(c);
      continue;
    }
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->client = client;
    c->origin = upstream;
    c->h[0] = (struct half){.from = client, .to = upstream, .pipe = {-1, -1}};
    c->h[1] = (struct half){.from = upstream, .to = client, .pipe = {-1, -1}};
    if (pipe2(c->h[0].pipe, O_NONBLOCK | O_CLOEXEC) < 0 || pipe2(c->h[1].pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
      perror("pipe2"); /* out of descriptors: refuse this connection, keep serving the others */
      close_conn(c);
      continue;
    }
    for (int i = 0; i < 2; i++) fcntl(c->h[i].pipe[0], F_SETPIPE_SZ, PIPE_BYTES); /* best effort: 64 KiB works too */
    if (connect(upstream, (const struct sockaddr *)origin, sizeof *origin) < 0) {
      if (errno != EINPROGRESS) {
        perror("connect to the origin");
        close_conn(c);
        continue;
      }
      c->connecting = 1; /* completes with EPOLLOUT on the origin socket */
    }
    watch(client, c);
    watch(upstream, c);
    on_conn_event(c); /* the client may have written already: that edge is gone */
  }
}

int main(int argc, char **argv) {
  char *end;
  long port = argc == 2 ? strtol(argv[1], &end, 10) : 0;
  if (argc != 2 || *end != '\0' || port < 1 || port > 65535) {
    fprintf(stderr, "usage: %s <origin-port> (1-65535)\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* a write to a closed peer is EPIPE, handled as an error */

  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct sockaddr_in origin = addr;
  origin.sin_port = htons((unsigned short)port);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  socklen_t len = sizeof addr;
  if (listener < 0) die("socket");
  if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
  if (listen(listener, 512) < 0) die("listen");
  if (getsockname(listener, (struct sockaddr *)&addr, &len) < 0) die("getsockname");

  if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) die("epoll_create1");
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listen_tag};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev) < 0) die("epoll_ctl listener");
  ev.data.ptr = &stdin_tag; /* EPOLLHUP/EPOLLIN with read() = 0: the parent is gone */
  if (epoll_ctl(ep, EPOLL_CTL_ADD, STDIN_FILENO, &ev) < 0) die("epoll_ctl stdin (must be a pipe or socket)");

  printf("%d\n", ntohs(addr.sin_port));
  fflush(stdout);

  struct epoll_event evs[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      void *cookie = evs[i].data.ptr;
      if (cookie == &listen_tag) accept_all(listener, &origin);
      else if (cookie == &stdin_tag) {
        char buf[256];
        ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return 0;
      } else on_conn_event(cookie);
    }
    while (dead) {
      struct conn *next = dead->next_dead;
      free(dead);
      dead = next;
    }
  }
}
