// Gate helpers. tokenBucketGate: a token bucket per state key (the source partition unless
// keyBy), refilled on the cycle's streamTimeMs. A denied message's refill and spend are discarded
// with the rest of its mutation, so the bucket only ever moves on allowed messages.
export function tokenBucketGate({ capacity, refillPerSec, costFn = () => 1, allowZeroCost = true } = {}) {
  if (!(capacity > 0)) throw new TypeError('tokenBucketGate: capacity must be > 0');
  if (!(refillPerSec >= 0)) throw new TypeError('tokenBucketGate: refillPerSec must be >= 0');
  return (value, ctx) => {
    const s = ctx.state;
    const now = ctx.streamTimeMs;
    if (typeof s.tokens !== 'number') { s.tokens = capacity; s.lastRefillAt = now; s.allowedTotal = 0; s.consumedTotal = 0; }
    const elapsed = Math.max(0, now - (s.lastRefillAt ?? now)) / 1000;
    s.tokens = Math.min(capacity, s.tokens + elapsed * refillPerSec);
    s.lastRefillAt = now;
    const cost = Number(costFn(value)) || 0;
    if (cost <= 0) return allowZeroCost;
    if (s.tokens < cost) return false;
    s.tokens -= cost;
    s.allowedTotal += 1;
    s.consumedTotal += cost;
    return true;
  };
}

// slidingWindowGate: at most `limit` cost per `windowSec`, the two-bucket estimate.
export function slidingWindowGate({ limit, windowSec, costFn = () => 1 } = {}) {
  if (!(limit > 0) || !(windowSec > 0)) throw new TypeError('slidingWindowGate: limit and windowSec must be > 0');
  const size = windowSec * 1000;
  return (value, ctx) => {
    const s = ctx.state;
    const win = Math.floor(ctx.streamTimeMs / size);
    if (s.window !== win) {
      s.previousCount = s.window === win - 1 ? s.currentCount ?? 0 : 0;
      s.currentCount = 0;
      s.window = win;
    }
    const frac = (ctx.streamTimeMs % size) / size;
    const cost = Number(costFn(value)) || 0;
    const estimate = s.previousCount * (1 - frac) + s.currentCount + cost;
    if (estimate > limit) return false;
    s.currentCount += cost;
    return true;
  };
}
