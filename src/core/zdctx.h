/* zdctx.h — one zstd decompression context per thread, reused.
 *
 * ZSTD_decompress() makes and frees a context on every call (about 100 KiB of workspace): for
 * the small frames of a push (a 2.x client's group of a partition is often a few KiB) that costs
 * more than the decompression itself (measured: 15 µs against 3 µs for a 2.5 KB frame). The
 * context is freed when its thread exits. */
#ifndef QUEEN_CORE_ZDCTX_H
#define QUEEN_CORE_ZDCTX_H

#include <zstd.h>

/* The calling thread's context, or NULL when it cannot be made (then use ZSTD_decompress). */
ZSTD_DCtx *zdctx_get(void);
/* ZSTD_decompressDCtx on the thread's context (ZSTD_decompress without one). */
size_t zdctx_decompress(void *dst, size_t cap, const void *src, size_t len);

#endif
