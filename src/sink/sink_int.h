/* sink_int.h — the S3 sink's internals, shared by sink.c (the node: threads, scheduling, the
 * keeper, status and metrics) and qtask.c (one queue's task: lease, reading, windows, the
 * commit sequence). Not for the rest of the broker: it includes sink.h.
 *
 * Ownership and locks:
 *  - s3_node owns its sinks and every task; node->mu guards the task list, every task's
 *    scheduling fields and status snapshot (t->st), and each sink's reported fields.
 *  - Sinks change at run time only on the keeper thread (the control plane's tenant sinks:
 *    added, retired, freed once every task of theirs is finished and none runs); every change of
 *    n->sinks / n->tasks is made under node->mu, so the keeper alone may read them without it.
 *  - A task runs on one worker at a time (t->running, under node->mu); everything in the
 *    "private" part of s3_qtask is touched only by the worker running it, without a lock.
 *  - t->lease_mu serialises every write of the task's lease row: the worker's fenced batches
 *    and the keeper's refreshes each expect the version the other left (spec: "the fence").
 *  Lock order inside the process: node->mu before lease_mu (status copies the lease state);
 *  nothing takes node->mu while it holds lease_mu. */
#ifndef QUEEN_SINK_SINK_INT_H
#define QUEEN_SINK_SINK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/strmap.h"
#include "metrics/metrics.h"
#include "s3/s3.h"
#include "sink/docs.h"
#include "sink/sink.h"
#include "sink/sinkcfg.h"
#include "sink/sinkdb.h"
#include "sink/window.h"
#include "sink/writer.h"

#define S3_LOG "queen-s3"
/* Worker threads: S3_WORKERS, or QUEEN_S3_FETCH_CONCURRENCY when that is more (so every read
 * it allows has a worker to run on), at most S3_MAX_WORKERS: each worker holds one PostgreSQL
 * connection. */
#define S3_WORKERS 4
#define S3_MAX_WORKERS 16
/* A task that wants to read while every read slot is taken tries again this soon. */
#define S3_READ_SLOT_RETRY_MS 20
/* A queue that does not exist yet is looked for again this soon (spec). */
#define S3_MISSING_RETRY_MS 5000
/* How often QUEEN_S3_QUEUES=* lists the tenant's queues again. */
#define S3_RELIST_MS 5000
/* A node waits this long per queue it already runs before claiming a free one (spec). */
#define S3_CLAIM_STEP_MS 1000
#define S3_CLAIM_JITTER_MS 200
/* A stopping node tries to give a lease back for this long (spec: "retrying for up to ten
 * seconds when a call fails"). */
#define S3_RELEASE_BUDGET_MS 10000
/* A queue that failed for a reason retrying the same step cannot fix is tried again slowly. */
#define S3_FAILED_RETRY_MS 60000
#define S3_BACKOFF_MIN_MS 250
#define S3_BACKOFF_MAX_MS 30000
/* The smallest slice a read asks for, whatever the budgets say, so a queue always progresses. */
#define S3_MIN_SLICE_BYTES (256u << 10)
/* The health verdict: red past three windows, thirty seconds at the least (spec). */
#define S3_STALE_WINDOWS 3
#define S3_MIN_STALE_MS 30000
/* How often every node reads the control plane's tenant sinks again (spec: five seconds). */
#define S3_CP_READ_MS 5000

enum qstate {
    Q_CLAIMING = 0,
    Q_HELD,
    Q_RESTORING,
    Q_FILLING,
    Q_INTENT,
    Q_UPLOAD,
    Q_COMMIT,
    Q_DRAINED,
    Q_FENCED,
    Q_FAILED,
    Q_MISSING,
    Q_CRASHED,
    Q_RELEASED,
};
const char *qstate_name(enum qstate s);

enum sink_phase { SP_STARTING = 0, SP_RUNNING, SP_BACKOFF, SP_STOPPED, SP_ERROR };

typedef struct s3_node s3_node;
typedef struct s3_sink s3_sink;
typedef struct s3_qtask s3_qtask;

/* One S3 request counter of a sink: queen_s3_s3_requests_total{operation, code}. */
#define S3_REQ_SLOTS 64
typedef struct s3_req_slot {
    const char *op;
    long code;
    uint64_t n;
} s3_req_slot;

