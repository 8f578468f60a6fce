/* fuzz_reads — json_parse then fetch_parse_request and changed_parse_request on arbitrary
 * input, as POST /api/v1/fetch and POST /api/v1/partitions/changed do. Checks: a refusal has a
 * known code and a message; an accepted request is within every bound (entry count, names
 * non-empty valid UTF-8 without NUL, offsets, budgets, page sizes, cursors), and its statement
 * parameters carry one array element per entry. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "storage/logread.h"
#include "storage/readreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "fuzz_reads: check failed at line %d: %s\n", __LINE__, #c);                       \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static void check_refusal(const char *code, const char *err)
{
    CHECK(code != NULL);
    CHECK(strcmp(code, "invalid_request") == 0 || strcmp(code, "too_many_entries") == 0 ||
          strcmp(code, "invalid_time") == 0 || strcmp(code, "invalid_cursor") == 0);
    CHECK(err[0] != '\0');
}

static void check_name(const char *s)
{
    CHECK(s != NULL);
    size_t n = strlen(s);
    CHECK(n > 0);
    CHECK(utf8_valid((const uint8_t *)s, n) == 0);
}

static void fuzz_fetch(const json_doc *d)
{
    arena ar;
    arena_init(&ar);
    fetch_args a;
    memset(&a, 0, sizeof a);
    qerr_detail e;
    memset(&e, 0, sizeof e);
    qerr rc = fetch_parse_request(d, &ar, &a, &e);
    CHECK(rc == QERR_OK || rc == QERR_BAD_INPUT);
    if (rc != QERR_OK) {
        check_refusal(e.code, e.text);
    } else {
        CHECK(a.n <= FETCH_MAX_ENTRIES);
        CHECK(a.max_bytes >= 1 && a.max_bytes <= FETCH_CALL_MAX_BYTES);
        CHECK(a.max_records >= 1 && a.max_records <= FETCH_CALL_MAX_RECORDS);
        for (uint32_t i = 0; i < a.n; i++) {
            check_name(a.entries[i].queue);
            check_name(a.entries[i].partition);
            CHECK(a.entries[i].offset >= 0);
            CHECK(a.entries[i].max_bytes >= 1 && a.entries[i].max_bytes <= FETCH_ENTRY_MAX_BYTES);
        }
        sql_params sp;
        fetch_params(&a, &sp);
        CHECK(sp.n == 7);
        for (int k = 0; k < 4; k++)
            CHECK(sp.arr[k].count == a.n);
        sql_params_free(&sp);
    }
    arena_free(&ar);
}

static void fuzz_changed(const json_doc *d)
{
    arena ar;
    arena_init(&ar);
    changed_args a;
    memset(&a, 0, sizeof a);
    qerr_detail e;
    memset(&e, 0, sizeof e);
    qerr rc = changed_parse_request(d, &ar, &a, &e);
    CHECK(rc == QERR_OK || rc == QERR_BAD_INPUT);
    if (rc != QERR_OK) {
        check_refusal(e.code, e.text);
    } else {
        CHECK(a.n <= CHANGED_MAX_ENTRIES);
        for (uint32_t i = 0; i < a.n; i++) {
            check_name(a.entries[i].queue);
            CHECK(a.entries[i].limit >= 1 && a.entries[i].limit <= CHANGED_MAX_LIMIT);
            CHECK(a.entries[i].after >= 0);
            CHECK(a.entries[i].has_since == 0 || a.entries[i].has_since == 1);
        }
        sql_params sp;
        changed_params(&a, &sp);
        CHECK(sp.n == 5);
        for (int k = 0; k < 4; k++)
            CHECK(sp.arr[k].count == a.n);
        sql_params_free(&sp);
    }
    arena_free(&ar);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_doc d;
    memset(&d, 0, sizeof d);
    json_opts jo = {0};
    if (json_parse(&d, (const char *)data, size, &jo) == 0) {
        fuzz_fetch(&d);
        fuzz_changed(&d);
    }
    json_doc_free(&d);
    return 0;
}
