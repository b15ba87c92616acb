/* handoff.c — storage of the SPSC ring (handoff.h); the operations are inline. */
#include <stdlib.h>
#include <string.h>

#include "handoff.h"

int khz_ring_init(khzRing *r, size_t capacity, size_t slot_size) {
  size_t cap = 1;
  while (cap < capacity) cap <<= 1;
  slot_size = (slot_size + 63) & ~(size_t)63;
  memset(r, 0, sizeof *r);
  /* aligned, zeroed and written once so that the pages are resident */
  r->slots = aligned_alloc(64, cap * slot_size);
  if (!r->slots) return -1;
  memset(r->slots, 0, cap * slot_size);
  r->mask = cap - 1;
  r->slot_size = slot_size;
  atomic_store(&r->head, 0);
  atomic_store(&r->tail, 0);
  return 0;
}

void khz_ring_free(khzRing *r) {
  free(r->slots);
  r->slots = NULL;
}