struct s3_sink {
    s3_node *node;
    s3_sink_config c;
    char source[8];           /* "env" or "cp" */
    /* a control-plane sink: the row's updated_at it was built from, and whether the row wants it
     * running (enabled, cluster active or push_blocked) */
    int64_t cp_updated_us;
    int cp_wanted;
    /* runs no queue, probes nothing, writes no presence row: a stopped control-plane row, or
     * one whose secret this node cannot open (phase error) */
    int inert;
    /* being stopped at run time: every task drains as at SIGTERM, then the keeper frees the
     * sink (set under node->mu, read by the workers) */
    atomic_int retiring;
    char sse[320];            /* "aws:kms:<key id>" when one is given */
    s3_client *wclients[S3_MAX_WORKERS]; /* each worker's client for this sink, made on first use */
    mcounter given_back;
    s3_config s3;             /* strings borrowed from c */
    char tenant_label[64];    /* ",tenant=\"<id>\"" for every tenant but the default one, else "" */
    char writer[64];          /* "queen-s3/2.0.0 jsonl+zstd" */
    enum s3_compression codec;
    char incarnation[37];     /* this sink's life on this node: the lease rows it writes name it */
    /* guarded by node->mu */
    enum sink_phase phase;
    char error[1100];
    int bucket_state;         /* -1 not probed yet, 0 unreachable, 1 reachable */
    char bucket_error[1100];
    int64_t bucket_checked_ms;
    int nodes;                /* live presence rows (this node included once it wrote its own) */
    int share;                /* ceil(queues / nodes), as the keeper last computed it */
    char giving_back[256];    /* the queue being given back to even out the shares, or "" */
    uint64_t over_share_since_ms; /* monotonic: since when this node holds more than its share */
    uint64_t gave_back_at_ms;
    s3_req_slot req[S3_REQ_SLOTS];
    int nreq;
    /* keeper-private */
    uint64_t next_probe_ms;
    int probe_backoff_ms;
    uint64_t next_presence_ms;
    uint64_t next_list_ms;
    int presence_written;
    s3_client *keeper_s3;
};

/* A buffered record: the s3_record the writer takes, plus what the window needs. */
typedef struct s3_chunk {
    struct s3_chunk *next;
    size_t used, cap;
    char data[];
} s3_chunk;

typedef struct s3_buffer {
    s3_record *recs;
    size_t n, cap;
    s3_chunk *chunks;
    uint64_t bytes; /* weight (window.h) */
    int64_t min_ts;
} s3_buffer;

/* The next offset of one partition (the position), for telling records retention removed. */
typedef struct s3_pos {
    char *name;
    size_t len;
    uint8_t uuid[16];
    int64_t next;
} s3_pos;

/* What status shows of a task; written by its worker under node->mu. */
typedef struct s3_qstatus {
    enum qstate state;
    int owned;                 /* this node holds the lease */
    char held_by[256];
    uint64_t k;
    int64_t t_end;             /* 0 = none */
    int64_t complete_through;  /* 0 = unknown */
    int64_t safe_time;
    int64_t now_us;            /* the database's clock with safe_time */
    int redo;
    uint64_t buffered;
    uint32_t partitions;
    uint64_t windows, records, bytes, lost;
    char last_error[512];
    int64_t last_error_ms;
    uint64_t ckpt_k;           /* last checkpoint written or read */
    uint64_t lag_reported_ms;  /* monotonic time of the last lag report */
    uint64_t running_since_ms; /* monotonic: when this node started running the queue */
} s3_qstatus;

/* The window being committed (after its intent is written). */
typedef struct s3_pending {
    int active;
    s3_intent intent;
    enum s3_close reason;
    s3_manifest_object *objects; /* after the upload */
    int nobjects;
    uint64_t records, bytes, partitions;
    int64_t min_ts, max_ts;
    s3_lost_range *lost;
    int nlost;
    int from_manifest;           /* committed as found in the bucket (a finished upload) */
    char manifest_key[S3_DOC_STR_MAX];
} s3_pending;

