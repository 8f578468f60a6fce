/* answers_messages.h — the JSON of the message and dead-letter answers (api_messages.c,
 * api_dlq.c), written from the rows of their statements (messages_statements.h) and stored
 * functions (admin_results.h), read by column name.
 *
 * The writers are pure (rows in, JSON out: no libuv, no http_req); the route callbacks submit
 * the statements and send what these write. tests/unit/test_answers_log.c checks them against
 * the exact answers (docs/http-api.md). */
#ifndef QUEEN_ADMIN_ANSWERS_MESSAGES_H
#define QUEEN_ADMIN_ANSWERS_MESSAGES_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "admin/admin.h"
#include "admin/admin_results.h"
#include "core/buf.h"
#include "admin/messages_statements.h"
#include "storage/pushenc.h"
#include "storage/record.h"

/* ---- GET /api/v1/messages ---------------------------------------------------------------- */

typedef struct messages_page {
    int has_status;
    enum rec_status status;
    int64_t limit, offset;
} messages_page;

/* The list answer from queen.list_messages_v1's rows (LIST_MESSAGES_V1_COLUMNS): 0 written,
 * -1 a stored segment could not be decoded (b holds a partial answer). */
int answer_messages_list(buf *b, const PGresult *list, const messages_page *pg);

/* ---- one record: GET / DELETE /api/v1/messages/:partitionId/:transactionId --------------- */

/* What names the record (a transactionId, or a message id naming its offset) and where it was
 * found: the views of the segment it is in live until msg_lookup_free. */
typedef struct msg_lookup {
    const char *txn;
    size_t txn_len;
    int is_msg_id;
    uint64_t msg_pid, msg_off;
    buf scratch;
    seg_reader sr;
    int found_row; /* its row in message_find_v1's result */
} msg_lookup;

void msg_lookup_init(msg_lookup *l, const char *txn, size_t txn_len);
void msg_lookup_free(msg_lookup *l);

/* Looks for the record in message_find_v1's segments: 1 with *v and *ts set, 0 not there,
 * -1 a segment could not be decoded. */
int msg_lookup_segments(msg_lookup *l, const PGresult *find, record_view *v, int64_t *ts);

/* The first of the record's dead letters (ADMIN_MESSAGE_DEAD_COLUMNS, partition pid): its row, or -1. */
int msg_lookup_dead_row(const msg_lookup *l, int64_t pid, const PGresult *dead);

/* GET /api/v1/messages/:p/:t from its four results (ADMIN_MESSAGE_PARTITION_COLUMNS with one
 * row, MESSAGE_FIND_V1_COLUMNS, ADMIN_MESSAGE_CURSORS_COLUMNS, ADMIN_MESSAGE_DEAD_COLUMNS): 0 written, 1 the
 * record is not there (404), -1 a stored segment could not be decoded. */
int answer_message(buf *b, msg_lookup *l, const PGresult *part, const PGresult *find, const PGresult *cursors,
                   const PGresult *dead);

/* DELETE /api/v1/messages/:p/:t, 200 either way */
void answer_message_deleted(buf *b, const char *partition, const char *txn, int ok);

/* ---- dead letters ------------------------------------------------------------------------ */

/* GET /api/v1/dlq from ADMIN_DLQ_LIST_SQL's rows: 0 written, 1 the queue asked for does not
 * exist (nothing written: 404). */
int answer_dlq_list(buf *b, const PGresult *list, int64_t limit, int64_t offset);

/* POST /api/v1/dlq/:id/requeue, 201: the record pushed again (it: the push item answered) */
void answer_dlq_requeued(buf *b, int64_t id, const push_item *it);

/* DELETE /api/v1/dlq/:id, 200 */
void answer_dlq_deleted(buf *b, int64_t id);

#endif
