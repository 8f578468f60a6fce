/* qerr.c — the error convention (qerr.h). */
#include "qerr.h"

#include <stdarg.h>
#include <stdio.h>

static const struct {
    const char *name, *str;
    int status;
} INFO[QERR_COUNT] = {
    [QERR_OK] = {"ok", "no error", 200},
    [QERR_BAD_INPUT] = {"bad_input", "the request is not valid", 400},
    [QERR_NOT_FOUND] = {"not_found", "not found", 404},
    [QERR_CONFLICT] = {"conflict", "the current state does not allow it", 409},
    [QERR_TOO_LARGE] = {"too_large", "too large", 413},
    [QERR_LIMIT] = {"limit", "a limit was reached; retry later", 429},
    [QERR_UNAVAILABLE] = {"unavailable", "a service this needs is unavailable", 503},
    [QERR_DATABASE] = {"database_error", "the database refused the request", 500},
    [QERR_CORRUPT] = {"corrupt", "stored data could not be decoded", 500},
    [QERR_INTERNAL] = {"internal_error", "internal error", 500},
};

qerr qerr_setv(qerr_detail *d, qerr e, const char *code, const char *reason, const char *fmt, va_list ap)
{
    if (!d)
        return e;
    d->code = code;
    d->reason = reason;
    d->index = -1;
    if (fmt)
        vsnprintf(d->text, sizeof d->text, fmt, ap);
    else
        snprintf(d->text, sizeof d->text, "%s", qerr_str(e));
    return e;
}

qerr qerr_set(qerr_detail *d, qerr e, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qerr_setv(d, e, code, NULL, fmt, ap);
    va_end(ap);
    return e;
}

qerr qerr_set_reason(qerr_detail *d, qerr e, const char *code, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qerr_setv(d, e, code, reason, fmt, ap);
    va_end(ap);
    return e;
}

qerr qerr_mark(qerr_detail *d, qerr e, const char *code)
{
    if (d) {
        d->code = code;
        d->reason = NULL;
        d->index = -1;
    }
    return e;
}

qerr qerr_at(qerr_detail *d, qerr e, int index)
{
    if (d)
        d->index = index;
    return e;
}

const char *qerr_name(qerr e)
{
    return (unsigned)e < QERR_COUNT ? INFO[e].name : "internal_error";
}

const char *qerr_str(qerr e)
{
    return (unsigned)e < QERR_COUNT ? INFO[e].str : "internal error";
}

int qerr_http_status(qerr e)
{
    return (unsigned)e < QERR_COUNT ? INFO[e].status : 500;
}

int qerr_client_visible(qerr e)
{
    int s = qerr_http_status(e);
    return s >= 400 && s < 500;
}
