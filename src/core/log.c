/* log.c — line logger. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "timeutil.h"

static enum log_level g_level = LOG_INFO;
static enum log_format g_format = LOG_FORMAT_TEXT;

static const char *const level_names[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"};
static const char *const level_names_lc[] = {"trace", "debug", "info", "warn", "error", "off"};

void log_setup(enum log_level level, enum log_format format)
{
    g_level = level;
    g_format = format;
}

int log_enabled(enum log_level level)
{
    return level >= g_level && level < LOG_OFF;
}

/* Appends s to out (bounded), escaping it as a JSON string body. */
static size_t json_escape_into(char *out, size_t pos, size_t cap, const char *s)
{
    for (; *s && pos + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[pos++] = '\\';
            out[pos++] = (char)c;
        } else if (c < 0x20) {
            pos += (size_t)snprintf(out + pos, cap - pos, "\\u%04x", c);
        } else {
            out[pos++] = (char)c;
        }
    }
    return pos;
}

void log_msg(enum log_level level, const char *target, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    char msg[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char ts[32];
    format_iso_us(wall_us(), ts);
    char line[4096];
    size_t n;
    if (g_format == LOG_FORMAT_JSON) {
        n = (size_t)snprintf(line, sizeof line, "{\"ts\":\"%s\",\"level\":\"%s\",\"target\":\"", ts, level_names_lc[level]);
        n = json_escape_into(line, n, sizeof line, target);
        n += (size_t)snprintf(line + n, sizeof line - n, "\",\"msg\":\"");
        n = json_escape_into(line, n, sizeof line, msg);
        n += (size_t)snprintf(line + n, sizeof line - n, "\"}\n");
    } else {
        n = (size_t)snprintf(line, sizeof line, "%s %s %s: %s\n", ts, level_names[level], target, msg);
    }
    if (n >= sizeof line) {
        n = sizeof line;
        line[n - 1] = '\n';
    }
    ssize_t w = write(2, line, n);
    (void)w;
}
