/* log.h — the broker's logger: one line per event on stderr, text or JSON, with a target
 * (the subsystem: boot, http, db, push, queen-s3, ...). Safe to call from any thread: each
 * line is built in a local buffer and written with one write(2). */
#ifndef QUEEN_CORE_LOG_H
#define QUEEN_CORE_LOG_H

enum log_level { LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

void log_setup(enum log_level level, enum log_format format);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *target, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_trace(t, ...) do { if (log_enabled(LOG_TRACE)) log_msg(LOG_TRACE, t, __VA_ARGS__); } while (0)
#define log_debug(t, ...) do { if (log_enabled(LOG_DEBUG)) log_msg(LOG_DEBUG, t, __VA_ARGS__); } while (0)
#define log_info(t, ...) log_msg(LOG_INFO, t, __VA_ARGS__)
#define log_warn(t, ...) log_msg(LOG_WARN, t, __VA_ARGS__)
#define log_error(t, ...) log_msg(LOG_ERROR, t, __VA_ARGS__)

#endif
