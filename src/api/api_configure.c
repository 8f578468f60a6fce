/* api_configure.c — POST /api/v1/configure: create or reconfigure a queue (full overwrite of
 * its options, namespace and task), and make sure its Default partition exists.
 *
 * The statement (ADMIN_CONFIGURE_SQL in admin/admin.c, its columns in admin_statements.h; the
 * answer's JSON in admin/answers_resources.c) takes the queue's clock lock after writing its
 * options (lock order: queue row, then clock; docs/lock-order.md). A push reads
 * encryptionEnabled under that lock (push_v1 step 2a), so every push that commits after this
 * configure has seen its options: none of them stores plaintext in a queue this configure
 * encrypted (docs/encryption.md). */
#include <stdio.h>
#include <string.h>

#include "admin/admin_answers.h"
#include "admin/admin_statements.h"
#include "app.h"
#include "core/timeutil.h"
#include "core/util.h"
#include "crypto/seal.h"
#include "queue/options.h"
#include "storage/logread.h"

typedef struct cfg_ctx {
    db_req dbr;
    http_req *http;
    size_t queue_len;
    const char *queue, *ns, *task;
    queue_options opts;
    char tenant[37];
    buf optjson;
    const char *values[5];
} cfg_ctx;

static void on_configured(db_req *d)
{
    cfg_ctx *c = d->arg;
    http_req *r = c->http;
    if (d->err != DB_OK || !d->res[0] || PQntuples(d->res[0]) != 1) {
        api_respond_db_error(r, d);
        db_req_clear(d);
        buf_free(&c->optjson);
        return;
    }
    /* this node seals at once (or stops at once); other nodes learn it from push_v1 */
    app *a = r->app;
    sealq_set(pusher_sealq(a->push), r->tenant, c->queue, c->queue_len, c->opts.encryption_enabled != 0, mono_ms());
    buf b;
    buf_init(&b, 0);
    answer_configured(&b, d->res[0], c->queue, c->ns, c->task, c->optjson.data, c->optjson.len);
    db_req_clear(d);
    buf_free(&c->optjson);
    http_respond_json(r, 200, &b);
    buf_free(&b);
}

void api_configure(http_req *r)
{
    app *a = r->app;
    json_doc d;
    if (api_parse_body_or_respond(r, &d, 0) < 0)
        return;
    cfg_ctx *c = arena_alloc(&r->ar, sizeof *c);
    memset(c, 0, sizeof *c);
    c->http = r;
    size_t len;
    char err[QERR_TEXT_MAX] = "";
    int rc = api_str_field(r, &d, 0, "queue", &c->queue, &len);
    c->queue_len = rc > 0 ? len : 0;
    if (rc <= 0)
        api_str_field_msg(rc, "queue", "queue is required", err, sizeof err);
    else if (len == 0 || len > 255)
        snprintf(err, sizeof err, "queue name must be 1 to 255 bytes without NUL characters");
    else if ((rc = api_str_field(r, &d, 0, "namespace", &c->ns, &len)) < 0)
        api_str_field_msg(rc, "namespace", "namespace must be a string", err, sizeof err);
    else if (c->ns && len > 255)
        snprintf(err, sizeof err, "namespace must be at most 255 bytes");
    else if ((rc = api_str_field(r, &d, 0, "task", &c->task, &len)) < 0)
        api_str_field_msg(rc, "task", "task must be a string", err, sizeof err);
    else if (c->task && len > 255)
        snprintf(err, sizeof err, "task must be at most 255 bytes");
    else {
        qerr_detail oe;
        if (queue_options_parse(&d, json_get(&d, 0, "options"), &c->opts, &oe) != QERR_OK)
            snprintf(err, sizeof err, "%s", oe.text);
    }
    json_doc_free(&d);
    if (!err[0] && c->opts.encryption_enabled && !seal_node_key())
        snprintf(err, sizeof err,
                 "encryptionEnabled needs QUEEN_ENCRYPTION_KEY, and this node has none: it could not seal the "
                 "queue's payloads (give every node the same key, or configure the queue without encryption)");
    if (err[0]) {
        http_respond_error(r, 400, "%s", err);
        return;
    }
    if (!c->ns)
        c->ns = "";
    if (!c->task)
        c->task = "";
    buf_init(&c->optjson, 0);
    queue_options_json(&c->opts, &c->optjson);
    format_uuid_text(r->tenant, c->tenant);
    c->values[0] = c->tenant;
    c->values[1] = c->queue;
    c->values[2] = c->ns;
    c->values[3] = c->task;
    c->values[4] = buf_cstr(&c->optjson);
    c->dbr.nstmt = 1;
    c->dbr.stmt[0] = (db_stmt){ADMIN_CONFIGURE_SQL, 5, c->values, NULL, NULL, 0};
    c->dbr.done = on_configured;
    c->dbr.arg = c;
    http_async(r);
    if (db_submit(a->db, &c->dbr) < 0) {
        buf_free(&c->optjson);
        api_respond_db_error(r, &c->dbr);
    }
}
