/* load_util.c — helpers shared by the loaders: error messages, roll-pitch-yaw
 * rotations, strict number parsing, paths and package:// resolution
 * (see load_util.h). */
#include "load_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int khz_loadError(char *err, size_t errsz, const char *fmt, ...) {
  if (err && errsz > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
  }
  return -1;
}

void khz_rpy2quat(const double rpy[3], double quat[4]) {
  double cr = cos(0.5 * rpy[0]), sr = sin(0.5 * rpy[0]);
  double cp = cos(0.5 * rpy[1]), sp = sin(0.5 * rpy[1]);
  double cy = cos(0.5 * rpy[2]), sy = sin(0.5 * rpy[2]);

  /* q = qz(yaw) * qy(pitch) * qx(roll) */
  quat[0] = cr * cp * cy + sr * sp * sy;
  quat[1] = sr * cp * cy - cr * sp * sy;
  quat[2] = cr * sp * cy + sr * cp * sy;
  quat[3] = cr * cp * sy - sr * sp * cy;
}

void khz_rpy2mat(const double rpy[3], double mat[9]) {
  double cr = cos(rpy[0]), sr = sin(rpy[0]);
  double cp = cos(rpy[1]), sp = sin(rpy[1]);
  double cy = cos(rpy[2]), sy = sin(rpy[2]);

  /* R = Rz(yaw) Ry(pitch) Rx(roll), row-major */
  mat[0] = cy * cp;
  mat[1] = cy * sp * sr - sy * cr;
  mat[2] = cy * sp * cr + sy * sr;
  mat[3] = sy * cp;
  mat[4] = sy * sp * sr + cy * cr;
  mat[5] = sy * sp * cr - cy * sr;
  mat[6] = -sp;
  mat[7] = cp * sr;
  mat[8] = cp * cr;
}

void khz_pose_compose(double pos[3], double quat[4], const double pa[3], const double qa[4],
                      const double pb[3], const double qb[4]) {
  /* unit qa (identity when zero) */
  double n = sqrt(qa[0] * qa[0] + qa[1] * qa[1] + qa[2] * qa[2] + qa[3] * qa[3]);
  double w = n > 0 ? qa[0] / n : 1, x = n > 0 ? qa[1] / n : 0;
  double y = n > 0 ? qa[2] / n : 0, z = n > 0 ? qa[3] / n : 0;

  /* position: pa + qa * pb * qa^-1, via t = 2 (v x pb), p' = pb + w t + v x t */
  double t[3] = {2 * (y * pb[2] - z * pb[1]), 2 * (z * pb[0] - x * pb[2]),
                 2 * (x * pb[1] - y * pb[0])};
  double p[3] = {pa[0] + pb[0] + w * t[0] + y * t[2] - z * t[1],
                 pa[1] + pb[1] + w * t[1] + z * t[0] - x * t[2],
                 pa[2] + pb[2] + w * t[2] + x * t[1] - y * t[0]};

  /* orientation: qa * qb */
  double q[4] = {w * qb[0] - x * qb[1] - y * qb[2] - z * qb[3],
                 w * qb[1] + x * qb[0] + y * qb[3] - z * qb[2],
                 w * qb[2] - x * qb[3] + y * qb[0] + z * qb[1],
                 w * qb[3] + x * qb[2] - y * qb[1] + z * qb[0]};
  memcpy(pos, p, sizeof p);
  memcpy(quat, q, sizeof q);
}

int khz_parse_doubles(const char *s, double *out, int n) {
  if (!s) return -1;
  const char *p = s;
  for (int i = 0; i < n; i++) {
    /* one number, finite, fully consumed up to white space or the end */
    char *end;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v)) return -1;
    if (*end && !strchr(" \t\r\n", *end)) return -1;
    out[i] = v;
    p = end;
  }

  /* nothing but white space may follow */
  while (*p && strchr(" \t\r\n", *p)) p++;
  return *p ? -1 : 0;
}

int khz_path_dirname(char *out, size_t outsz, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return snprintf(out, outsz, ".") < (int)outsz ? 0 : -1;

  /* keep the root, drop the trailing component */
  size_t len = (size_t)(slash - path);
  if (len == 0) len = 1;
  if (len + 1 > outsz) return -1;
  memcpy(out, path, len);
  out[len] = 0;
  return 0;
}

