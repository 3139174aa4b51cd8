//! A minimal browser for the sign-in and consent pages: keeps cookies, follows no redirect
//! (tests look at each one), and sends the headers a browser sends on a form post.

use reqwest::header::{HeaderMap, SET_COOKIE};
use reqwest::{Client, StatusCode};
use std::collections::BTreeMap;

pub struct Browser {
    pub base: String,
    client: Client,
    pub cookies: BTreeMap<String, String>,
    /// The `Origin` sent with form posts (`None`: none at all, like a non-browser client).
    pub origin: Option<String>,
    /// Extra headers on every request (e.g. `X-Forwarded-For` behind a trusted proxy).
    pub extra: Vec<(String, String)>,
}

pub struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Page {
    pub fn location(&self) -> String {
        self.headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }

    /// The value of the hidden form field `name` (the first one).
    pub fn field(&self, name: &str) -> Option<String> {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self.body.find(&marker)? + marker.len();
        let end = self.body[start..].find('"')? + start;
        Some(html_unescape(&self.body[start..end]))
    }

    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    }

    /// The `data-error-code` of the page's error paragraph, if any.
    pub fn error_code(&self) -> Option<String> {
        let marker = "data-error-code=\"";
        let start = self.body.find(marker)? + marker.len();
        let end = self.body[start..].find('"')? + start;
        Some(self.body[start..end].to_string())
    }
}

pub fn html_unescape(s: &str) -> String {
    s.replace("&#x2f;", "/")
        .replace("&#47;", "/")
        .replace("&#x3d;", "=")
        .replace("&#61;", "=")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

impl Browser {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
            client: Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            cookies: BTreeMap::new(),
            origin: Some(base.trim_end_matches('/').to_string()),
            extra: Vec::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        }
    }

    async fn finish(&mut self, response: reqwest::Response) -> Page {
        let status = response.status();
        let headers = response.headers().clone();
        for set in headers.get_all(SET_COOKIE) {
            let text = set.to_str().unwrap_or_default();
            let pair = text.split(';').next().unwrap_or_default();
            if let Some((k, v)) = pair.split_once('=') {
                let expired = text.contains("Max-Age=0");
                if expired || v.is_empty() {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_string(), v.to_string());
                }
            }
        }
        let body = response.text().await.unwrap_or_default();
        Page {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let mut req = self.client.get(self.url(path));
        if !self.cookies.is_empty() {
            req = req.header("cookie", self.cookie_header());
        }
        for (k, v) in &self.extra {
            req = req.header(k, v);
        }
        let response = req.send().await.expect("GET");
        self.finish(response).await
    }

    pub async fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = fields
            .iter()
            .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let mut req = self
            .client
            .post(self.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if !self.cookies.is_empty() {
            req = req.header("cookie", self.cookie_header());
        }
        if let Some(origin) = &self.origin {
            req = req
                .header("origin", origin)
                .header("sec-fetch-site", "same-origin");
        }
        for (k, v) in &self.extra {
            req = req.header(k, v);
        }
        let response = req.send().await.expect("POST");
        self.finish(response).await
    }

    /// A `multipart/form-data` form post (file inputs as `(name, Some(file name), bytes)`),
    /// with the same cookies and origin headers as [`Browser::post_form`].
    pub async fn post_multipart(
        &mut self,
        path: &str,
        fields: &[(&str, Option<&str>, &[u8])],
    ) -> Page {
        const BOUNDARY: &str = "xmemo-testkit-boundary-7f3a";
        let mut body = Vec::new();
        for (name, file_name, bytes) in fields {
            body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
            let disposition = match file_name {
                Some(f) => format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\
                     Content-Type: application/octet-stream\r\n\r\n"
                ),
                None => format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n"),
            };
            body.extend_from_slice(disposition.as_bytes());
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        let mut req = self
            .client
            .post(self.url(path))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(body);
        if !self.cookies.is_empty() {
            req = req.header("cookie", self.cookie_header());
        }
        if let Some(origin) = &self.origin {
            req = req
                .header("origin", origin)
                .header("sec-fetch-site", "same-origin");
        }
        for (k, v) in &self.extra {
            req = req.header(k, v);
        }
        let response = req.send().await.expect("POST");
        self.finish(response).await
    }

    /// Opens the sign-in form and submits it; the page that answered.
    pub async fn sign_in(&mut self, handle: &str, password: &str, next: &str) -> Page {
        let form = self.get(&format!("/login?next={}", urlencode(next))).await;
        let csrf = form.field("csrf").unwrap_or_default();
        self.post_form(
            "/login",
            &[
                ("handle", handle),
                ("password", password),
                ("next", next),
                ("csrf", &csrf),
            ],
        )
        .await
    }

    pub fn session(&self) -> Option<&String> {
        self.cookies.get("xmemo_session")
    }
}

pub fn urlencode(s: &str) -> String {
    const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(s, ESCAPED).to_string()
}