struct s3_qtask {
    s3_node *node;
    s3_sink *sink;
    char *queue;
    size_t qlen;
    char *k_lease, *k_intent, *k_committed;
    /* scheduling, under node->mu */
    uint64_t due_ms;
    int running;
    int finished;
    int give_back;              /* the keeper asks the task to drain and release (rebalancing) */
    s3_qstatus st;
    /* lease, under lease_mu */
    pthread_mutex_t lease_mu;
    int held;
    int lease_lost;
    int64_t lease_version;
    int64_t lease_since_ms;
    uint64_t refresh_due_ms;
    /* metrics (atomic) */
    mcounter m_windows, m_records, m_bytes, m_lost, m_fetches, m_precondition_lost;
    mhist m_window_records, m_window_bytes;
    /* ---- private to the worker running the task ---- */
    enum qstate state;
    int64_t qid;
    s3_committed committed;
    int64_t committed_version;  /* 0 = absent */
    int64_t intent_version;     /* 0 = absent */
    s3_intent stored_intent;    /* the intent found at restore */
    int have_stored_intent;
    int unsure;                 /* a fenced batch's outcome is unknown: re-read before the next */
    s3_window_state w;
    s3_buffer buf;
    strmap pos_index;           /* partition name → index into pos */
    s3_pos *pos;
    uint32_t npos, cappos;
    int pos_known;              /* 1: a partition without a position starts at 0; 0: unknown */
    s3_lost_range *lost;        /* found while reading, for the next window's manifest */
    int nlost, caplost;
    s3_pending pend;
    int64_t safe_time, now_us;
    int backoff_ms;
    uint64_t claim_at_ms;       /* pacing of a claim of a free queue; 0 = not waiting */
    uint64_t release_deadline_ms;
    uint64_t cooldown_until_ms; /* a queue this node gave back is left to the others until then */
    uint64_t last_ckpt_k;
};

struct s3_node {
    s3_node_opts o;             /* strings owned */
    s3_node_knobs k;
    s3_sink **sinks;
    int nsinks;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    s3_qtask **tasks;
    int ntasks, captasks;
    pthread_t workers[S3_MAX_WORKERS];
    int nworkers;
    /* the read gate (QUEEN_S3_FETCH_CONCURRENCY), under mu: slice reads running now, and the
     * most that ever ran at once */
    int reads_in_flight;
    int reads_peak;
    uint64_t reads_waited;      /* reads that found every slot taken */
    pthread_t keeper;
    int keeper_started;
    atomic_int stopping;
    volatile int hard_stop;     /* read by the S3 client between retries (s3_config.cancel) */
    int workers_done;
    int keeper_done;
    int started;
    _Atomic uint64_t buffered_total;
    /* the control plane's tenant sinks (opts.control_plane): the keeper reads the rows every
     * S3_CP_READ_MS, or at once when poked (a control-plane write on this node, a sink freed) */
    int control_plane;
    atomic_int cp_poke;
    uint64_t next_cp_ms;      /* keeper-private */
    char cp_error[512];       /* the last failed read of the rows, "" after one that worked; under mu */
};

/* One worker's connection (its S3 clients live in each sink's wclients[id]). */
typedef struct s3_worker {
    s3_node *node;
    int id;
    sinkdb db;
} s3_worker;

/* qtask.c */
s3_qtask *qtask_new(s3_sink *s, const char *queue);
void qtask_free(s3_qtask *t);
/* Runs one step of the task; returns the delay before its next step (ms). */
uint64_t qtask_step(s3_qtask *t, s3_worker *w);
/* The keeper's lease refresh (under lease_mu). */
void qtask_refresh_lease(s3_qtask *t, sinkdb *db);

/* sink.c, for qtask.c */
/* The node stops (SIGTERM), or the task's sink is being stopped at run time: drain. */
int task_stopping(const s3_qtask *t);
s3_client *worker_client(s3_worker *w, s3_sink *s);
void sink_status_update(s3_qtask *t); /* copies the task's private state into t->st */
void sink_set_error(s3_qtask *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t node_held_count(s3_node *n);
/* The share state of t's sink for a claim of t, computed now: *held (queues this node holds)
 * and *share = ceil(existing queues / live nodes), t counted as existing. */
void sink_share(const s3_qtask *t, int *held, int *share);
int node_memory_pressure(s3_node *n, const s3_qtask *t);
/* The read gate: at most QUEEN_S3_FETCH_CONCURRENCY slice reads of the node's queues run at
 * once. Returns 1 with a slot taken; 0 when none is free (wait = 0), or when the node is
 * stopping hard while waiting (wait = 1). A slot taken is given back with node_read_release. */
int node_read_acquire(s3_node *n, int wait);
void node_read_release(s3_node *n);
void sink_observe_request(void *arg, const char *op, long status);

#endif
