-- sink_hold_ts_v1: the retention hold (retention_v1): the stamp up to which sink p_sink has
-- committed the queue, from its commit pointer s3:<sink>:<queue>:committed in namespace
-- queen-s3 of the queue's tenant (tEndUs, or the ISO tEnd an older writer left). NULL when
-- nothing was committed yet, or the pointer is the starting point written at the first claim
-- (k 0).
CREATE OR REPLACE FUNCTION queen.sink_hold_ts_v1(p_tenant uuid, p_queue text, p_sink text) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v jsonb;
BEGIN
    IF p_sink IS NULL OR p_sink = '' THEN
        RETURN NULL;
    END IF;
    SELECT k.value::jsonb INTO v FROM queen.kv k
     WHERE k.tenant_id = p_tenant AND k.namespace = 'queen-s3'
       AND k.key = 's3:' || p_sink || ':' || queen.s3_escape(p_queue) || ':committed'
       AND (k.expires_at IS NULL OR k.expires_at > queen.now_us());
    IF v IS NULL OR coalesce((v->>'k')::bigint, 0) < 1 THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v->'tEndUs') = 'number' THEN
        RETURN (v->>'tEndUs')::bigint;
    END IF;
    IF jsonb_typeof(v->'tEnd') = 'number' THEN
        RETURN (v->>'tEnd')::bigint;
    END IF;
    RETURN (extract(epoch FROM (v->>'tEnd')::timestamptz) * 1000000)::bigint;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
