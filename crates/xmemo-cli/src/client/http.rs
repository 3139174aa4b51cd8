//! The HTTP side of the client: one authenticated connection to the server and the one error
//! type every failure (server error object, unreachable server, missing key, bad local input)
//! is reported as.

use super::Conn;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt;
use std::time::Duration;

const AGENT_ID_HEADER: &str = "x-memory-os-agent-id";
const AGENT_INSTANCE_HEADER: &str = "x-memory-os-agent-instance-id";

/// A failed command, in the SPEC error vocabulary.
#[derive(Debug)]
pub enum Failure {
    /// A SPEC `{"error": {...}}` object: the server's answer, or a package refused here by
    /// the server's own rules and conversion (`save --dir`), so both read the same.
    Object { body: Value },
    /// Detected on this side (no key, unreachable server, bad input, unexpected answer).
    Local {
        code: &'static str,
        message: String,
        retryable: bool,
    },
}

impl Failure {
    pub fn local(code: &'static str, message: impl Into<String>) -> Self {
        Self::Local {
            code,
            message: message.into(),
            retryable: false,
        }
    }

    /// Bad input given to the CLI (flags, files).
    pub fn input(message: impl Into<String>) -> Self {
        Self::local("VALIDATION_ERROR", message)
    }

    /// The server said something this client does not understand.
    pub fn unexpected(message: impl Into<String>) -> Self {
        Self::local("SERVICE_UNAVAILABLE", message)
    }

    fn error_field(&self, name: &str) -> Option<&Value> {
        match self {
            Self::Object { body } => body.get("error").and_then(|e| e.get(name)),
            Self::Local { .. } => None,
        }
    }

    pub fn code(&self) -> &str {
        match self {
            Self::Object { .. } => self
                .error_field("code")
                .and_then(Value::as_str)
                .unwrap_or("UNKNOWN"),
            Self::Local { code, .. } => code,
        }
    }

    /// How long the server asked to wait before the same request may pass, when it refused
    /// it for its rate (`RATE_LIMITED` with `details.retry_after_seconds`).
    pub fn rate_limited_wait(&self) -> Option<Duration> {
        if self.code() != "RATE_LIMITED" {
            return None;
        }
        let secs = self
            .error_field("details")
            .and_then(|d| d.get("retry_after_seconds"))
            .and_then(Value::as_u64)
            .unwrap_or(1);
        Some(Duration::from_secs(secs.clamp(1, 60)))
    }

