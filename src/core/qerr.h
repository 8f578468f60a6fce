/* qerr.h — the one error convention of queen's C modules (docs/architecture.md, "Errors").
 *
 * curl's model: a function that can fail returns one enum (qerr, QERR_OK = 0) and, when the
 * caller passes one, fills a detail (qerr_detail): the sentence for whoever reads it and,
 * when the failure has a stable name finer than the enum's (too_many_entries), that name.
 * The enum says what kind of failure it is and so how it is answered (qerr_http_status); the
 * detail says what exactly. The 2.x families (KV, locks, timers) answer a refusal envelope
 * that also names a finer reason (not_base64) and the op at fault: the detail carries both.
 * Pure. */
#ifndef QUEEN_CORE_QERR_H
#define QUEEN_CORE_QERR_H

#include <stdarg.h>
#include <stddef.h>

typedef enum qerr {
    QERR_OK = 0,
    QERR_BAD_INPUT,   /* the caller's input is refused (400); the detail is for the client */
    QERR_NOT_FOUND,   /* what was named does not exist (404) */
    QERR_CONFLICT,    /* the state forbids it (409) */
    QERR_TOO_LARGE,   /* a size bound (413) */
    QERR_LIMIT,       /* a rate or capacity bound: retry later (429) */
    QERR_UNAVAILABLE, /* a dependency is not there: database, key, S3 (503) */
    QERR_DATABASE,    /* the database refused (500); the detail is for the log only */
    QERR_CORRUPT,     /* stored bytes do not decode (500); the detail is for the log only */
    QERR_INTERNAL,    /* anything else (500); the detail is for the log only */
    QERR_COUNT
} qerr;

/* a boot line quotes the value it refuses: room for it */
#define QERR_TEXT_MAX 1024

typedef struct qerr_detail {
    const char *code;         /* a stable name (static storage) finer than the enum's, or NULL */
    const char *reason;       /* a stable id finer still (static storage; the 2.x envelope's
                               * "reason"), or NULL */
    int index;                /* the item of a list at fault, from 0; -1 when none */
    char text[QERR_TEXT_MAX]; /* the sentence; "" when none was set */
} qerr_detail;

/* Fills d (when non-NULL; reason NULL, index -1) and returns e, so a failing path is
 * `return qerr_set(d, ...)`. */
qerr qerr_set(qerr_detail *d, qerr e, const char *code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same with a reason. */
qerr qerr_set_reason(qerr_detail *d, qerr e, const char *code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The same from a va_list, for a module's own printf-like refusal helper. */
qerr qerr_setv(qerr_detail *d, qerr e, const char *code, const char *reason, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));
/* Marks a detail whose sentence a module wrote into d->text itself (d non-NULL): kind e,
 * code, no reason, no index; returns e. */
qerr qerr_mark(qerr_detail *d, qerr e, const char *code);
/* Names the item at fault in a detail already set (d may be NULL); returns e. */
qerr qerr_at(qerr_detail *d, qerr e, int index);
/* The enum's name ("bad_input") and a generic sentence, like curl_easy_strerror. */
const char *qerr_name(qerr e);
const char *qerr_str(qerr e);
/* How an HTTP answer carries it. */
int qerr_http_status(qerr e);
/* Whether the detail may be shown to the client (4xx); 5xx details go to the log only. */
int qerr_client_visible(qerr e);

#endif
