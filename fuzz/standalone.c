/* standalone.c — runs a fuzz target's LLVMFuzzerTestOneInput over files and
 * directories (a corpus) without libFuzzer, so that any compiler builds it
 * and the test suite (release and sanitizer builds) replays the seeds.
 *   fuzz_X_run [--mutate N] FILE|DIR...   prints how many inputs ran; a crash fails
 * With --mutate N each file is also run as N mutants, a short fuzzing run
 * that needs no libFuzzer: deterministic (a xorshift generator seeded by the
 * file's bytes and the mutant's number), each mutant 1 to 8 edits of the
 * kinds libFuzzer starts with (a byte set at random, a bit flipped, a byte
 * inserted or erased, a run of bytes copied within the input). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int mutants; /* --mutate N */

static uint64_t xorshift(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* mutant k of buf[0..n) into out (room for n + 8 bytes); returns its size */
static size_t mutate(const uint8_t *buf, size_t n, uint8_t *out, int k) {
  uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)k * 0x2545f4914f6cdd1dull;
  for (size_t i = 0; i < n; i++) x = (x ^ buf[i]) * 0x100000001b3ull;
  if (!x) x = 1;
  memcpy(out, buf, n);
  int edits = 1 + (int)(xorshift(&x) % 8);
  for (int e = 0; e < edits; e++) {
    size_t at = n ? (size_t)(xorshift(&x) % n) : 0;
    switch (xorshift(&x) % 5) {
      case 0: if (n) out[at] = (uint8_t)xorshift(&x); break;
      case 1: if (n) out[at] ^= (uint8_t)(1u << (xorshift(&x) % 8)); break;
      case 2: /* insert a byte, while there is room */
        if (n < (size_t)-1 && e < 8) {
          memmove(out + at + 1, out + at, n - at);
          out[at] = (uint8_t)xorshift(&x);
          n++;
        }
        break;
      case 3: /* erase one */
        if (n) {
          memmove(out + at, out + at + 1, n - at - 1);
          n--;
        }
        break;
      default: /* copy a run of up to 16 bytes within the input */
        if (n > 1) {
          size_t from = (size_t)(xorshift(&x) % n), len = 1 + (size_t)(xorshift(&x) % 16);
          if (from + len > n) len = n - from;
          if (at + len > n) len = n - at;
          memmove(out + at, out + from, len);
        }
        break;
    }
  }
  return n;
}

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
  fclose(f);
  if (!buf) return 0;
  LLVMFuzzerTestOneInput(buf, got);
  /* and every prefix-truncated variant a parser must survive: halves */
  for (size_t cut = got / 2; cut > 0; cut /= 4) LLVMFuzzerTestOneInput(buf, cut);
  uint8_t *m = mutants > 0 ? malloc(got + 9) : NULL;
  for (int k = 0; m && k < mutants; k++) LLVMFuzzerTestOneInput(m, mutate(buf, got, m, k));
  free(m);
  free(buf);
  return 1 + (m ? mutants : 0);
}

static int run_path(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return 0;
  if (!S_ISDIR(sb.st_mode)) return run_file(path);
  DIR *d = opendir(path);
  struct dirent *e;
  int n = 0;
  char sub[4096];
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    n += run_path(sub);
  }
  if (d) closedir(d);
  return n;
}

int main(int argc, char **argv) {
  int n = 0, i = 1;
  if (argc > 2 && strcmp(argv[1], "--mutate") == 0) mutants = atoi(argv[2]), i = 3;
  for (; i < argc; i++) n += run_path(argv[i]);
  printf("%s: %d inputs ran\n", argv[0], n);
  return n > 0 ? 0 : 1;
}
