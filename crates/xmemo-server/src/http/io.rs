//! The socket as hyper sees it: enforces the idle and head deadlines of the connection's
//! phase ([`super::conns`]), reports reads and flushes to that phase, and sends the SPEC error
//! shape in place of hyper's empty parse-error answers ([`super::canned`]).
//!
//! Deadlines are checked where hyper waits for the client: a read that would block past the
//! deadline ends the connection — as end of stream when idle (hyper closes it quietly), as a
//! `TimedOut` error when a request head is incomplete. The timer is also polled after reads
//! and flushes so the task is woken at the deadline even if hyper does not read again first.

use super::HttpConfig;
use super::canned;
use super::conns::{ConnState, Phase};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// More than any head hyper writes; what goes beyond is dropped.
const CAPTURE_MAX: usize = 16 * 1024;
/// Longest a closing connection keeps reading (and discarding) what its client still sends.
pub const LINGER_MAX: Duration = Duration::from_secs(5);

pub struct GuardedIo<T> {
    inner: T,
    conn: Arc<ConnState>,
    idle_timeout: Duration,
    header_timeout: Duration,
    timer: Pin<Box<Sleep>>,
    armed: Option<Instant>,
    /// hyper's own answer, captured, and what is sent in its place.
    capture: Option<Capture>,
    /// Closing: our side is shut down, the client's bytes are drained until this instant.
    lingering: Option<Instant>,
}

#[derive(Default)]
struct Capture {
    captured: Vec<u8>,
    out: Option<Vec<u8>>,
    sent: usize,
}

impl Capture {
    fn push(&mut self, bytes: &[u8]) {
        let room = CAPTURE_MAX.saturating_sub(self.captured.len());
        self.captured
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

impl<T> GuardedIo<T> {
    pub fn new(inner: T, conn: Arc<ConnState>, config: HttpConfig) -> Self {
        Self {
            inner,
            conn,
            idle_timeout: config.idle_timeout,
            header_timeout: config.header_timeout,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed: None,
            capture: None,
            lingering: None,
        }
    }

    /// `Ready(phase)` once the current phase's deadline has passed; otherwise the task is
    /// registered to wake at it.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<Phase> {
        let Some((deadline, phase)) = self.conn.deadline(self.idle_timeout, self.header_timeout)
        else {
            return Poll::Pending;
        };
        if self.armed != Some(deadline) {
            self.timer.as_mut().reset(deadline.into());
            self.armed = Some(deadline);
        }
        self.timer.as_mut().poll(cx).map(|()| phase)
    }
}

impl<T: AsyncWrite + Unpin> GuardedIo<T> {
    /// Writes the replacement of a captured hyper answer, once that answer is complete.
    fn poll_send_replacement(
        &mut self,
        cx: &mut Context<'_>,
        closing: bool,
    ) -> Poll<io::Result<()>> {
        let Self { inner, capture, .. } = self;
        let Some(c) = capture else {
            return Poll::Ready(Ok(()));
        };
        if c.out.is_none() {
            match canned::replacement(&c.captured) {
                Some(out) => {
                    tracing::debug!(
                        "hyper refused an unparsable request; answering in the SPEC error shape"
                    );
                    c.out = Some(out);
                }
                None if closing => c.out = Some(std::mem::take(&mut c.captured)),
                None => return Poll::Ready(Ok(())),
            }
        }
        let out = c.out.as_deref().unwrap_or_default();
        while c.sent < out.len() {
            let n = ready!(Pin::new(&mut *inner).poll_write(cx, &out[c.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            c.sent += n;
        }
        Poll::Ready(Ok(()))
    }

    /// hyper writes while no request of ours is in progress only to answer a head it could
    /// not parse.
    fn capturing(&mut self) -> Option<&mut Capture> {
        if self.capture.is_none() && self.conn.phase() != Phase::Busy {
            self.capture = Some(Capture::default());
        }
        self.capture.as_mut()
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GuardedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.conn.on_read(Instant::now());
                }
                let _ = this.poll_deadline(cx);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.poll_deadline(cx) {
                Poll::Pending => Poll::Pending,
                // End of stream: hyper closes an idle connection without a word.
                Poll::Ready(Phase::Idle) => Poll::Ready(Ok(())),
                Poll::Ready(_) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the request head did not arrive in time",
                ))),
            },
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for GuardedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(capture) = this.capturing() {
            capture.push(buf);
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(capture) = this.capturing() {
            let mut total = 0;
            for buf in bufs {
                capture.push(buf);
                total += buf.len();
            }
            return Poll::Ready(Ok(total));
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send_replacement(cx, false))?;
        ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
        this.conn.on_flushed(Instant::now());
        let _ = this.poll_deadline(cx);
        Poll::Ready(Ok(()))
    }

