//! Small helpers: time stamps (ISO-8601 UTC), UUIDs, base64, jitter. No dependency for these.
use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if getrandom::getrandom(&mut b).is_err() {
        // never expected; fall back to the clock so ids stay distinct enough
        let t = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        for (i, x) in b.iter_mut().enumerate() {
            *x = (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(131);
        }
    }
    b
}

/// A uniform float in [0, 1).
pub fn random_unit() -> f64 {
    let b: [u8; 8] = random_bytes();
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

fn uuid_text(b: &[u8; 16]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// UUIDv7 (48-bit ms time, random rest), the 2.x client's transactionId.
pub fn uuid_v7() -> String {
    let mut b: [u8; 16] = random_bytes();
    let ms = now_ms() as u64;
    for i in 0..6 {
        b[i] = (ms >> (40 - 8 * i)) as u8;
    }
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid_text(&b)
}

pub fn uuid_v4() -> String {
    let mut b: [u8; 16] = random_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid_text(&b)
}

/// Lowercase hex of 6 random bytes (lock owners `host:pid:12hex`).
pub fn hex12() -> String {
    let b: [u8; 6] = random_bytes();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// ---- civil time (Howard Hinnant's algorithms), UTC only

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Epoch µs of an ISO-8601 stamp (`2026-12-01T10:00:00.501942Z`, `+hh:mm` offsets, a space for
/// `T`, up to 9 fraction digits). None when it is not one.
pub fn parse_iso_us(s: &str) -> Option<i64> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |a: usize, n: usize| -> Option<i64> {
        let t = s.get(a..a + n)?;
        if !t.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') {
        return None;
    }
    let (h, mi, se) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_us: i64 = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &s[start..i];
        if digits.is_empty() {
            return None;
        }
        let mut v: i64 = 0;
        for (k, c) in digits.bytes().enumerate() {
            if k < 6 {
                v = v * 10 + (c - b'0') as i64;
            }
        }
        for _ in digits.len()..6 {
            v *= 10;
        }
        frac_us = v;
    }
    let rest = &s[i..];
    let offset_s: i64 = if rest.is_empty() || rest == "Z" || rest == "z" {
        0
    } else {
        let sign = match rest.as_bytes()[0] {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        let r = rest[1..].replace(':', "");
        if r.len() != 4 || !r.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let oh: i64 = r[0..2].parse().ok()?;
        let om: i64 = r[2..4].parse().ok()?;
        sign * (oh * 3600 + om * 60)
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86400 + h * 3600 + mi * 60 + se - offset_s;
    Some(secs * 1_000_000 + frac_us)
}

pub fn parse_iso_ms(s: &str) -> Option<i64> {
    parse_iso_us(s).map(|us| us.div_euclid(1000))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` — JavaScript's `toISOString()`, the window keys' spelling.
pub fn iso_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        (rem / 60_000) % 60,
        (rem / 1000) % 60,
        rem % 1000
    )
}

/// Six fraction digits, the broker's own spelling (`partitions/changed`'s `since`).
pub fn iso_us(us: i64) -> String {
    let ms = us.div_euclid(1000);
    let base = iso_ms(ms);
    format!("{}{:06}Z", &base[..20], us.rem_euclid(1_000_000))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        out.push(B64[(n >> 18) as usize & 63] as char);
        out.push(B64[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 { B64[(n >> 6) as usize & 63] as char } else { '=' });
        out.push(if c.len() > 2 { B64[n as usize & 63] as char } else { '=' });
    }
    out
}

pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' | b'\n' | b'\r' => continue,
            _ => return None,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn iso_round_trip() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(parse_iso_ms("2026-12-01T10:00:00.501942Z"), Some(1_796_119_200_501));
        assert_eq!(iso_ms(1_796_119_200_501), "2026-12-01T10:00:00.501Z");
        assert_eq!(parse_iso_us("2026-12-01T11:00:00.5+01:00"), Some(1_796_119_200_500_000));
        assert_eq!(iso_us(1_796_119_200_501_942), "2026-12-01T10:00:00.501942Z");
        assert_eq!(parse_iso_ms("nope"), None);
        assert_eq!(iso_ms(-1), "1969-12-31T23:59:59.999Z");
    }
    #[test]
    fn b64() {
        for s in ["", "f", "fo", "foo", "foob", "{\"a\":1}"] {
            assert_eq!(base64_decode(&base64_encode(s.as_bytes())).unwrap(), s.as_bytes());
        }
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
    }
    #[test]
    fn uuids() {
        let a = uuid_v7();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "7");
        assert_ne!(uuid_v4(), uuid_v4());
    }
}
