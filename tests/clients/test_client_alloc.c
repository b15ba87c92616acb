/* test_client_alloc.c — the C client library allocates nothing per message
 * after start-up: malloc & co. are interposed in this process (all callers:
 * the library, protobuf-c, libzmq) and counted on the calling thread while it
 * receives 1000 states (every one decoded) and looks names up, then answers
 * 1000 states with torques: zero calls either way (states decode into the
 * library's arenas; commands are packed into its ring of send buffers, which
 * libzmq sends as constant data). Skipped under AddressSanitizer, which owns
 * malloc.
 *
 *   test_client_alloc KHZ-SERVER
 */
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#include <stdio.h>
int main(void) {
  printf("skipped: AddressSanitizer owns malloc (the release build runs this test)\n");
  return 77;
}
#else
#include "clients/spawn.h"
#include "ensure.h"
#include "khz/client.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Thread_local int counting;
static long calls;

void *malloc(size_t n) {
  if (counting) calls++;
  return __libc_malloc(n);
}
void *calloc(size_t k, size_t n) {
  if (counting) calls++;
  return __libc_calloc(k, n);
}
void *realloc(void *p, size_t n) {
  if (counting) calls++;
  return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: test_client_alloc KHZ-SERVER\n"), 2;
  server s;
  char err[256];
  ENSURE(server_dir(&s) == 0);
  ENSURE(server_start(&s, argv[1], NULL) == 0);
  khzClient *c = khz_client_new(s.state_ep, s.cmd_ep, NULL, err, sizeof err);
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 3000) : NULL;
  ENSURE(md != NULL);
  if (!md) return server_cleanup(&s), ensure_report();

  /* the probe: the wrapper sees this thread's calls */
  counting = 1;
  void *volatile probe = malloc(16);
  counting = 0;
  free(probe);
  ENSURE(calls == 1);

  /* warm-up: the first states may grow the arenas */
  double tau[64] = {0};
  for (int i = 0; i < 200; i++) {
    const Khz__V1__State *st = khz_client_latestState(c, 1000);
    if (st) khz_client_sendTorques(c, st, tau, md->na);
  }

  /* receiving: every state decoded, lookups, the newest-state poll */
  calls = 0;
  counting = 1;
  int got = 0;
  for (int i = 0; i < 1000; i++) got += khz_client_nextState(c, 1000) != NULL;
  for (int i = 0; i < 100; i++) got += khz_client_actuatorIndex(c, "joint4") == 3;
  counting = 0;
  long recv_calls = calls;
  ENSURE(got == 1100);
  ENSURE_MSG(recv_calls == 0, "%ld allocations while receiving 1000 states", recv_calls);

  /* answering: one command per state */
  calls = 0;
  counting = 1;
  int sent = 0;
  for (int i = 0; i < 1000; i++) {
    const Khz__V1__State *st = khz_client_nextState(c, 1000);
    if (st && khz_client_sendTorques(c, st, tau, md->na) == 0) sent++;
  }
  counting = 0;
  long send_calls = calls;
  ENSURE(sent == 1000);
  ENSURE_MSG(send_calls == 0, "%ld allocations for %d commands", send_calls, sent);
  ENSURE(khz_client_counters(c)->arena_grows == 0);
  printf(
      "1000 states received: %ld allocations; 1000 states answered with commands: %ld "
      "allocations (library, protobuf-c and libzmq, on this thread)\n",
      recv_calls, send_calls);
  khz_client_destroy(&c);
  ENSURE(server_stop(&s) == 0);
  server_cleanup(&s);
  return ensure_report();
}
#endif
