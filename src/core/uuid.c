/* uuid.c — UUID generation, formatting and parsing. */
#include "uuid.h"

#include <sys/random.h>

#include "timeutil.h"
#include "util.h"

static _Thread_local uint64_t rng_s[4];
static _Thread_local int rng_seeded;

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rand_u64(void)
{
    if (UNLIKELY(!rng_seeded)) {
        if (getrandom(rng_s, sizeof rng_s, 0) != (ssize_t)sizeof rng_s) {
            uint64_t t = mono_us() ^ (uint64_t)wall_us();
            for (int i = 0; i < 4; i++)
                rng_s[i] = t = t * 6364136223846793005ULL + 1442695040888963407ULL;
        }
        rng_seeded = 1;
    }
    /* xoshiro256** */
    uint64_t result = rotl(rng_s[1] * 5, 7) * 9;
    uint64_t t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0];
    rng_s[3] ^= rng_s[1];
    rng_s[1] ^= rng_s[2];
    rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t;
    rng_s[3] = rotl(rng_s[3], 45);
    return result;
}

static _Thread_local uint64_t v7_last_ms;
static _Thread_local uint32_t v7_seq;

void uuid_v7(uuid *out)
{
    uint64_t ms = (uint64_t)wall_us() / 1000;
    if (ms <= v7_last_ms) {
        ms = v7_last_ms;
        if (++v7_seq > 0xfff) { /* 4096 ids in one ms: borrow the next ms */
            ms = ++v7_last_ms;
            v7_seq = 0;
        }
    } else {
        v7_last_ms = ms;
        v7_seq = (uint32_t)(rand_u64() & 0x1ff); /* random start, room to count up */
    }
    uint64_t r = rand_u64();
    out->b[0] = (uint8_t)(ms >> 40);
    out->b[1] = (uint8_t)(ms >> 32);
    out->b[2] = (uint8_t)(ms >> 24);
    out->b[3] = (uint8_t)(ms >> 16);
    out->b[4] = (uint8_t)(ms >> 8);
    out->b[5] = (uint8_t)ms;
    out->b[6] = (uint8_t)(0x70 | ((v7_seq >> 8) & 0x0f));
    out->b[7] = (uint8_t)v7_seq;
    be_put64(out->b + 8, r);
    out->b[8] = (uint8_t)(0x80 | (out->b[8] & 0x3f));
}

void uuid_format(const uuid *u, char out[UUID_STR_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[j++] = '-';
        out[j++] = hex[u->b[i] >> 4];
        out[j++] = hex[u->b[i] & 15];
    }
    out[j] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int uuid_parse(const char *s, size_t n, uuid *out)
{
    if (n != UUID_STR_LEN)
        return -1;
    size_t j = 0;
    for (int i = 0; i < 16; i++) {
        if (j == 8 || j == 13 || j == 18 || j == 23) {
            if (s[j] != '-')
                return -1;
            j++;
        }
        int hi = hexval(s[j]), lo = hexval(s[j + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out->b[i] = (uint8_t)(hi << 4 | lo);
        j += 2;
    }
    return 0;
}

void uuid_message_id(uint64_t partition_id, uint64_t offset, uuid *out)
{
    uint64_t hi = (partition_id & 0xffffffffffffULL) << 16 | 0x8000 | ((offset >> 62) & 0xfff);
    uint64_t lo = (offset & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
    be_put64(out->b, hi);
    be_put64(out->b + 8, lo);
}

int uuid_message_id_decode(const uuid *u, uint64_t *partition_id, uint64_t *offset)
{
    uint64_t hi = be_get64(u->b), lo = be_get64(u->b + 8);
    if ((hi & 0xf000) != 0x8000 || (lo >> 62) != 2)
        return -1;
    *partition_id = hi >> 16;
    *offset = ((hi & 0xfff) << 62) | (lo & 0x3fffffffffffffffULL);
    return 0;
}
