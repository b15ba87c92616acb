/* fuzz_server.c — a libFuzzer target for the server's message handling
 * (issue 20, item 7): one in-process server (default scene, realtime, private
 * ipc endpoints) made on the first input; each input is handled as a ROUTER
 * payload from one peer exactly as the I/O thread handles it (size limit,
 * decoding, commands, haptic inputs, every request row), then the loop's
 * replies are answered and its states published. The fuzzer's thread plays
 * the I/O thread (the server's event loop is not run). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static khzServer *srv;

static void stop_server(void) { khz_server_destroy(&srv); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!srv) {
    khzServerConfig cfg;
    char err[1024];
    khz_settings_defaults(&cfg);
    snprintf(cfg.state_endpoint, sizeof cfg.state_endpoint, "ipc:///tmp/khz-fuzz-%d-state", (int)getpid());
    snprintf(cfg.command_endpoint, sizeof cfg.command_endpoint, "ipc:///tmp/khz-fuzz-%d-cmd", (int)getpid());
    cfg.rt_priority = 0, cfg.io_priority = 0, cfg.lock_memory = 0, cfg.cpu_dma_latency_us = -1;
    cfg.log_level = 3; /* errors only */
    srv = khz_server_new(&cfg, NULL, err, sizeof err);
    if (!srv) {
      fprintf(stderr, "fuzz_server: %s\n", err);
      abort();
    }
    atexit(stop_server);
  }
  khz_server_handleBytes(srv, (const uint8_t *)"fuzzer", 6, data, size);
  return 0;
}