    /// The error object, as the server would have written it.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Object { body } => body.clone(),
            Self::Local {
                code,
                message,
                retryable,
            } => json!({ "error": { "code": code, "message": message, "retryable": retryable } }),
        }
    }

    /// The error object for any error a command returned.
    pub fn json_of(e: &anyhow::Error) -> Value {
        match e.downcast_ref::<Failure>() {
            Some(f) => f.to_json(),
            None => Failure::input(format!("{e:#}")).to_json(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local { message, .. } => f.write_str(message),
            Self::Object { .. } => {
                let message = self
                    .error_field("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)");
                write!(f, "{}: {message}", self.code())?;
                if let Some(details) = self.error_field("details") {
                    write_details(f, details)?;
                }
                // What the operator searches the server's log for.
                if let Some(id) = self.error_field("request_id").and_then(Value::as_str) {
                    write!(f, "\n  request id: {id}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Failure {}

/// Details under the message: one `  candidate:` line per AMBIGUOUS_SLUG candidate, else one
/// `  key: value` line per field.
fn write_details(f: &mut fmt::Formatter<'_>, details: &Value) -> fmt::Result {
    let Some(obj) = details.as_object() else {
        return write!(f, "\n  details: {details}");
    };
    for (key, value) in obj {
        match (key.as_str(), value.as_array()) {
            ("candidates", Some(items)) => {
                for c in items {
                    let text =
                        |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
                    write!(
                        f,
                        "\n  candidate: workspace {} ({}), skill {}  → pass --workspace {}",
                        text("workspace"),
                        text("workspace_id"),
                        text("skill_id"),
                        text("workspace"),
                    )?;
                }
            }
            _ => match value.as_str() {
                Some(s) => write!(f, "\n  {key}: {s}")?,
                None => write!(f, "\n  {key}: {value}")?,
            },
        }
    }
    Ok(())
}

/// Builds a failure as an `anyhow::Error`.
pub fn fail(f: Failure) -> anyhow::Error {
    anyhow::Error::new(f)
}

/// An authenticated connection to one server.
pub struct Api {
    client: reqwest::Client,
    base: Url,
    /// The base URL as error messages show it (without any password).
    shown: String,
}

impl Api {
    pub fn new(conn: &Conn) -> anyhow::Result<Self> {
        let base = parse_base(&conn.url)?;
        let key = conn
            .key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| fail(missing_key()))?;
        let mut headers = HeaderMap::new();
        let mut auth = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            fail(Failure::local(
                "AUTH_REQUIRED",
                "the API key contains characters that cannot be sent in an HTTP header; check XMEMO_KEY",
            ))
        })?;
        auth.set_sensitive(true);
        headers.insert(AUTHORIZATION, auth);
        for (var, header) in [
            ("XMEMO_AGENT_ID", AGENT_ID_HEADER),
            ("XMEMO_AGENT_INSTANCE_ID", AGENT_INSTANCE_HEADER),
        ] {
            let Some(value) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            let value = HeaderValue::from_str(value.trim()).map_err(|_| {
                fail(Failure::input(format!(
                    "{var} contains characters that cannot be sent in an HTTP header"
                )))
            })?;
            headers.insert(header, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("xmemo-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| {
                fail(Failure::local(
                    "SERVICE_UNAVAILABLE",
                    format!("cannot set up the HTTP client: {e}"),
                ))
            })?;
        let mut redacted = base.clone();
        let _ = redacted.set_password(None);
        let shown = redacted.as_str().trim_end_matches('/').to_string();
        Ok(Self {
            client,
            base,
            shown,
        })
    }

    /// `<base>/api/v1/<segments…>?<query>`; each segment is percent-encoded on its own, and
    /// query pairs whose value is `None` are left out.
    pub fn url(&self, segments: &[&str], query: &[(&str, Option<&str>)]) -> anyhow::Result<Url> {
        // The URL parser drops `.` and `..` segments and an empty one changes the route, so
        // such values cannot be sent faithfully; none is a valid slug, id or logical path.
        if let Some(bad) = segments.iter().find(|s| matches!(**s, "" | "." | "..")) {
            return Err(fail(Failure::input(format!(
                "`{bad}` cannot be sent as part of a request path (empty, `.` and `..` segments never appear in slugs, revision ids or resource paths)"
            ))));
        }
        let mut url = self.base.clone();
        {
            let mut path = url.path_segments_mut().map_err(|()| {
                fail(Failure::input(format!(
                    "`{}` cannot be a base URL",
                    self.shown
                )))
            })?;
            path.pop_if_empty().extend(["api", "v1"]).extend(segments);
        }
        let pairs: Vec<(&str, &str)> = query
            .iter()
            .filter_map(|(k, v)| v.map(|v| (*k, v)))
            .collect();
        if !pairs.is_empty() {
            url.query_pairs_mut().extend_pairs(pairs);
        }
        Ok(url)
    }

    /// A JSON request; `None` for an empty (204) answer.
    pub async fn call(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> anyhow::Result<Option<Value>> {
        let mut request = self.client.request(method, url.clone());
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            return Err(server_error(status, &bytes, &url));
        }
        if status == StatusCode::NO_CONTENT || bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        serde_json::from_slice(&bytes).map(Some).map_err(|_| {
            fail(Failure::unexpected(format!(
                "{} answered {status} with something that is not JSON; is {} an xmemo server?",
                url.path(),
                self.shown
            )))
        })
    }

    /// A JSON request whose empty answer reads as `null`.
    pub async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        Ok(self.call(method, url, body).await?.unwrap_or(Value::Null))
    }

    pub async fn get(&self, url: Url) -> anyhow::Result<Value> {
        required(self.call(Method::GET, url, None).await?)
    }

    /// Every page of a paged list (`{"<list>": [...], "next_cursor"}`), followed from `url`
    /// at the largest page size, as one document of the same shape with `next_cursor: null`
    /// (the other fields are those of the first page).
    pub async fn get_all(&self, url: Url, list: &str) -> anyhow::Result<Value> {
        let page_size = xmemo_core::limits::PAGE_LIMIT_MAX.to_string();
        let mut first: Option<Value> = None;
        let mut rows: Vec<Value> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut page_url = url.clone();
            page_url
                .query_pairs_mut()
                .append_pair("limit", &page_size)
                .extend_pairs(cursor.as_deref().map(|c| ("cursor", c)));
            let mut page = self.get(page_url).await?;
            let items = page
                .get_mut(list)
                .and_then(|v| v.as_array_mut())
                .map(std::mem::take)
                .ok_or_else(|| {
                    fail(Failure::unexpected(format!(
                        "the server's answer has no `{list}` list"
                    )))
                })?;
            rows.extend(items);
            cursor = page
                .get("next_cursor")
                .and_then(Value::as_str)
                .map(str::to_string);
            first.get_or_insert(page);
            match &cursor {
                None => break,
                // A server that hands out a cursor twice would have this loop forever.
                Some(c) if !seen.insert(c.clone()) => {
                    return Err(fail(Failure::unexpected(
                        "the server repeated a page cursor",
                    )));
                }
                Some(_) => {}
            }
        }
        let mut whole = first.unwrap_or_else(|| json!({}));
        if let Some(obj) = whole.as_object_mut() {
            obj.insert(list.to_string(), Value::Array(rows));
            obj.insert("next_cursor".into(), Value::Null);
        }
        Ok(whole)
    }

    /// A GET whose answer is read as it comes, not as JSON.
    async fn get_response(&self, url: &Url) -> anyhow::Result<reqwest::Response> {
        self.client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| self.transport(e))
    }

    /// A raw download: the bytes and the `ETag` header when present.
    pub async fn get_bytes(&self, url: Url) -> anyhow::Result<(Vec<u8>, Option<String>)> {
        let response = self.get_response(&url).await?;
        let status = response.status();
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            return Err(server_error(status, &bytes, &url));
        }
        Ok((bytes.to_vec(), etag))
    }

    /// Connection-level failures name the server URL (never the key).
    fn transport(&self, e: reqwest::Error) -> anyhow::Error {
        let mut cause: &dyn std::error::Error = &e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        let base = &self.shown;
        let message = if e.is_timeout() {
            format!("the xmemo server at {base} did not answer in time ({cause})")
        } else if e.is_connect() {
            format!(
                "cannot reach the xmemo server at {base}: {cause}. Is `xmemo serve` running there? Set XMEMO_URL or pass --url."
            )
        } else {
            format!("request to the xmemo server at {base} failed: {cause}")
        };
        fail(Failure::Local {
            code: "SERVICE_UNAVAILABLE",
            message,
            retryable: true,
        })
    }
}

