/* standalone.c — runs a fuzz target's LLVMFuzzerTestOneInput over files and
 * directories (a corpus) without libFuzzer, so that any compiler builds it
 * and the test suite (release and sanitizer builds) replays the seeds.
 *   fuzz_X_run FILE|DIR...   prints how many inputs ran; a crash fails */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
  free(buf);
  return 1;
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
  int n = 0;
  for (int i = 1; i < argc; i++) n += run_path(argv[i]);
  printf("%s: %d inputs ran\n", argv[0], n);
  return n > 0 ? 0 : 1;
}
