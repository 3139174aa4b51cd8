//! The HTTP plumbing under every transport. Shared by REST, `/mcp`, the OAuth endpoints and
//! the pages: the SPEC error rendering ([`error`]), the one credential check
//! ([`credential`]), the client address behind trusted proxies ([`client_addr`]) and the body
//! limits ([`limits`]).
//!
//! And the HTTP/1.1 server loop: accepts connections and serves the axum application on each,
//! under the limits a public endpoint needs and `axum::serve` does not offer.
//!
//! - **Timeouts** per connection ([`io::GuardedIo`]): an *idle* connection (just accepted, or
//!   between two requests) must start a request within `idle_timeout`; once its first byte
//!   arrived the whole request head must follow within `header_timeout`; a request body must
//!   arrive within `body_timeout` of its head ([`body::DeadlineBody`]).
//! - **A connection cap** ([`conns::ConnTable`]): at `max_connections`, a new connection
//!   displaces the connection that has been idle longest; if none is idle it is answered
//!   503 at once and closed. Idle connections are the cheapest to lose (their clients
//!   reconnect) and the likeliest to be hoarded, so health checks and real requests still
//!   get through when a client parks hundreds of idle connections.
//! - **Accept errors** such as EMFILE back off exponentially and are logged once per
//!   interval ([`accept::AcceptBackoff`]) instead of spinning.
//! - **JSON for hyper's own answers**: hyper answers unparsable request heads itself (400,
//!   414, 431) with an empty body and no hook; [`io::GuardedIo`] recognises those writes
//!   (they happen while no request of ours is in progress) and sends the SPEC error shape
//!   instead ([`canned`]).
//! - Oversized bodies are refused from their `Content-Length` before anything is read, so
//!   `Expect: 100-continue` gets the 413 and never a `100 Continue`
//!   ([`body::refuse_declared_oversize`]). A connection closed while its client may still be
//!   sending lingers up to [`io::LINGER_MAX`], discarding what arrives, so that early answer
//!   is not lost to a connection reset.

pub mod accept;
pub mod body;
pub mod canned;
pub mod client_addr;
pub mod conns;
pub mod credential;
pub mod error;
pub mod io;
pub mod limits;
pub mod request_log;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

/// Most header fields in one request head (hyper's own default, stated here so the limit is
/// ours and documented).
pub const MAX_HEADERS: usize = 100;
/// Largest request head (request line and headers) in bytes. Above hyper's 64 KiB URI
/// limit, so an over-long URI is answered 414 rather than 431.
pub const MAX_HEAD_BYTES: usize = 128 * 1024;

/// The most of an unread request body the connection reads (and drops) to stay open.
pub const DRAIN_MAX_BYTES: usize = 64 * 1024;
/// How long it waits for that rest before it closes the connection instead.
pub const DRAIN_WAIT: Duration = Duration::from_millis(250);

/// Connection limits of the HTTP server (`xmemo serve` settings; README "Settings").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConfig {
    /// Time from a request's first byte to the end of its head.
    pub header_timeout: Duration,
    /// Time from a request's head to the end of its body.
    pub body_timeout: Duration,
    /// Time a connection may wait for a request to start (after accept or a response).
    pub idle_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

impl HttpConfig {
    pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
    pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    /// Upper bound of the default connection cap.
    pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

    /// Every value set (non-zero durations, at least one connection), or what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        for (name, d) in [
            ("header timeout", self.header_timeout),
            ("body timeout", self.body_timeout),
            ("idle timeout", self.idle_timeout),
        ] {
            if d.is_zero() {
                return Err(format!("the {name} must be at least 1 second"));
            }
        }
        if self.max_connections == 0 {
            return Err("max connections must be at least 1".into());
        }
        Ok(())
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            header_timeout: Self::DEFAULT_HEADER_TIMEOUT,
            body_timeout: Self::DEFAULT_BODY_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            max_connections: default_max_connections(),
        }
    }
}

/// Half the process's open-file limit (sockets are files; the database, the sandbox's pipes
/// and scratch files need the rest), at most [`HttpConfig::DEFAULT_MAX_CONNECTIONS`], at
/// least 16. Where the limit cannot be read, the upper bound.
pub fn default_max_connections() -> usize {
    match soft_open_files_limit() {
        Some(limit) => (limit / 2).clamp(16, HttpConfig::DEFAULT_MAX_CONNECTIONS),
        None => HttpConfig::DEFAULT_MAX_CONNECTIONS,
    }
}

/// The soft `RLIMIT_NOFILE`, read from `/proc/self/limits` (Linux; no unsafe code needed).
fn soft_open_files_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_open_files_limit(&text)
}