/// Typed view of a JSON answer; a shape mismatch is an unexpected answer.
pub fn decode<T: DeserializeOwned>(value: Value, what: &str) -> anyhow::Result<T> {
    serde_json::from_value(value).map_err(|e| {
        fail(Failure::unexpected(format!(
            "unexpected {what} from the server: {e}"
        )))
    })
}

/// An answer that must hold a document (an empty one is an error).
pub fn required(answer: Option<Value>) -> anyhow::Result<Value> {
    answer.ok_or_else(|| fail(Failure::unexpected("the server sent an empty answer")))
}

/// The member `key` of an answer, typed (`what` names it when it has another shape).
pub fn decode_field<T: DeserializeOwned>(
    value: &Value,
    key: &str,
    what: &str,
) -> anyhow::Result<T> {
    decode(value.get(key).cloned().unwrap_or(Value::Null), what)
}

/// An answer of another kind than the command asked for (`what`: the kind it expected).
pub fn not_answered_with(what: &str) -> anyhow::Error {
    fail(Failure::unexpected(format!(
        "the server did not answer with {what}"
    )))
}

fn parse_base(text: &str) -> anyhow::Result<Url> {
    // An empty XMEMO_URL means "not set".
    let text = if text.trim().is_empty() {
        super::DEFAULT_URL
    } else {
        text
    };
    let url = Url::parse(text.trim()).map_err(|e| {
        fail(Failure::input(format!(
            "the server URL `{text}` (XMEMO_URL or --url) is not valid: {e}"
        )))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(fail(Failure::input(format!(
            "the server URL `{text}` must start with http:// or https://"
        ))));
    }
    Ok(url)
}

fn missing_key() -> Failure {
    Failure::local(
        "AUTH_REQUIRED",
        "no API key: set XMEMO_KEY (or pass --key). On a fresh server the first admin key is in \
         <data-dir>/admin.key (default ./xmemo-data/admin.key), e.g. export XMEMO_KEY=$(cat xmemo-data/admin.key)",
    )
}

fn server_error(status: StatusCode, bytes: &[u8], url: &Url) -> anyhow::Error {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(body) if body.get("error").and_then(|e| e.get("code")).is_some() => {
            fail(Failure::Object { body })
        }
        _ => {
            let snippet: String = String::from_utf8_lossy(bytes).chars().take(200).collect();
            fail(Failure::Local {
                code: "SERVICE_UNAVAILABLE",
                message: format!(
                    "{} answered {status} without an xmemo error object: {}",
                    url.path(),
                    snippet.trim()
                ),
                retryable: status.is_server_error(),
            })
        }
    }
}

