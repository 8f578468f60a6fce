/* res.h — reading one column of a binary PGresult by its index (an enum from the column
 * lists of db/results.h and db/statements.h). NULL reads as 0 / "" / false. Pure over libpq's
 * result accessors: no connection, so answer writers built on these are unit-tested over
 * results made with PQmakeEmptyPGresult. */
#ifndef QUEEN_DB_RES_H
#define QUEEN_DB_RES_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

int64_t res_i64(const PGresult *r, int row, int col);
double res_f64(const PGresult *r, int row, int col);
int res_bool(const PGresult *r, int row, int col);
int res_null(const PGresult *r, int row, int col);
const char *res_text(const PGresult *r, int row, int col, size_t *len);
/* Writes a uuid column as text (37 bytes); "" when NULL. */
void res_uuid(const PGresult *r, int row, int col, char out[37]);
/* Appends a text column as a JSON string, or null. */
void res_json_str(buf *b, const PGresult *r, int row, int col);

#endif