fn parse_open_files_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line
        .trim_start_matches("Max open files")
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets the requests in progress
/// finish (idle connections close at once) and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    config: HttpConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let table = Arc::new(conns::ConnTable::new(config.max_connections));
    // Every connection task holds a receiver; `closed()` resolves when the last one ends.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut backoff = accept::AcceptBackoff::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => {
                backoff.succeeded();
                pair
            }
            Err(e) if accept::is_per_connection(&e) => continue,
            Err(e) => {
                let step = backoff.failed(Instant::now());
                if let Some(suppressed) = step.log {
                    tracing::error!(
                        error = %e,
                        retry_in_ms = step.delay.as_millis() as u64,
                        similar_errors_not_logged = suppressed,
                        "cannot accept connections; backing off"
                    );
                }
                tokio::select! {
                    () = tokio::time::sleep(step.delay) => continue,
                    () = &mut shutdown => break,
                }
            }
        };
        match table.admit(Instant::now()) {
            conns::Admission::Admitted { conn, displaced } => {
                if let Some(victim) = displaced {
                    tracing::debug!(peer = %peer, "connection cap reached; closing the longest-idle connection");
                    victim.shed();
                }
                let task = Connection {
                    app: app.clone(),
                    config,
                    table: Arc::clone(&table),
                    conn,
                    peer,
                };
                tokio::spawn(task.run(stream, stop_rx.clone()));
            }
            conns::Admission::Full => {
                tracing::warn!(peer = %peer, max = config.max_connections, "connection cap reached and no connection is idle; refusing a connection");
                // Best effort and non-blocking: a client that cannot take these few bytes
                // now only sees the connection close.
                let _ = stream.try_write(&canned::at_capacity_response());
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(stop_rx);
    stop_tx.closed().await;
    Ok(())
}

/// One accepted connection and what serving it needs.
struct Connection {
    app: Router,
    config: HttpConfig,
    table: Arc<conns::ConnTable>,
    conn: Arc<conns::ConnState>,
    peer: SocketAddr,
}

impl Connection {
    async fn run(self, stream: TcpStream, mut stop: tokio::sync::watch::Receiver<bool>) {
        let Connection {
            app,
            config,
            table,
            conn,
            peer,
        } = self;
        let _leave = conns::Leave::new(Arc::clone(&table), Arc::clone(&conn));
        let io = TokioIo::new(io::GuardedIo::new(stream, Arc::clone(&conn), config));
        let state = Arc::clone(&conn);
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let (mut parts, incoming) = req.into_parts();
            state.on_request(Instant::now(), !http_body::Body::is_end_stream(&incoming));
            // Reading the rest of a body the application did not want is worth it only when
            // it is small and already on its way (never a body waiting for `100 Continue`).
            let drainable = !parts.headers.contains_key(axum::http::header::EXPECT)
                && http_body::Body::size_hint(&incoming)
                    .upper()
                    .is_some_and(|n| n <= DRAIN_MAX_BYTES as u64);
            parts.extensions.insert(ConnectInfo(peer));
            let leftover: body::Leftover<Incoming> = Arc::default();
            let body = axum::body::Body::new(
                body::DeadlineBody::new(incoming, config.body_timeout)
                    .on_connection(Arc::clone(&state))
                    .leftover_to(Arc::clone(&leftover)),
            );
            let request = hyper::Request::from_parts(parts, body);
            let app = app.clone();
            let state = Arc::clone(&state);
            async move {
                let mut response = match app.oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                // Answered before its body was read (a refused credential): the rest of the body
                // may still be on its way. A small one is read and dropped, so the connection
                // can carry the next request; else the answer says the connection closes, or a
                // client that reuses it would send its next request into a closing connection
                // and get no answer at all.
                if state.body_unread() {
                    let rest = leftover.lock().unwrap_or_else(|p| p.into_inner()).take();
                    let drained = match rest {
                        Some(rest) if drainable => {
                            body::drain(rest, DRAIN_MAX_BYTES, DRAIN_WAIT).await
                        }
                        _ => false,
                    };
                    if drained {
                        state.on_body_complete();
                    } else {
                        response.headers_mut().insert(
                            axum::http::header::CONNECTION,
                            axum::http::HeaderValue::from_static("close"),
                        );
                    }
                }
                Ok::<_, Infallible>(response.map(|b| body::ReleaseBody::new(b, state)))
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .keep_alive(true)
            // Ours (`GuardedIo`) covers the head and idle time separately.
            .header_read_timeout(None)
            .max_headers(MAX_HEADERS)
            .max_header_size(MAX_HEAD_BYTES);
        let connection = builder.serve_connection(io, service);
        let mut connection = std::pin::pin!(connection);
        let mut stopping = false;
        loop {
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(peer = %peer, error = %e, "connection ended with an error");
                    }
                    break;
                }
                () = conn.shed_requested(), if !stopping => {
                    stopping = true;
                    connection.as_mut().graceful_shutdown();
                }
                changed = stop.changed(), if !stopping => {
                    if changed.is_err() || *stop.borrow() {
                        stopping = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_files_limit_is_read_from_proc_limits() {
        let sample = "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max open files            256                  524288               files     \n";
        assert_eq!(parse_open_files_limit(sample), Some(256));
        assert_eq!(parse_open_files_limit("Max processes 10 10"), None);
    }

    #[test]
    fn config_validation() {
        let ok = HttpConfig {
            max_connections: 8,
            ..HttpConfig::default()
        };
        assert!(ok.validate().is_ok());
        assert!(
            HttpConfig {
                header_timeout: Duration::ZERO,
                ..ok
            }
            .validate()
            .is_err()
        );
        assert!(
            HttpConfig {
                max_connections: 0,
                ..ok
            }
            .validate()
            .is_err()
        );
        assert!((16..=HttpConfig::DEFAULT_MAX_CONNECTIONS).contains(&default_max_connections()));
    }
}
