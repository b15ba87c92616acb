/* carve.h — carving aligned arrays out of one block (model, data and the
 * collision data each live in a single allocation): run a layout once with
 * base = NULL to count the bytes, allocate, run it again to assign. */
#ifndef KHZ_CARVE_H
#define KHZ_CARVE_H

#include <stddef.h>

typedef struct {
  unsigned char *base;
  size_t used;
} carver;

static inline void *carve(carver *c, size_t bytes) {
  size_t off = (c->used + 63) & ~(size_t)63;
  c->used = off + bytes;
  return c->base ? c->base + off : NULL;
}

#endif
