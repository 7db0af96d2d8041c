// The server bench's client (bench/server.ts builds it with the system C compiler): keep-alive
// sockets that send pre-built streaming requests and time each SSE frame that carries text as its
// bytes arrive. It is C so that its own CPU time per token (a few microseconds, against 20-40 for a
// Node client) takes as little as possible from the server on a small machine.
//
// stdin, one run per line: "PORT N LEN1 ... LENN" followed by the N requests' bytes. stdout, one
// line per run: {"streams":[{"ttft":ms,"perToken":ms,"tokens":n},...],"cpuMicros":us}.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_STREAMS 64
#define MARK "\"text\":\""
#define MARK_LEN 8
// The end of a chunked response body.
#define END "\r\n0\r\n\r\n"
#define END_LEN 7

static double nowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double cpuMicros(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

static int connectTo(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) die("socket");
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr*)&a, sizeof a) < 0) die("connect");
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

typedef struct {
  int fd;
  // The last bytes of the previous read, so a marker split across reads is still found.
  char carry[MARK_LEN + END_LEN];
  size_t carried;
  double first, last;
  int tokens, done;
} Stream;

// Scans one read: every text marker not followed by the closing quote is a token (the final
// frame's text is ""); a marker cut off at the very end is decided by the next read.
static void scan(Stream* s, const char* data, size_t n, double at) {
  static char buf[MARK_LEN + END_LEN + 65536];
  memcpy(buf, s->carry, s->carried);
  memcpy(buf + s->carried, data, n);
  size_t len = s->carried + n, i = 0;
  for (; i + MARK_LEN < len; i++) {
    if (buf[i] == '"' && memcmp(buf + i, MARK, MARK_LEN) == 0 && buf[i + MARK_LEN] != '"') {
      if (s->tokens++ == 0) s->first = at;
      s->last = at;
      i += MARK_LEN;
    }
  }
  if (len >= END_LEN && memcmp(buf + len - END_LEN, END, END_LEN) == 0) s->done = 1;
  size_t keep = len - i < sizeof s->carry ? len - i : sizeof s->carry;
  if (len >= END_LEN && keep < END_LEN) keep = END_LEN;
  memmove(s->carry, buf + len - keep, keep);
  s->carried = keep;
}

int main(void) {
  static Stream streams[MAX_STREAMS];
  static char* requests[MAX_STREAMS];
  static size_t lengths[MAX_STREAMS];
  int connected = 0, port;
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    char* p = line;
    port = (int)strtol(p, &p, 10);
    int n = (int)strtol(p, &p, 10);
    if (n < 1 || n > MAX_STREAMS) {
      fprintf(stderr, "server-client: bad stream count %d\n", n);
      return 1;
    }
    for (int i = 0; i < n; i++) {
      lengths[i] = strtoul(p, &p, 10);
      requests[i] = realloc(requests[i], lengths[i]);
      if (fread(requests[i], 1, lengths[i], stdin) != lengths[i]) die("reading a request");
    }
    for (; connected < n; connected++) streams[connected].fd = connectTo(port);
    struct pollfd fds[MAX_STREAMS];
    for (int i = 0; i < n; i++) {
      Stream* s = &streams[i];
      s->carried = 0;
      s->tokens = s->done = 0;
      fds[i].fd = s->fd;
      fds[i].events = POLLIN;
    }
    double c0 = cpuMicros(), t0 = nowMs();
    for (int i = 0; i < n; i++) {
      if (write(streams[i].fd, requests[i], lengths[i]) != (ssize_t)lengths[i]) die("write");
    }
    int open = n;
    static char data[65536];
    while (open > 0) {
      if (poll(fds, (nfds_t)n, -1) < 0) die("poll");
      double at = nowMs();
      for (int i = 0; i < n; i++) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t got = read(fds[i].fd, data, sizeof data);
        if (got < 0) die("read");
        if (got == 0) {
          fprintf(stderr, "server-client: the server closed the connection\n");
          return 1;
        }
        scan(&streams[i], data, (size_t)got, at);
        if (streams[i].done) {
          fds[i].fd = -1;
          open--;
        }
      }
    }
    double cpu = cpuMicros() - c0;
    printf("{\"streams\":[");
    for (int i = 0; i < n; i++) {
      Stream* s = &streams[i];
      double per = s->tokens > 1 ? (s->last - s->first) / (s->tokens - 1) : 0;
      printf("%s{\"ttft\":%.6f,\"perToken\":%.6f,\"tokens\":%d}", i ? "," : "", s->tokens ? s->first - t0 : 0, per, s->tokens);
    }
    printf("],\"cpuMicros\":%.1f}\n", cpu);
    fflush(stdout);
  }
  return 0;
}
