/* base64.c — see base64.h. */
#include "base64.h"

static const char B64_TAB[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void b64_encode(buf *out, const void *data, size_t n)
{
    const uint8_t *p = data;
    if (buf_reserve(out, (n + 2) / 3 * 4) < 0)
        return;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        char q[4] = {B64_TAB[v >> 18], B64_TAB[(v >> 12) & 63], B64_TAB[(v >> 6) & 63], B64_TAB[v & 63]};
        buf_append(out, q, 4);
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        char q[4] = {B64_TAB[v >> 18], B64_TAB[(v >> 12) & 63], i + 1 < n ? B64_TAB[(v >> 6) & 63] : '=', '='};
        buf_append(out, q, 4);
    }
}

static int b64val(unsigned char c, unsigned flags)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    int std = !(flags & B64_URL_ONLY), url = (flags & (B64_URL_TOO | B64_URL_ONLY)) != 0;
    if ((c == '+' && std) || (c == '-' && url))
        return 62;
    if ((c == '/' && std) || (c == '_' && url))
        return 63;
    return -1;
}

long b64_decode(const char *s, size_t n, uint8_t *out, size_t cap, unsigned flags)
{
    size_t pad = 0;
    while (n > 0 && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (pad && ((n + pad) % 4 != 0 || (flags & B64_NO_PADDING)))
        return B64_BAD_CHAR;
    if (n % 4 == 1)
        return B64_BAD_FORM;
    if ((flags & B64_NEED_PADDING) && (n + pad) % 4 != 0)
        return B64_BAD_FORM;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64val((unsigned char)s[i], flags);
        if (v < 0)
            return B64_BAD_CHAR;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o < cap)
                out[o] = (uint8_t)(acc >> bits);
            o++;
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0)
        return B64_BAD_FORM; /* bits past the last byte must be zero, or two texts would name one byte string */
    return (long)o;
}

int b64_decode_buf(const char *s, size_t n, buf *out, unsigned flags)
{
    size_t cap = n / 4 * 3 + 2;
    if (buf_reserve(out, cap) < 0)
        return -3;
    long got = b64_decode(s, n, (uint8_t *)out->data + out->len, cap, flags);
    if (got < 0)
        return (int)got;
    out->len += (size_t)got;
    if (out->len < out->cap)
        out->data[out->len] = '\0';
    return 0;
}
