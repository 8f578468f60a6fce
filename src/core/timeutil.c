/* timeutil.c — clocks and timestamp formatting (UTC only, no locale, no tz database). */
#include "timeutil.h"

#include <stdio.h>
#include <time.h>

int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t mono_ms(void)
{
    return mono_us() / 1000;
}

/* Days since 1970-01-01 → civil date (Howard Hinnant's algorithm). */
static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)(yy + (*m <= 2));
}

static int64_t days_from_civil(int y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void split(int64_t us, int64_t *days, int *h, int *mi, int *s, int64_t *frac)
{
    int64_t secs = us / 1000000;
    int64_t f = us % 1000000;
    if (f < 0) {
        f += 1000000;
        secs -= 1;
    }
    int64_t dd = secs / 86400;
    int64_t rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        dd -= 1;
    }
    *days = dd;
    *h = (int)(rem / 3600);
    *mi = (int)(rem % 3600 / 60);
    *s = (int)(rem % 60);
    *frac = f;
}

size_t format_iso_us(int64_t us, char out[32])
{
    int64_t days, frac;
    int h, mi, s, y;
    unsigned mo, d;
    split(us, &days, &h, &mi, &s, &frac);
    civil_from_days(days, &y, &mo, &d);
    return (size_t)snprintf(out, 32, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", y, mo, d, h, mi, s, (int)frac);
}

size_t format_iso_ms(int64_t us, char out[32])
{
    int64_t days, frac;
    int h, mi, s, y;
    unsigned mo, d;
    split(us, &days, &h, &mi, &s, &frac);
    civil_from_days(days, &y, &mo, &d);
    return (size_t)snprintf(out, 32, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", y, mo, d, h, mi, s, (int)(frac / 1000));
}

static int digits(const char *s, size_t n, size_t *i, int count, int *out)
{
    int v = 0;
    for (int k = 0; k < count; k++) {
        if (*i >= n || s[*i] < '0' || s[*i] > '9')
            return -1;
        v = v * 10 + (s[*i] - '0');
        (*i)++;
    }
    *out = v;
    return 0;
}

int parse_iso_us(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int y, mo, d, h = 0, mi = 0, sec = 0;
    int64_t frac = 0;
    if (digits(s, n, &i, 4, &y) || i >= n || s[i++] != '-' || digits(s, n, &i, 2, &mo) || i >= n ||
        s[i++] != '-' || digits(s, n, &i, 2, &d))
        return -1;
    /* reject dates that do not exist (2023-02-29, 2024-04-31) instead of rolling them over */
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
        return -1;
    int64_t offset_s = 0;
    if (i < n && (s[i] == 'T' || s[i] == 't' || s[i] == ' ')) {
        i++;
        if (digits(s, n, &i, 2, &h) || i >= n || s[i++] != ':' || digits(s, n, &i, 2, &mi))
            return -1;
        if (i < n && s[i] == ':') {
            i++;
            if (digits(s, n, &i, 2, &sec))
                return -1;
            if (i < n && (s[i] == '.' || s[i] == ',')) {
                i++;
                int nd = 0;
                while (i < n && s[i] >= '0' && s[i] <= '9') {
                    if (nd < 6) {
                        frac = frac * 10 + (s[i] - '0');
                        nd++;
                    }
                    i++;
                }
                if (nd == 0)
                    return -1;
                while (nd++ < 6)
                    frac *= 10;
            }
        }
        if (h > 23 || mi > 59 || sec > 60)
            return -1;
        if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
            i++;
        } else if (i < n && (s[i] == '+' || s[i] == '-')) {
            int sign = s[i++] == '-' ? -1 : 1, oh, om = 0;
            if (digits(s, n, &i, 2, &oh))
                return -1;
            if (i < n && s[i] == ':') {
                i++;
                if (digits(s, n, &i, 2, &om)) /* "+02:" without minutes */
                    return -1;
            } else if (i < n && digits(s, n, &i, 2, &om)) {
                return -1;
            }
            if (oh > 23 || om > 59)
                return -1;
            offset_s = sign * (oh * 3600 + om * 60);
        }
    }
    if (i != n)
        return -1;
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - offset_s;
    *out = secs * 1000000 + frac;
    return 0;
}
