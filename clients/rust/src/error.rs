//! One error type for the whole crate.
use std::fmt;
use std::time::Duration;

use serde_json::Value;

/// What went wrong. Callers branch on [`Error::code`], never on prose.
#[derive(Debug, Clone)]
pub enum Error {
    /// The broker answered with a non-2xx status.
    Http {
        status: u16,
        /// `body.code`, else `body.error` when that is a short identifier (the KV/timer/lock
        /// envelope puts the code in `error`).
        code: Option<String>,
        /// `body.reason` (the finer stable id of the KV/timer/lock family).
        reason: Option<String>,
        /// `body.error` (prose), else `HTTP <status>`.
        message: String,
        /// `Retry-After` of a 429, in seconds.
        retry_after: Option<Duration>,
        body: Value,
    },
    /// No broker answered (connection refused, timeout, ...), after the retries.
    Network(String),
    /// The broker answered 2xx with something this client cannot read.
    Protocol(String),
    /// The caller asked for something this client refuses before sending it.
    Invalid(String),
    /// A stream chain that breaks one of the chain rules (detected when it is built).
    Chain(String),
    /// A query registered under this name with another config_hash (HTTP 409). `reset(true)`.
    ConfigMismatch(String),
    /// A pop that asked for `conflation(true)` got an answer with neither `conflation: true`
    /// nor `conflationConflict: true` (a 204 included): the broker ignored the flag. Terminal
    /// for `consume` (the 2.x client's ConflationUnsupportedError). Holds the answer's status.
    ConflationUnsupported { status: u16 },
}

impl Error {
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Http { status, .. } => Some(*status),
            Error::ConfigMismatch(_) => Some(409),
            _ => None,
        }
    }
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Http { code, .. } => code.as_deref(),
            Error::ConflationUnsupported { .. } => Some("conflation_unsupported"),
            _ => None,
        }
    }
    pub(crate) fn from_response(status: u16, body: Value, retry_after: Option<Duration>) -> Error {
        let err_field = body.get("error").and_then(Value::as_str).map(str::to_string);
        let is_ident = |s: &str| !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        let code = body
            .get("code")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| err_field.clone().filter(|s| is_ident(s)));
        let reason = body.get("reason").and_then(Value::as_str).map(str::to_string);
        let message = err_field.unwrap_or_else(|| format!("HTTP {status}"));
        Error::Http { status, code, reason, message, retry_after, body }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Http { status, code, message, .. } => match code {
                Some(c) if c != message => write!(f, "HTTP {status} {c}: {message}"),
                _ => write!(f, "HTTP {status}: {message}"),
            },
            Error::Network(m) => write!(f, "network: {m}"),
            Error::Protocol(m) => write!(f, "protocol: {m}"),
            Error::Invalid(m) => write!(f, "invalid: {m}"),
            Error::Chain(m) => write!(f, "stream chain: {m}"),
            Error::ConfigMismatch(m) => write!(f, "config_hash mismatch (HTTP 409), rerun with reset(true): {m}"),
            Error::ConflationUnsupported { status } => {
                write!(f, "conflation_unsupported: the pop asked for conflation and the broker's answer (HTTP {status}) carried no conflation echo; it needs a broker that supports conflation")
            }
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