    /// Sends what is pending, shuts our side down, then — if the client may still be sending
    /// ([`ConnState::client_may_be_sending`]) — reads and discards what the client still sends, for at most [`LINGER_MAX`]. Closing
    /// a socket with unread data resets the connection, and a client still uploading (a body
    /// refused early, an oversized head) would lose the answer it has not read yet.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send_replacement(cx, true))?;
        let until = match this.lingering {
            Some(until) => until,
            None => {
                ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
                if !this.conn.client_may_be_sending() {
                    return Poll::Ready(Ok(()));
                }
                let until = Instant::now() + LINGER_MAX;
                this.lingering = Some(until);
                this.timer.as_mut().reset(until.into());
                this.armed = None;
                until
            }
        };
        let mut scratch = [0u8; 8192];
        loop {
            if Instant::now() >= until {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    return match this.timer.as_mut().poll(cx) {
                        Poll::Ready(()) => Poll::Ready(Ok(())),
                        Poll::Pending => Poll::Pending,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn config() -> HttpConfig {
        HttpConfig {
            header_timeout: Duration::from_millis(200),
            idle_timeout: Duration::from_millis(400),
            body_timeout: Duration::from_secs(1),
            max_connections: 4,
        }
    }

    #[tokio::test]
    async fn an_idle_connection_ends_quietly_and_a_slow_head_with_an_error() {
        let (client, server) = tokio::io::duplex(1024);
        let conn = Arc::new(ConnState::new(0, Instant::now()));
        let mut io = GuardedIo::new(server, Arc::clone(&conn), config());
        let mut buf = [0u8; 16];
        // Nothing arrives: end of stream at the idle deadline.
        assert_eq!(io.read(&mut buf).await.expect("eof"), 0);

        let (mut client2, server2) = tokio::io::duplex(1024);
        let conn2 = Arc::new(ConnState::new(1, Instant::now()));
        let mut io2 = GuardedIo::new(server2, Arc::clone(&conn2), config());
        client2.write_all(b"GET / HT").await.expect("write");
        assert_eq!(io2.read(&mut buf).await.expect("bytes"), 8);
        assert_eq!(conn2.phase(), Phase::Head);
        let err = io2.read(&mut buf).await.expect_err("head deadline");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(client);
    }

    #[tokio::test]
    async fn a_busy_connection_has_no_deadline() {
        let (_client, server) = tokio::io::duplex(1024);
        let conn = Arc::new(ConnState::new(0, Instant::now()));
        conn.on_request(Instant::now(), false);
        let mut io = GuardedIo::new(server, Arc::clone(&conn), config());
        let mut buf = [0u8; 16];
        // Well past both deadlines of `config()`.
        let waited = tokio::time::timeout(Duration::from_secs(1), io.read(&mut buf)).await;
        assert!(
            waited.is_err(),
            "a busy connection must not time out on reads"
        );
    }

    #[tokio::test]
    async fn writes_outside_a_request_are_replaced_and_ours_pass() {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let conn = Arc::new(ConnState::new(0, Instant::now()));
        let mut io = GuardedIo::new(server, Arc::clone(&conn), config());
        // A request of ours: passes unchanged.
        conn.on_request(Instant::now(), false);
        io.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .await
            .expect("write");
        conn.on_response_released();
        io.flush().await.expect("flush");
        // Then hyper answers an unparsable head by itself.
        io.write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n")
            .await
            .expect("write");
        io.flush().await.expect("flush");
        io.shutdown().await.expect("shutdown");
        drop(io);
        let mut out = String::new();
        client.read_to_string(&mut out).await.expect("read");
        let (ours, theirs) = out.split_at(out.find("HTTP/1.1 431").expect("second response"));
        assert_eq!(ours, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        let (_, body) = theirs.split_once("\r\n\r\n").expect("head");
        let body: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(body["error"]["code"], "PAYLOAD_TOO_LARGE");
    }
}
