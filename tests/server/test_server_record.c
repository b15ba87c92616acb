/* test_server_record.c — recordings go only where the operator allows
 * (issue 20, item 2).
 *
 * Without --record-dir a StartRecording is refused. With one, a client names
 * a file, not a path: "../x", "a/b", "/tmp/x", ".hidden" and "" are refused
 * (OUT_OF_RANGE); an existing file, a symlink and a FIFO of that name are
 * refused (REFUSED) and left as they were; a good name records consecutive
 * states, StopRecording answers once the file is complete, and Stats counts
 * the states written. The operator's --record is created new too (an existing
 * file stops the server from starting). The writer is a thread behind a
 * bounded queue: on a pipe nobody reads (a disk that stalls) queueing never
 * blocks the caller and what does not fit is dropped and counted. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "harness.h"
#include "record.h"

static const Khz__V1__Reply *start_rec(khzClient *c, const char *name) {
  Khz__V1__Request rq;
  Khz__V1__StartRecording sr;
  khz__v1__request__init(&rq);
  khz__v1__start_recording__init(&sr);
  sr.path = (char *)name;
  rq.op_case = KHZ__V1__REQUEST__OP_START_RECORDING;
  rq.start_recording = &sr;
  return khz_client_request(c, &rq, 5000);
}

static int file_is(const char *path, const char *content) {
  char buf[64] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  return n == strlen(content) && !memcmp(buf, content, n);
}

static void write_file(const char *path, const char *content) {
  FILE *f = fopen(path, "wb");
  if (f) fputs(content, f), fclose(f);
}

/* states keep coming (the I/O thread is not stalled) */
static void ticking(khzClient *c) {
  const Khz__V1__State *a = khz_client_latestState(c, 2000);
  nap_ms(100);
  const Khz__V1__State *b = khz_client_latestState(c, 2000);
  ENSURE(a && b);
}

static void test_no_dir(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (c) {
    const Khz__V1__Reply *r = start_rec(c, "x.rec");
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__REFUSED && strstr(r->error, "--record-dir"));
    if (r) printf("no record_dir: %d %s\n", r->code, r->error);
    khz_client_destroy(&c);
  }
  harness_stop(&h);
}

