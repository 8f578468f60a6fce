//! The HTTP layer: several broker URLs with failover, bearer token, and the 2.x retry policy.
//!
//! - 4xx is never retried, except 429: retried in place up to 10 times (unbounded for a long-poll
//!   pop), waiting `Retry-After` when the broker sends it, else 500 ms · 2^n capped at 30 s, ±20 %.
//! - 5xx and network failures: retried `retry_attempts` times (default 3) with 1 s · 2^n back-off
//!   (capped at 30 s, ±20 %); with several URLs the next healthy one is tried first and the
//!   failed one is marked unhealthy for 5 s.
//! - An affinity key (queue:partition:group) picks the URL on a consistent-hash ring, 128 virtual
//!   nodes per URL, so one consumer's requests keep landing on one node while it is healthy.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::util::random_unit;

#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub urls: Vec<String>,
    pub bearer_token: Option<String>,
    pub headers: Vec<(String, String)>,
    pub retry_attempts: u32,
    pub retry_base: Duration,
    pub rate_limit_base: Duration,
    pub request_timeout: Duration,
    pub unhealthy_for: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            urls: vec!["http://localhost:6632".into()],
            bearer_token: None,
            headers: vec![],
            retry_attempts: 3,
            retry_base: Duration::from_secs(1),
            rate_limit_base: Duration::from_millis(500),
            request_timeout: Duration::from_secs(30),
            unhealthy_for: Duration::from_secs(5),
        }
    }
}

/// One call's knobs beyond the defaults.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallOpts {
    pub affinity: Option<String>,
    /// a long poll: 429 retried without a bound, the deadline is `timeout + 5 s`
    pub long_poll: Option<Duration>,
}

struct Inner {
    cfg: HttpConfig,
    client: reqwest::Client,
    unhealthy: Mutex<Vec<Option<Instant>>>,
    ring: Vec<(u32, usize)>,
    rr: Mutex<usize>,
}

#[derive(Clone)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

/// The 2.x client's ring hash (FNV-1a-like, 32 bit).
pub fn ring_hash(s: &str) -> u32 {
    let mut h: u32 = 2166136261;
    for c in s.chars() {
        h ^= c as u32;
        h = h.wrapping_add((h << 1).wrapping_add(h << 4).wrapping_add(h << 7).wrapping_add(h << 8).wrapping_add(h << 24));
    }
    h
}

fn jitter(d: Duration, frac: f64) -> Duration {
    let f = 1.0 + (random_unit() * 2.0 - 1.0) * frac;
    Duration::from_secs_f64((d.as_secs_f64() * f).max(0.0))
}

