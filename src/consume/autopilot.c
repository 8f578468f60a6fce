/* autopilot.c — pop sizing for the 2.x knobs (see autopilot.h). */
#include "autopilot.h"

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void pop_size(pop_sizing *s, int64_t default_batch, int64_t max_batch, int64_t max_partitions)
{
    if (!s->batch_set)
        s->batch = s->autopilot ? AUTOPILOT_BATCH : default_batch;
    s->batch = clamp(s->batch, 1, max_batch);
    if (!s->partitions_set)
        s->partitions = s->autopilot ? (s->batch < AUTOPILOT_MAX_PARTITIONS ? s->batch : AUTOPILOT_MAX_PARTITIONS) : 1;
    s->partitions = clamp(s->partitions, 1, max_partitions);
}

int64_t pop_wait_advice_ms(int delivered, int64_t retry_at_us, int64_t now_us)
{
    if (delivered)
        return 0;
    if (retry_at_us <= 0)
        return AUTOPILOT_IDLE_WAIT_MS;
    return clamp((retry_at_us - now_us + 999) / 1000, AUTOPILOT_MIN_WAIT_MS, AUTOPILOT_MAX_WAIT_MS);
}
