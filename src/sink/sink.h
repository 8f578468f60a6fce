/* sink.h — the S3 sink inside the broker (spec/s3-sink.txt; design: docs/s3-sink.md).
 *
 * QUEEN_S3_EMBEDDED=true makes main build one s3_node: the node-wide knobs, the sinks it runs
 * (today the default tenant's, from the QUEEN_S3_* environment), and the threads named
 * queen-s3 that run them — worker threads that run the queue tasks (claim a queue's lease,
 * read its log in time slices, close windows, write intent → objects → manifest → commit
 * pointer) and one keeper thread (lease refreshes, presence rows, the bucket probe). Each
 * thread owns a blocking PostgreSQL connection and an S3 client; nothing here runs on the
 * libuv loop, and the loop reads the sink only through the status and metrics renderers,
 * which take the sink's lock for a copy.
 *
 * With opts.control_plane the keeper also runs the control plane's tenant sinks, read from
 * their rows every five seconds (or at once after s3_node_poke) and added, rebuilt and stopped
 * at run time (docs/s3-sink.md, "Sinks at run time").
 *
 * Lifecycle: s3_node_new (nothing runs), s3_node_add_sink per sink (takes the config),
 * s3_node_start (threads start; the bucket is probed before any queue starts),
 * s3_node_stop at SIGTERM (the drain of "Stopping": every queue stops reading, finishes a
 * window already in its commit sequence, commits the one it is filling when that is worth
 * it, gives its lease back), s3_node_drained tells when every thread is done,
 * s3_node_free joins and frees (after the drain, or after the grace ran out). */
#ifndef QUEEN_SINK_SINK_H
#define QUEEN_SINK_SINK_H

#include <stdint.h>

#include "core/buf.h"
#include "sink/sinkcfg.h"

typedef struct s3_node s3_node;

typedef struct s3_node_opts {
    const char *conninfo;       /* what libpq is given (the embedded cluster's or the configured one) */
    int64_t statement_timeout_ms;
    int64_t connect_timeout_ms;
    const char *node_id;
    int control_plane;          /* run the control plane's tenant sinks (the embedded proxy is on) */
} s3_node_opts;

/* knobs is taken over (freed by s3_node_free). */
s3_node *s3_node_new(const s3_node_opts *o, s3_node_knobs *knobs);
/* Adds a sink; the config is taken over. Logs its start line. Before s3_node_start only. */
void s3_node_add_sink(s3_node *n, s3_sink_config *c, const char *source);
/* Asks the keeper to read the control plane's tenant sinks now (a control-plane write on this
 * node). Any thread; n may be NULL. */
void s3_node_poke(s3_node *n);
/* Starts the threads. 0, or -1 (a thread could not be created; logged). */
int s3_node_start(s3_node *n);
/* Begins the drain (idempotent). */
void s3_node_stop(s3_node *n);
/* Every queue task has drained and every thread has finished its work. */
int s3_node_drained(s3_node *n);
/* Joins the threads when they are done; when they are not (the grace ran out), tells them to
 * stop at once, waits up to a second, and leaves any still blocked to die with the process. */
void s3_node_free(s3_node *n);
int64_t s3_node_grace_ms(const s3_node *n);

/* The "s3" block of GET /status (a JSON object). Any thread. With tenant set, only that
 * tenant's sinks are listed (a request authenticated as one tenant sees no other's). */
void s3_node_status_json(s3_node *n, buf *out, const uint8_t *tenant);
/* Appends every queen_s3_* family to a Prometheus body. Any thread. */
void s3_node_metrics(s3_node *n, buf *out);

#endif
