// HTTP transport of the queen-mq client: Node's own fetch, JSON bodies, bearer token, several
// URLs with failover, and the 2.x retry policy:
//   - 4xx is never retried, except 429: retried in place (10 attempts, unbounded for a long
//     poll), honouring Retry-After (seconds), else 500 ms * 2^n capped at 30 s, +-20 % jitter;
//   - 5xx, 408 and network errors: retryAttempts (3) more tries, 1 s * 2^n back-off, and with several
//     URLs the next backend is tried and the failed one is marked unhealthy for 5 s.

export class QueenHttpError extends Error {
  constructor(message, { status, code, reason, detail, body, retryAfterSeconds } = {}) {
    super(message);
    this.name = 'QueenHttpError';
    this.status = status;
    this.code = code;
    this.reason = reason;
    this.detail = detail;
    this.body = body;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

const sleep = (ms, signal) => new Promise((resolve) => {
  if (signal?.aborted) return resolve();
  const t = setTimeout(done, ms);
  function done() { clearTimeout(t); signal?.removeEventListener?.('abort', done); resolve(); }
  signal?.addEventListener?.('abort', done, { once: true });
});
export { sleep };

export function jitter(ms, frac) {
  return Math.max(0, Math.round(ms * (1 + (Math.random() * 2 - 1) * frac)));
}

// FNV-1a-like 32-bit hash of the 2.x client's affinity ring
export function ringHash(s) {
  let h = 0x811c9dc5;
  for (const ch of s) {
    h ^= ch.codePointAt(0);
    h = (h + (h << 1) + (h << 4) + (h << 7) + (h << 8) + (h << 24)) >>> 0;
  }
  return h >>> 0;
}

export class HttpClient {
  constructor({ urls, bearerToken, headers = {}, timeoutMillis = 30000, retryAttempts = 3,
    loadBalancingStrategy = 'affinity', affinityHashRing = 128, enableFailover = true,
    unhealthyMillis = 5000, retryBaseMillis = 1000, rateLimitBaseMillis = 500 } = {}) {
    if (!urls || urls.length === 0) throw new TypeError('queen-mq: at least one url is required');
    this.urls = urls.map((u) => String(u).replace(/\/+$/, ''));
    this.bearerToken = bearerToken;
    this.headers = { ...headers };
    this.timeoutMillis = timeoutMillis;
    this.retryAttempts = retryAttempts;
    this.strategy = loadBalancingStrategy;
    this.failover = enableFailover;
    this.unhealthyMillis = unhealthyMillis;
    this.retryBaseMillis = retryBaseMillis;
    this.rateLimitBaseMillis = rateLimitBaseMillis;
    this.unhealthyUntil = new Map();
    this.rr = 0;
    this.session = Math.floor(Math.random() * this.urls.length);
    this.ring = [];
    if (this.urls.length > 1) {
      for (const u of this.urls) for (let i = 0; i < affinityHashRing; i++) this.ring.push([ringHash(`${u}#vnode${i}`), u]);
      this.ring.sort((a, b) => a[0] - b[0]);
    }
  }

  // the backends in the order this request tries them
  order(affinityKey) {
    if (this.urls.length === 1) return this.urls;
    let first;
    if (this.strategy === 'round-robin') first = this.urls[this.rr++ % this.urls.length];
    else if (this.strategy === 'session' || !affinityKey) first = this.urls[this.session];
    else {
      const h = ringHash(affinityKey);
      let lo = 0, hi = this.ring.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (this.ring[mid][0] < h) lo = mid + 1; else hi = mid; }
      first = this.ring[lo % this.ring.length][1];
    }
    const now = Date.now();
    const rest = this.urls.filter((u) => u !== first);
    const all = [first, ...rest];
    const healthy = all.filter((u) => !(this.unhealthyUntil.get(u) > now));
    return healthy.length ? [...healthy, ...all.filter((u) => !healthy.includes(u))] : all;
  }

  markUnhealthy(url) { if (this.urls.length > 1) this.unhealthyUntil.set(url, Date.now() + this.unhealthyMillis); }

  buildHeaders(body) {
    const h = { ...this.headers };
    if (this.bearerToken) h.Authorization = `Bearer ${this.bearerToken}`;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    return h;
  }

  // request(method, path, {body, affinityKey, timeoutMillis, longPoll, signal}) -> parsed JSON | null
  async request(method, path, { body, affinityKey, timeoutMillis, longPoll = false, signal, retryAttempts } = {}) {
    const attempts5xx = retryAttempts ?? this.retryAttempts;
    let n5xx = 0, n429 = 0;
    let lastErr;
    for (;;) {
      const order = this.failover ? this.order(affinityKey) : [this.order(affinityKey)[0]];
      const url = order[n5xx % order.length];
      let res;
      try {
        res = await this.once(method, url + path, body, timeoutMillis ?? this.timeoutMillis, signal);
      } catch (err) {
        if (signal?.aborted) throw err;
        lastErr = err;
        this.markUnhealthy(url);
        if (n5xx >= attempts5xx) throw err;
        await sleep(this.retryBaseMillis * 2 ** n5xx, signal);
        n5xx++;
        continue;
      }
      const { status, headers, data, text } = res;
      if (status >= 200 && status < 300) return status === 204 ? null : data;
      const e = errorFrom(status, headers, data, text);
      if (status === 429) {
        if (!longPoll && n429 >= 10) throw e;
        const wait = e.retryAfterSeconds != null ? e.retryAfterSeconds * 1000
          : jitter(Math.min(30000, this.rateLimitBaseMillis * 2 ** n429), 0.2);
        n429++;
        await sleep(wait, signal);
        if (signal?.aborted) throw e;
        continue;
      }
      if (status >= 500 || status === 408) {
        lastErr = e;
        this.markUnhealthy(url);
        if (n5xx >= attempts5xx) throw e;
        await sleep(this.retryBaseMillis * 2 ** n5xx, signal);
        if (signal?.aborted) throw e;
        n5xx++;
        continue;
      }
      throw e;
    }
    // unreachable
    // eslint-disable-next-line no-unreachable
    throw lastErr;
  }

  async once(method, url, body, timeoutMillis, signal) {
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(new Error(`queen-mq: ${method} ${url} timed out after ${timeoutMillis} ms`)), timeoutMillis);
    const onAbort = () => ac.abort(signal.reason);
    signal?.addEventListener?.('abort', onAbort, { once: true });
    try {
      const r = await fetch(url, {
        method, headers: this.buildHeaders(body), signal: ac.signal,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      let data = null;
      if (text.length) { try { data = JSON.parse(text); } catch { data = null; } }
      return { status: r.status, headers: r.headers, data, text };
    } finally {
      clearTimeout(t);
      signal?.removeEventListener?.('abort', onAbort);
    }
  }
}

function errorFrom(status, headers, data, text) {
  const obj = data && typeof data === 'object' && !Array.isArray(data) ? data : {};
  const ra = headers.get('retry-after');
  let retryAfterSeconds;
  if (ra != null && ra !== '') {
    if (Number.isFinite(Number(ra))) retryAfterSeconds = Math.max(0, Number(ra));
    else if (Number.isFinite(Date.parse(ra))) retryAfterSeconds = Math.max(0, (Date.parse(ra) - Date.now()) / 1000); // an HTTP date
  }
  const msg = typeof obj.error === 'string' ? obj.error : (text && !data ? text.slice(0, 200) : `HTTP ${status}`);
  return new QueenHttpError(msg, {
    status, code: obj.code ?? (typeof obj.error === 'string' && /^[a-z_]+$/.test(obj.error) ? obj.error : undefined),
    reason: obj.reason, detail: obj.detail, body: data ?? text, retryAfterSeconds,
  });
}