int khz_path_join(char *out, size_t outsz, const char *dir, const char *rel) {
  int n;
  if (rel[0] == '/' || !dir || !dir[0])
    n = snprintf(out, outsz, "%s", rel);
  else
    n = snprintf(out, outsz, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", rel);
  return n >= 0 && (size_t)n < outsz ? 0 : -1;
}

int khz_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/* appends one path to the ", "-separated list of paths tried */
static void tried_add(char *tried, size_t triedsz, const char *path) {
  if (!tried || triedsz == 0) return;
  size_t len = strlen(tried);
  if (len + 1 >= triedsz) return;
  snprintf(tried + len, triedsz - len, "%s%s", len ? ", " : "", path);
}

/* tries one candidate: copies it into out and returns 0 when it exists */
static int try_candidate(char *out, size_t outsz, const char *cand, char *tried,
                         size_t triedsz) {
  tried_add(tried, triedsz, cand);
  if (!khz_file_exists(cand)) return -1;
  if (snprintf(out, outsz, "%s", cand) >= (int)outsz) return -1;
  return 0;
}

/* searches one ':'-separated list of directories for package NAME, file REST */
static int search_packages(char *out, size_t outsz, const char *list, const char *name,
                           size_t namelen, const char *rest, char *tried, size_t triedsz) {
  const char *p = list;
  while (p && *p) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    char dir[4096], cand[4096];
    if (len > 0 && len < sizeof dir) {
      memcpy(dir, p, len);
      dir[len] = 0;
      while (len > 1 && dir[len - 1] == '/') dir[--len] = 0;

      /* DIR/NAME/REST */
      if (snprintf(cand, sizeof cand, "%s/%.*s/%s", dir, (int)namelen, name, rest) <
              (int)sizeof cand &&
          try_candidate(out, outsz, cand, tried, triedsz) == 0)
        return 0;

      /* DIR is the package itself: DIR/REST */
      const char *last = strrchr(dir, '/');
      last = last ? last + 1 : dir;
      if (strlen(last) == namelen && strncmp(last, name, namelen) == 0 &&
          snprintf(cand, sizeof cand, "%s/%s", dir, rest) < (int)sizeof cand &&
          try_candidate(out, outsz, cand, tried, triedsz) == 0)
        return 0;
    }
    p = colon ? colon + 1 : NULL;
  }
  return -1;
}

int khz_resolve_path(char *out, size_t outsz, const char *uri, const char *basedir,
                     const char *package_path, char *tried, size_t triedsz) {
  if (tried && triedsz) tried[0] = 0;

  /* package://NAME/REST */
  if (strncmp(uri, "package://", 10) == 0) {
    const char *name = uri + 10;
    const char *slash = strchr(name, '/');
    if (!slash || slash == name || !slash[1]) {
      tried_add(tried, triedsz, uri);
      return -1;
    }
    size_t namelen = (size_t)(slash - name);
    const char *rest = slash + 1;
    if (package_path)
      return search_packages(out, outsz, package_path, name, namelen, rest, tried, triedsz);

    /* default search: the environment, then basedir and its parents */
    if (search_packages(out, outsz, getenv("KHZ_PACKAGE_PATH"), name, namelen, rest, tried,
                        triedsz) == 0 ||
        search_packages(out, outsz, getenv("ROS_PACKAGE_PATH"), name, namelen, rest, tried,
                        triedsz) == 0)
      return 0;
    char dir[4096];
    const char *base = basedir && basedir[0] ? basedir : ".";
    if (!realpath(base, dir) && snprintf(dir, sizeof dir, "%s", base) >= (int)sizeof dir)
      return -1;
    for (;;) {
      if (search_packages(out, outsz, dir, name, namelen, rest, tried, triedsz) == 0) return 0;
      char up[4096];
      if (khz_path_dirname(up, sizeof up, dir) != 0 || strcmp(up, dir) == 0) break;
      memcpy(dir, up, strlen(up) + 1);
    }
    return -1;
  }

  /* file://PATH, absolute and relative paths */
  const char *path = strncmp(uri, "file://", 7) == 0 ? uri + 7 : uri;
  char cand[4096];
  if (khz_path_join(cand, sizeof cand, basedir, path) != 0) {
    tried_add(tried, triedsz, path);
    return -1;
  }
  return try_candidate(out, outsz, cand, tried, triedsz);
}

int khz_read_file(const char *path, char **out, size_t *out_len, char *err, size_t errsz) {
  FILE *f = fopen(path, "rb");
  if (!f) return khz_loadError(err, errsz, "%s: cannot open: %s", path, strerror(errno));
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 1 >= cap) {
      cap = cap ? 2 * cap : 65536;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return khz_loadError(err, errsz, "%s: out of memory", path);
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len - 1, f);
    len += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return khz_loadError(err, errsz, "%s: read error", path);
  }
  /* NUL-terminated for the text parsers (the loop leaves len < cap) */
  buf[len] = 0;
  *out = buf;
  *out_len = len;
  return 0;
}

const char *khz_xml_attr(khzXmlStrings *pool, xmlNodePtr node, const char *name) {
  if (!node || !xmlHasProp(node, (const xmlChar *)name)) return NULL;
  xmlChar *v = xmlGetProp(node, (const xmlChar *)name);
  if (!v) return NULL;
  if (pool->n == pool->cap) {
    int cap = pool->cap ? 2 * pool->cap : 64;
    xmlChar **s = realloc(pool->strs, (size_t)cap * sizeof *s);
    if (!s) {
      xmlFree(v);
      return NULL;
    }
    pool->strs = s;
    pool->cap = cap;
  }
  pool->strs[pool->n++] = v;
  return (const char *)v;
}

void khz_xml_strings_free(khzXmlStrings *pool) {
  for (int i = 0; i < pool->n; i++) xmlFree(pool->strs[i]);
  free(pool->strs);
  pool->strs = NULL;
  pool->n = pool->cap = 0;
}
