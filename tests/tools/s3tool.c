/* s3tool — drives the S3 client (src/s3) from the command line, so the integration tests can
 * run it against a real S3 server (s3rver) and the fault proxy in front of it.
 *
 *   s3tool [options] put <key> <file|->        PUT (multipart above --threshold)
 *   s3tool [options] multipart <key> <file|->  the same with --threshold 0 meaning "always"
 *   s3tool [options] get <key> <out|->          GET into a file (or stdout)
 *   s3tool [options] head                       the bucket probe
 *
 * Options: --endpoint URL --region R --bucket B --access-key K --vhost (default path style)
 *   --sse V --threshold N --part-size N --inflight N --attempts N --backoff-ms N
 *   --backoff-max-ms N --timeout-ms N --md5 --self-sign --content-type T
 *   --cancel-after-ms N (sets the client's cancel flag from a timer thread).
 * The secret comes from the S3_SECRET environment variable, never from argv.
 *
 * Prints one JSON line: {"rc":..,"status":..,"attempts":..,"error":"..","bytes":..,
 * "requests":[["put",500],...],"parts":[1,2,..]}. Exit status 0 success, 3 not found (get),
 * 1 failed, 2 usage. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "json/json.h"
#include "s3/s3.h"

static buf g_requests;
static buf g_parts;
static volatile int g_cancel;

static void on_request(void *arg, const char *op, long status)
{
    (void)arg;
    buf_printf(&g_requests, "%s[\"%s\",%ld]", g_requests.len ? "," : "", op, status);
}

static void on_part(void *arg, int pn)
{
    (void)arg;
    buf_printf(&g_parts, "%s%d", g_parts.len ? "," : "", pn);
}

static void *cancel_main(void *p)
{
    usleep((useconds_t)(*(long *)p) * 1000);
    g_cancel = 1;
    return NULL;
}

static int read_all(const char *path, buf *out)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return -1;
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        buf_append(out, tmp, n);
    if (f != stdin)
        fclose(f);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: s3tool [options] put|multipart <key> <file|-> | get <key> <out|-> | head\n");
    return 2;
}

int main(int argc, char **argv)
{
    log_setup(getenv("S3TOOL_TRACE") ? LOG_TRACE : LOG_WARN, LOG_FORMAT_TEXT);
    s3_config c;
    memset(&c, 0, sizeof c);
    c.region = "us-east-1";
    c.bucket = "lake";
    c.path_style = 1;
    c.secret_key = getenv("S3_SECRET");
    c.on_part_uploaded = on_part;
    c.cancel = &g_cancel;
    const char *content_type = NULL;
    long cancel_after = -1;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(o, name) == 0 && v && (i++, 1))
        if (ARG("--endpoint"))
            c.endpoint = v;
        else if (ARG("--region"))
            c.region = v;
        else if (ARG("--bucket"))
            c.bucket = v;
        else if (ARG("--access-key"))
            c.access_key = v;
        else if (strcmp(o, "--vhost") == 0)
            c.path_style = 0;
        else if (ARG("--sse"))
            c.sse = v;
        else if (ARG("--threshold"))
            c.multipart_threshold = (size_t)strtoull(v, NULL, 10);
        else if (ARG("--part-size"))
            c.part_size = (size_t)strtoull(v, NULL, 10);
        else if (ARG("--inflight"))
            c.max_inflight_parts = atoi(v);
        else if (ARG("--attempts"))
            c.max_attempts = atoi(v);
        else if (ARG("--backoff-ms"))
            c.backoff_base_ms = atoll(v);
        else if (ARG("--backoff-max-ms"))
            c.backoff_max_ms = atoll(v);
        else if (ARG("--timeout-ms"))
            c.timeout_ms = atoll(v);
        else if (strcmp(o, "--md5") == 0)
            c.content_md5 = 1;
        else if (strcmp(o, "--self-sign") == 0)
            c.sigv4_self = 1;
        else if (ARG("--content-type"))
            content_type = v;
        else if (ARG("--cancel-after-ms"))
            cancel_after = atol(v);
        else
            return usage();
#undef ARG
    }
    if (i >= argc)
        return usage();
    const char *cmd = argv[i++];
    qerr_detail err;
    if (s3_config_check(&c, &err) != QERR_OK) {
        fprintf(stderr, "s3tool: %s\n", err.text);
        return 2;
    }
    buf_init(&g_requests, 0);
    buf_init(&g_parts, 0);
    buf data;
    buf_init(&data, 0);
    int multipart = strcmp(cmd, "multipart") == 0;
    if (multipart && c.multipart_threshold == 0)
        c.multipart_threshold = 1; /* anything above one byte */
    s3_client *cl = s3_client_new(&c, on_request, NULL);
    if (!cl)
        return 2;
    pthread_t th;
    if (cancel_after >= 0)
        pthread_create(&th, NULL, cancel_main, &cancel_after);
    s3_result r;
    s3_result_init(&r);
    int rc;
    size_t bytes = 0;
    if ((strcmp(cmd, "put") == 0 || multipart) && i + 2 == argc) {
        if (read_all(argv[i + 1], &data) < 0) {
            fprintf(stderr, "s3tool: cannot read %s\n", argv[i + 1]);
            return 2;
        }
        bytes = data.len;
        rc = s3_put(cl, argv[i], data.data ? data.data : "", data.len, content_type, &r);
    } else if (strcmp(cmd, "get") == 0 && i + 2 == argc) {
        rc = s3_get(cl, argv[i], &r);
        if (rc == 0) {
            bytes = r.body.len;
            FILE *f = strcmp(argv[i + 1], "-") == 0 ? stdout : fopen(argv[i + 1], "wb");
            if (!f || fwrite(r.body.data ? r.body.data : "", 1, r.body.len, f) != r.body.len) {
                fprintf(stderr, "s3tool: cannot write %s\n", argv[i + 1]);
                return 1;
            }
            if (f != stdout)
                fclose(f);
        }
    } else if (strcmp(cmd, "head") == 0 && i == argc) {
        rc = s3_head_bucket(cl, &r);
    } else
        return usage();
    if (cancel_after >= 0)
        pthread_join(th, NULL);
    buf line;
    buf_init(&line, 0);
    buf_printf(&line, "{\"rc\":%d,\"status\":%ld,\"attempts\":%d,\"error\":", rc, r.status, r.attempts);
    jw_cstr(&line, r.error);
    buf_printf(&line, ",\"bytes\":%zu,\"requests\":[%s],\"parts\":[%s]}\n", bytes, buf_cstr(&g_requests),
               buf_cstr(&g_parts));
    /* with get to stdout the body is there: the summary goes to stderr then */
    FILE *sum = (strcmp(cmd, "get") == 0 && strcmp(argv[argc - 1], "-") == 0) ? stderr : stdout;
    fputs(buf_cstr(&line), sum);
    buf_free(&line);
    s3_result_free(&r);
    s3_client_free(cl);
    buf_free(&data);
    buf_free(&g_requests);
    buf_free(&g_parts);
    return rc == 0 ? 0 : rc == 1 ? 3 : 1;
}