impl Api {
    /// A raw body (a ZIP, a SKILL.md) sent with its content type; the JSON answer.
    pub async fn send_bytes(
        &self,
        method: Method,
        url: Url,
        content_type: &str,
        body: Vec<u8>,
    ) -> anyhow::Result<Value> {
        let response = self
            .client
            .request(method, url.clone())
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            return Err(server_error(status, &bytes, &url));
        }
        serde_json::from_slice(&bytes).map_err(|_| {
            fail(Failure::unexpected(format!(
                "{} answered {status} with something that is not JSON; is {} an xmemo server?",
                url.path(),
                self.base
            )))
        })
    }
}

impl Api {
    /// Streams a download into `path` (through `<path>.partial`, renamed at the end, so a
    /// failed download leaves no partial file); the number of bytes written.
    pub async fn download(&self, url: Url, path: &std::path::Path) -> anyhow::Result<u64> {
        use std::io::Write;
        let mut response = self.get_response(&url).await?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
            return Err(server_error(status, &bytes, &url));
        }
        let cannot = |e: std::io::Error| {
            fail(Failure::input(format!(
                "cannot write {}: {e}",
                path.display()
            )))
        };
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = std::path::PathBuf::from(partial);
        let result = async {
            let mut file = std::fs::File::create(&partial).map_err(cannot)?;
            let mut written = 0u64;
            while let Some(chunk) = response.chunk().await.map_err(|e| self.transport(e))? {
                file.write_all(&chunk).map_err(cannot)?;
                written += chunk.len() as u64;
            }
            file.sync_all().map_err(cannot)?;
            std::fs::rename(&partial, path).map_err(cannot)?;
            Ok::<u64, anyhow::Error>(written)
        }
        .await;
        if result.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        let written = result?;
        Ok(written)
    }
}