static void test_dir(const char *dir, const char *outside) {
  char path[512], target[512];
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.record_dir, sizeof cfg.record_dir, "%s", dir);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (!c) return harness_stop(&h);

  /* names that are paths or otherwise not plain file names */
  const char *bad[] = {"../escape.rec", "a/b.rec", "/tmp/abs.rec", ".hidden", "..", "", "sp ace"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const Khz__V1__Reply *r = start_rec(c, bad[i]);
    ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "'%s': %d", bad[i], r ? (int)r->code : -1);
    if (r) printf("'%s' -> %d: %s\n", bad[i], r->code, r->error);
  }
  snprintf(path, sizeof path, "%s/../escape.rec", dir);
  struct stat sb;
  ENSURE(stat(path, &sb) != 0);

  /* an existing file, a symlink to a file outside, a FIFO: refused, untouched */
  snprintf(path, sizeof path, "%s/exists.rec", dir);
  write_file(path, "keep");
  snprintf(target, sizeof target, "%s", outside);
  write_file(target, "outside");
  snprintf(path, sizeof path, "%s/link.rec", dir);
  ENSURE(symlink(target, path) == 0);
  snprintf(path, sizeof path, "%s/fifo.rec", dir);
  ENSURE(mkfifo(path, 0600) == 0);
  const char *refused[] = {"exists.rec", "link.rec", "fifo.rec"};
  for (int i = 0; i < 3; i++) {
    const Khz__V1__Reply *r = start_rec(c, refused[i]);
    ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__REFUSED, "'%s': %d", refused[i], r ? (int)r->code : -1);
    if (r) printf("'%s' -> %d: %s\n", refused[i], r->code, r->error);
    ticking(c);
  }
  snprintf(path, sizeof path, "%s/exists.rec", dir);
  ENSURE(file_is(path, "keep"));
  ENSURE(file_is(target, "outside"));

  /* a good name: consecutive states, complete when StopRecording answers */
  const Khz__V1__Reply *r = start_rec(c, "run-1.khzrec");
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  /* 150 states published meanwhile (however long a loaded machine takes) */
  const Khz__V1__State *s0 = khz_client_latestState(c, 2000);
  uint64_t until = s0 ? s0->seq + 150 : 0;
  for (int k = 0; k < 5000; k++) {
    const Khz__V1__State *sn = khz_client_nextState(c, 2000);
    if (!sn || sn->seq >= until) break;
  }
  r = req_simple(c, KHZ__V1__REQUEST__OP_STOP_RECORDING);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  r = req_simple(c, KHZ__V1__REQUEST__OP_STOP_RECORDING);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__REFUSED);
  snprintf(path, sizeof path, "%s/run-1.khzrec", dir);
  FILE *f = fopen(path, "rb");
  ENSURE(f != NULL);
  int nrec = 0, consecutive = 1;
  uint64_t prev = 0;
  uint8_t hdr[4], buf[65536];
  while (f && fread(hdr, 1, 4, f) == 4) {
    size_t len = hdr[0] | hdr[1] << 8 | hdr[2] << 16 | (size_t)hdr[3] << 24;
    if (len > sizeof buf || fread(buf, 1, len, f) != len) {
      consecutive = 0;
      break;
    }
    Khz__V1__State *rs = khz__v1__state__unpack(NULL, len, buf);
    if (!rs) break;
    if (nrec && rs->seq != prev + 1) consecutive = 0;
    prev = rs->seq;
    nrec++;
    khz__v1__state__free_unpacked(rs, NULL);
  }
  if (f) fclose(f);
  const Khz__V1__Stats *st = khz_client_getStats(c, 5000);
  printf("recorded %d consecutive states; Stats.recorded %llu, record_dropped %llu\n", nrec,
         st ? (unsigned long long)st->recorded : 0ULL, st ? (unsigned long long)st->record_dropped : 0ULL);
  ENSURE(nrec > 100 && consecutive);
  ENSURE(st && st->recorded == (uint64_t)nrec && st->record_dropped == 0);
  /* the same name again: never overwritten */
  r = start_rec(c, "run-1.khzrec");
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__REFUSED);
  khz_client_destroy(&c);
  harness_stop(&h);

  /* the operator's --record: created new as well */
  harness_config(&cfg);
  snprintf(cfg.record, sizeof cfg.record, "%s/exists.rec", dir);
  char err[512];
  khzServer *s = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE(s == NULL && strstr(err, "never overwritten"));
  if (!s) printf("--record onto an existing file: %s\n", err);
  khz_server_destroy(&s);
}

/* the writer on a pipe nobody reads: queueing never blocks, drops counted */
static void test_stalled_writer(void) {
  int fds[2];
  char err[256];
  ENSURE(pipe(fds) == 0);
  khzRecorder *r = khz_recorder_fromFd(fds[1], 64 * 1024, NULL, NULL, err, sizeof err);
  ENSURE(r != NULL);
  if (!r) return;
  uint8_t rec[3000];
  memset(rec, 7, sizeof rec);
  int64_t worst = 0;
  int ok = 0, dropped = 0;
  for (int i = 0; i < 2000; i++) {
    int64_t t0 = khz_client_now();
    if (khz_recorder_write(r, rec, sizeof rec) == 0) ok++;
    else dropped++;
    int64_t dt = khz_client_now() - t0;
    worst = dt > worst ? dt : worst;
  }
  printf("stalled writer: %d queued, %d dropped, slowest write %.1f us\n", ok, dropped, worst / 1e3);
  ENSURE(dropped > 0 && khz_recorder_dropped(r) == (uint64_t)dropped);
  ENSURE(worst < 50000000); /* never waits for the disk (50 ms: generous for a loaded machine) */
  /* the reader comes back: everything queued gets written, then the writer stops */
  khz_recorder_stop(r);
  size_t total = 0;
  ssize_t n;
  char sink[65536];
  int64_t until = khz_client_now() + 5000000000LL;
  while ((n = read(fds[0], sink, sizeof sink)) > 0 && khz_client_now() < until) total += (size_t)n;
  khz_recorder_free(&r);
  close(fds[0]);
  ENSURE_MSG(total == (size_t)ok * (sizeof rec + 4), "%zu bytes read, %zu queued", total,
             (size_t)ok * (sizeof rec + 4));
}

int main(void) {
  char dir[] = "/tmp/khz-record-XXXXXX", outside[600];
  ENSURE(mkdtemp(dir) != NULL);
  snprintf(outside, sizeof outside, "%s-outside", dir);
  test_no_dir();
  test_dir(dir, outside);
  test_stalled_writer();
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, outside);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return ensure_report();
}