impl HttpClient {
    pub fn new(cfg: HttpConfig) -> Result<HttpClient> {
        if cfg.urls.is_empty() {
            return Err(Error::Invalid("at least one broker URL is needed".into()));
        }
        let client = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| Error::Invalid(format!("http client: {e}")))?;
        let mut ring = Vec::with_capacity(cfg.urls.len() * 128);
        for (i, u) in cfg.urls.iter().enumerate() {
            for v in 0..128 {
                ring.push((ring_hash(&format!("{u}#vnode{v}")), i));
            }
        }
        ring.sort();
        let n = cfg.urls.len();
        let cfg = HttpConfig { urls: cfg.urls.iter().map(|u| u.trim_end_matches('/').to_string()).collect(), ..cfg };
        Ok(HttpClient { inner: Arc::new(Inner { cfg, client, unhealthy: Mutex::new(vec![None; n]), ring, rr: Mutex::new(0) }) })
    }

    pub fn config(&self) -> &HttpConfig {
        &self.inner.cfg
    }

    fn healthy(&self, i: usize) -> bool {
        let mut u = self.inner.unhealthy.lock().unwrap();
        match u[i] {
            Some(t) if t > Instant::now() => false,
            Some(_) => {
                u[i] = None;
                true
            }
            None => true,
        }
    }

    fn mark_unhealthy(&self, i: usize) {
        if self.inner.cfg.urls.len() > 1 {
            self.inner.unhealthy.lock().unwrap()[i] = Some(Instant::now() + self.inner.cfg.unhealthy_for);
        }
    }

    /// The URLs in the order this call tries them: the affinity owner (or round robin) first,
    /// unhealthy ones last.
    fn order(&self, affinity: Option<&str>) -> Vec<usize> {
        let n = self.inner.cfg.urls.len();
        let first = match affinity {
            Some(k) if n > 1 => {
                let h = ring_hash(k);
                let ring = &self.inner.ring;
                let pos = ring.partition_point(|(x, _)| *x < h);
                ring[pos % ring.len()].1
            }
            _ => {
                let mut rr = self.inner.rr.lock().unwrap();
                *rr = (*rr + 1) % n;
                *rr
            }
        };
        let mut all: Vec<usize> = (0..n).map(|k| (first + k) % n).collect();
        all.sort_by_key(|i| !self.healthy(*i));
        all
    }

    pub(crate) async fn request(&self, method: Method, path: &str, body: Option<&Value>, opts: &CallOpts) -> Result<(u16, Option<Value>)> {
        let raw = match body {
            // an empty object is not sent at all (the 2.x convention)
            Some(b) if !(b.as_object().map(|o| o.is_empty()).unwrap_or(false)) => Some(("application/json", serde_json::to_vec(b).unwrap_or_default())),
            _ => None,
        };
        self.request_raw(method, path, raw, opts).await
    }

    /// As `request`, with a body of bytes and its content type.
    pub(crate) async fn request_raw(&self, method: Method, path: &str, body: Option<(&str, Vec<u8>)>, opts: &CallOpts) -> Result<(u16, Option<Value>)> {
        let cfg = &self.inner.cfg;
        let mut server_failures: u32 = 0;
        let mut rate_limited: u32 = 0;
        let mut order = self.order(opts.affinity.as_deref());
        let mut idx = 0usize;
        loop {
            let ui = order[idx % order.len()];
            let url = format!("{}{}", cfg.urls[ui], path);
            let mut rb = self.inner.client.request(method.clone(), &url);
            rb = rb.timeout(match opts.long_poll {
                Some(t) => t + Duration::from_secs(5),
                None => cfg.request_timeout,
            });
            if let Some(tok) = &cfg.bearer_token {
                rb = rb.bearer_auth(tok);
            }
            for (k, v) in &cfg.headers {
                rb = rb.header(k, v);
            }
            if let Some((ct, bytes)) = &body {
                rb = rb.header("content-type", *ct).body(bytes.clone());
            }
            let outcome = rb.send().await;
            let retry_server = |failures: u32| -> Option<Duration> {
                if failures > cfg.retry_attempts {
                    None
                } else {
                    let d = cfg.retry_base.saturating_mul(1 << (failures - 1).min(5));
                    Some(jitter(d.min(Duration::from_secs(30)), 0.2))
                }
            };
            match outcome {
                Err(e) => {
                    self.mark_unhealthy(ui);
                    server_failures += 1;
                    match retry_server(server_failures) {
                        Some(d) => {
                            idx += 1;
                            if idx % order.len() == 0 {
                                tokio::time::sleep(d).await;
                                order = self.order(opts.affinity.as_deref());
                            }
                            continue;
                        }
                        None => return Err(Error::Network(format!("{method} {path}: {e}"))),
                    }
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(Duration::from_secs_f64);
                    let bytes = resp.bytes().await.map_err(|e| Error::Network(format!("{method} {path}: {e}")))?;
                    let json: Option<Value> = if bytes.is_empty() { None } else { serde_json::from_slice(&bytes).ok() };
                    if (200..300).contains(&status) {
                        return Ok((status, if status == 204 { None } else { json }));
                    }
                    let body_v = json.unwrap_or_else(|| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
                    if status == 429 {
                        rate_limited += 1;
                        if opts.long_poll.is_none() && rate_limited > 10 {
                            return Err(Error::from_response(status, body_v, retry_after));
                        }
                        let d = retry_after.unwrap_or_else(|| {
                            jitter(cfg.rate_limit_base.saturating_mul(1 << (rate_limited - 1).min(6)).min(Duration::from_secs(30)), 0.2)
                        });
                        tokio::time::sleep(d).await;
                        continue;
                    }
                    if status >= 500 {
                        self.mark_unhealthy(ui);
                        server_failures += 1;
                        if let Some(d) = retry_server(server_failures) {
                            idx += 1;
                            if idx % order.len() == 0 {
                                tokio::time::sleep(d).await;
                                order = self.order(opts.affinity.as_deref());
                            }
                            continue;
                        }
                    }
                    return Err(Error::from_response(status, body_v, retry_after));
                }
            }
        }
    }

    pub async fn get(&self, path: &str) -> Result<Option<Value>> {
        Ok(self.request(Method::GET, path, None, &CallOpts::default()).await?.1)
    }
    pub async fn post(&self, path: &str, body: &Value) -> Result<Option<Value>> {
        Ok(self.request(Method::POST, path, Some(body), &CallOpts::default()).await?.1)
    }
    pub async fn delete(&self, path: &str) -> Result<Option<Value>> {
        Ok(self.request(Method::DELETE, path, None, &CallOpts::default()).await?.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ring_is_stable() {
        let c = HttpClient::new(HttpConfig { urls: vec!["http://a:1".into(), "http://b:2".into()], ..Default::default() }).unwrap();
        let a = c.order(Some("q:*:g"));
        let b = c.order(Some("q:*:g"));
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
    }
}
