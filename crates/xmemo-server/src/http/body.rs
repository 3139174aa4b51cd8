//! Request and response bodies on their way between hyper and the application: the request
//! body's deadline, the marker that tells the connection a response is done, and the refusal
//! of bodies that announce more bytes than the server accepts.

use super::conns::ConnState;
use super::error::ApiError;
use crate::error::ServiceError;
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Body, Frame, SizeHint};
use serde_json::json;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// The request body did not arrive within the body timeout.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimedOut(pub Duration);

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} s",
            self.0.as_secs()
        )
    }
}

impl std::error::Error for BodyTimedOut {}

/// The client error for a body read that failed because of [`BodyTimedOut`], anywhere in
/// `error`'s source chain (axum wraps body errors in its own).
pub fn timeout_error(error: &(dyn std::error::Error + 'static)) -> Option<ServiceError> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(timeout) = e.downcast_ref::<BodyTimedOut>() {
            return Some(ServiceError::Validation(
                timeout.to_string(),
                Some(json!({
                    "field": "body",
                    "reason": "body_timeout",
                    "limit_seconds": timeout.0.as_secs(),
                })),
            ));
        }
        current = e.source();
    }
    None
}

/// A request body that must be complete within `timeout` of the request head. Past it the
/// body fails, the handler answers, and hyper closes the connection (the body is unread).
/// Read to its end, it tells its connection (if given).
pub struct DeadlineBody<B> {
    /// `None` only once handed back to the connection by `Drop`.
    inner: Option<B>,
    timeout: Duration,
    deadline: Pin<Box<Sleep>>,
    conn: Option<Arc<ConnState>>,
    leftover: Option<Leftover<B>>,
}

/// Where a request body the application dropped before its end is handed back, so the
/// connection can read the rest and stay open for the next request ([`drain`]).
pub type Leftover<B> = Arc<std::sync::Mutex<Option<B>>>;

impl<B> DeadlineBody<B> {
    pub fn new(inner: B, timeout: Duration) -> Self {
        Self {
            inner: Some(inner),
            timeout,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            conn: None,
            leftover: None,
        }
    }

    pub fn on_connection(mut self, conn: Arc<ConnState>) -> Self {
        self.conn = Some(conn);
        self
    }

    /// Hands the unread rest of the body to `slot` when the application drops it.
    pub fn leftover_to(mut self, slot: Leftover<B>) -> Self {
        self.leftover = Some(slot);
        self
    }
}

impl<B> Drop for DeadlineBody<B> {
    fn drop(&mut self) {
        // Only a body not read to its end: the connection still knows it as unread.
        if let (Some(slot), Some(inner)) = (self.leftover.take(), self.inner.take())
            && self.conn.is_some()
        {
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(inner);
        }
    }
}

/// Reads and discards the rest of a request body the application answered without: at most
/// `max_bytes`, for at most `wait`. `true` when it reached its end, so the connection can
/// carry another request.
pub async fn drain<B>(mut body: B, max_bytes: usize, wait: Duration) -> bool
where
    B: Body<Data = Bytes> + Unpin,
{
    let mut read = 0usize;
    let reading = async {
        loop {
            if body.is_end_stream() {
                return true;
            }
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => return true,
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        read = read.saturating_add(data.len());
                        if read > max_bytes {
                            return false;
                        }
                    }
                }
                Some(Err(_)) => return false,
            }
        }
    };
    tokio::time::timeout(wait, reading).await.unwrap_or(false)
}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.deadline.is_elapsed() {
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.timeout)))));
        }
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match Pin::new(&mut *inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if (frame.is_none() || inner.is_end_stream())
                    && let Some(conn) = this.conn.take()
                {
                    conn.on_body_complete();
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.timeout))))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(B::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), B::size_hint)
    }
}

/// A response body that tells its connection when hyper is done with it (dropped: sent to
/// its end, or abandoned).
pub struct ReleaseBody<B> {
    inner: B,
    conn: Arc<ConnState>,
}

impl<B> ReleaseBody<B> {
    pub fn new(inner: B, conn: Arc<ConnState>) -> Self {
        Self { inner, conn }
    }
}

impl<B> Drop for ReleaseBody<B> {
    fn drop(&mut self) {
        self.conn.on_response_released();
    }
}

impl<B: Body + Unpin> Body for ReleaseBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Middleware: a request whose `Content-Length` exceeds `limit` is answered 413 before its
/// body is touched, so with `Expect: 100-continue` the client is told at once and hyper
/// never sends `100 Continue` (it does only when the body is first read).
pub async fn refuse_declared_oversize(limit: usize, request: Request, next: Next) -> Response {
    if let Some(declared) = declared_length(request.headers())
        && declared > limit as u64
    {
        return ApiError(ServiceError::TooLarge(
            format!("the request body ({declared} bytes) exceeds the limit of {limit} bytes"),
            Some(json!({"field": "body", "limit": limit, "actual": declared})),
        ))
        .into_response();
    }
    next.run(request).await
}

/// The body length a request announces in `Content-Length` (hyper has already refused
/// requests with an invalid or contradictory one).
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A body that never produces anything.
    struct Stalled;

    impl Body for Stalled {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn a_stalled_body_fails_at_the_deadline_with_a_recognisable_error() {
        let body = DeadlineBody::new(Stalled, Duration::from_millis(100));
        let err = body.collect().await.expect_err("timed out");
        let service_error = timeout_error(err.as_ref()).expect("recognised");
        assert!(matches!(service_error, ServiceError::Validation(..)));
        // Wrapped the way axum wraps body errors, it is still found.
        let wrapped = axum::Error::new(err);
        assert!(timeout_error(&wrapped).is_some());
        assert!(timeout_error(&std::io::Error::other("other")).is_none());
    }

    #[tokio::test]
    async fn a_complete_body_passes() {
        let body = DeadlineBody::new(
            http_body_util::Full::new(Bytes::from_static(b"abc")),
            Duration::from_secs(5),
        );
        let bytes = body.collect().await.expect("body").to_bytes();
        assert_eq!(&bytes[..], b"abc");
    }
}
