/* record.h — a recording's file and its writer thread: the I/O thread hands
 * each record (4-byte little-endian length + State bytes) to a bounded byte
 * queue and never waits; the writer thread does the write() calls. When the
 * queue is full (a slow disk) the record is dropped whole and counted.
 *
 * Files are created new: open(O_CREAT | O_EXCL | O_NOFOLLOW), so an existing
 * file, a symlink or a FIFO is refused, never truncated or written through.
 */
#ifndef KHZ_SERVER_RECORD_H
#define KHZ_SERVER_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define KHZ_RECORD_QUEUE (4u << 20) /* bytes queued towards the writer (about 1500 states) */
#define KHZ_RECORD_NAME_MAX 128     /* a client's file name */

typedef struct khzRecorder khzRecorder;

/* 1 when name is a plain file name a client may give: 1..KHZ_RECORD_NAME_MAX
 * characters of [A-Za-z0-9._-], not starting with '.' (so no "..", no
 * hidden files, no '/'); else 0 with the reason in why */
int khz_record_nameOk(const char *name, const char **why);

/* Creates the file (relative to dirfd, or a path when dirfd is AT_FDCWD)
 * and starts its writer; done(user) is called from the writer thread once it
 * has stopped and closed the file. NULL with a message in err. */
khzRecorder *khz_recorder_open(int dirfd, const char *path, size_t queue_bytes,
                               void (*done)(void *), void *user, char *err, size_t errsz);

/* The same on a descriptor the caller opened (tests: a pipe nobody reads);
 * the recorder closes it. */
khzRecorder *khz_recorder_fromFd(int fd, size_t queue_bytes, void (*done)(void *), void *user,
                                 char *err, size_t errsz);

/* Queues one record (len bytes prefixed with their length); never blocks.
 * Returns 0, or -1 when dropped (queue full: counted) or when the writer
 * failed (khz_recorder_error says why). */
int khz_recorder_write(khzRecorder *r, const void *buf, size_t len);

/* Asks the writer to write what is queued, close the file and stop (then
 * done() is called). Never blocks. */
void khz_recorder_stop(khzRecorder *r);

/* 1 once the writer has stopped and closed the file. */
int khz_recorder_finished(khzRecorder *r);

/* Joins the writer (call after done(), or it waits for it) and frees. */
void khz_recorder_free(khzRecorder **r_p);

/* records written, records dropped, and the writer's error (NULL = none) */
uint64_t khz_recorder_written(khzRecorder *r);
uint64_t khz_recorder_dropped(khzRecorder *r);
const char *khz_recorder_error(khzRecorder *r);

#endif
