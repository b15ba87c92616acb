/* record.c — a recording's writer thread behind a bounded byte queue
 * (record.h). The I/O thread copies a record into the queue under a mutex
 * that the writer holds only to move its indices, never across write().
 */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct khzRecorder {
  int fd;
  unsigned char *q;
  size_t cap, head, tail; /* bytes; head - tail queued (head, tail grow without bound) */
  int stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  _Atomic int failed, finished;
  _Atomic uint64_t written, dropped;
  char error[256];
  void (*done)(void *);
  void *user;
};

int khz_record_nameOk(const char *name, const char **why) {
  size_t n = strlen(name);
  if (n == 0) return *why = "no file name given", 0;
  if (n > KHZ_RECORD_NAME_MAX) return *why = "longer than 128 characters", 0;
  if (name[0] == '.') return *why = "starts with '.'", 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (c == '/') return *why = "a path: give a file name (no '/')", 0;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return *why = "only letters, digits, '.', '_' and '-' are allowed", 0;
  }
  return 1;
}

static void *writer_main(void *arg) {
  khzRecorder *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (r->head == r->tail && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
    if (r->head == r->tail) break; /* stopped and drained */
    size_t off = r->tail % r->cap, n = r->head - r->tail;
    if (n > r->cap - off) n = r->cap - off;
    pthread_mutex_unlock(&r->mu);
    ssize_t w = atomic_load(&r->failed) ? (ssize_t)n : write(r->fd, r->q + off, n);
    if (w < 0 && errno != EINTR) {
      snprintf(r->error, sizeof r->error, "%s", strerror(errno));
      atomic_store(&r->failed, 1);
      w = (ssize_t)n;
    }
    pthread_mutex_lock(&r->mu);
    if (w > 0) r->tail += (size_t)w;
  }
  pthread_mutex_unlock(&r->mu);
  if (close(r->fd) != 0 && !atomic_load(&r->failed)) {
    snprintf(r->error, sizeof r->error, "%s", strerror(errno));
    atomic_store(&r->failed, 1);
  }
  r->fd = -1;
  atomic_store(&r->finished, 1);
  if (r->done) r->done(r->user);
  return NULL;
}

khzRecorder *khz_recorder_open(int dirfd, const char *path, size_t queue_bytes,
                               void (*done)(void *), void *user, char *err, size_t errsz) {
  int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    snprintf(err, errsz, "cannot create '%s': %s%s", path, strerror(e),
             e == EEXIST ? " (recordings are created new, never overwritten)" : "");
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    snprintf(err, errsz, "'%s' is not a regular file", path);
    close(fd);
    return NULL;
  }
  return khz_recorder_fromFd(fd, queue_bytes, done, user, err, errsz);
}

khzRecorder *khz_recorder_fromFd(int fd, size_t queue_bytes, void (*done)(void *), void *user,
                                 char *err, size_t errsz) {
  /* the queue is mapped on its own, not taken from malloc: a multi-MiB block
   * freed at every stop would raise glibc's dynamic mmap threshold, and the
   * next ones would come from (and fragment) the heap the process keeps */
  khzRecorder *r = calloc(1, sizeof *r);
  unsigned char *q = queue_bytes ? mmap(NULL, queue_bytes, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                 : MAP_FAILED;
  if (!r || q == MAP_FAILED) {
    snprintf(err, errsz, "out of memory");
    if (q != MAP_FAILED) munmap(q, queue_bytes);
    free(r), close(fd);
    return NULL;
  }
  r->fd = fd;
  r->q = q;
  r->cap = queue_bytes;
  r->done = done;
  r->user = user;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  if (pthread_create(&r->thread, NULL, writer_main, r) != 0) {
    snprintf(err, errsz, "cannot start the recording's writer thread");
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    munmap(q, queue_bytes), free(r), close(fd);
    return NULL;
  }
  pthread_setname_np(r->thread, "khz-record");
  return r;
}

static void put(khzRecorder *r, const void *p, size_t n) {
  size_t off = r->head % r->cap, first = n < r->cap - off ? n : r->cap - off;
  memcpy(r->q + off, p, first);
  memcpy(r->q, (const unsigned char *)p + first, n - first);
  r->head += n;
}

int khz_recorder_write(khzRecorder *r, const void *buf, size_t len) {
  uint8_t hdr[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), (uint8_t)(len >> 24)};
  if (atomic_load(&r->failed)) return -1;
  pthread_mutex_lock(&r->mu);
  int ok = !r->stop && r->cap - (r->head - r->tail) >= len + 4;
  if (ok) {
    put(r, hdr, 4);
    put(r, buf, len);
    pthread_cond_signal(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
  atomic_fetch_add(ok ? &r->written : &r->dropped, 1);
  return ok ? 0 : -1;
}

void khz_recorder_stop(khzRecorder *r) {
  pthread_mutex_lock(&r->mu);
  r->stop = 1;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

int khz_recorder_finished(khzRecorder *r) { return atomic_load(&r->finished); }

void khz_recorder_free(khzRecorder **r_p) {
  if (!r_p || !*r_p) return;
  khzRecorder *r = *r_p;
  khz_recorder_stop(r);
  pthread_join(r->thread, NULL);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  munmap(r->q, r->cap);
  free(r);
  *r_p = NULL;
}

uint64_t khz_recorder_written(khzRecorder *r) { return atomic_load(&r->written); }
uint64_t khz_recorder_dropped(khzRecorder *r) { return atomic_load(&r->dropped); }
const char *khz_recorder_error(khzRecorder *r) { return atomic_load(&r->failed) ? r->error : NULL; }
