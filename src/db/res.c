/* res.c — see res.h. */
#include "res.h"

#include <string.h>

#include "core/util.h"
#include "core/uuid.h"
#include "db/pg.h"
#include "json/json.h"

int res_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col);
}

int64_t res_i64(const PGresult *r, int row, int col)
{
    return db_get_i64(r, row, col);
}

double res_f64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8)
        return 0;
    uint64_t u = be_get64((const uint8_t *)PQgetvalue(r, row, col));
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

int res_bool(const PGresult *r, int row, int col)
{
    return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] != 0;
}

const char *res_text(const PGresult *r, int row, int col, size_t *len)
{
    if (PQgetisnull(r, row, col)) {
        if (len)
            *len = 0;
        return "";
    }
    if (len)
        *len = (size_t)PQgetlength(r, row, col);
    return PQgetvalue(r, row, col);
}

void res_uuid(const PGresult *r, int row, int col, char out[37])
{
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 16) {
        out[0] = '\0';
        return;
    }
    uuid u;
    memcpy(u.b, PQgetvalue(r, row, col), 16);
    uuid_format(&u, out);
}

void res_json_str(buf *b, const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) {
        buf_puts(b, "null");
        return;
    }
    jw_string(b, PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
}
