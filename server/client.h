/* client.h — forwards to the khz client library (clients/c, installed as
 * <khz/client.h>), for the demo, the server tests and the benchmark, which
 * include "client.h". New code includes <khz/client.h>. */
#ifndef KHZ_SERVER_CLIENT_H
#define KHZ_SERVER_CLIENT_H

#include "khz/client.h"

#endif
