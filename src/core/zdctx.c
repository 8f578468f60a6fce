/* zdctx.c — the per-thread zstd decompression context (zdctx.h). */
#include "zdctx.h"

#include <pthread.h>

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int key_ok;

static void free_ctx(void *p)
{
    ZSTD_freeDCtx(p);
}

static void make_key(void)
{
    key_ok = pthread_key_create(&key, free_ctx) == 0;
}

ZSTD_DCtx *zdctx_get(void)
{
    pthread_once(&once, make_key);
    if (!key_ok)
        return NULL;
    ZSTD_DCtx *d = pthread_getspecific(key);
    if (!d) {
        d = ZSTD_createDCtx();
        if (d && pthread_setspecific(key, d) != 0) {
            ZSTD_freeDCtx(d);
            d = NULL;
        }
    }
    return d;
}

size_t zdctx_decompress(void *dst, size_t cap, const void *src, size_t len)
{
    ZSTD_DCtx *d = zdctx_get();
    return d ? ZSTD_decompressDCtx(d, dst, cap, src, len) : ZSTD_decompress(dst, cap, src, len);
}
