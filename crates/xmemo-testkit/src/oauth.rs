//! An OAuth client for tests: PKCE pairs, dynamic registration, the authorization request
//! driven through the consent page with a [`Browser`], and token requests, all over HTTP.

use crate::browser::{Browser, urlencode};
use base64::Engine;
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A PKCE verifier and its S256 challenge.
pub fn pkce() -> (String, String) {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let verifier = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The status, JSON body and headers of an answer.
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

async fn answer(r: reqwest::Response) -> Answer {
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap_or_default();
    Answer {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        headers,
    }
}

pub async fn register(base: &str, body: Value) -> Answer {
    let r = reqwest::Client::new()
        .post(format!("{base}/oauth/register"))
        .json(&body)
        .send()
        .await
        .expect("register");
    answer(r).await
}

/// Registers a public client with one loopback redirect URI; returns its client_id.
pub async fn register_public(base: &str, name: &str) -> String {
    let a = register(
        base,
        json!({
            "client_name": name,
            "redirect_uris": ["http://127.0.0.1/callback"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        }),
    )
    .await;
    assert_eq!(a.status, 201, "register: {}", a.body);
    a.body["client_id"].as_str().expect("client_id").to_string()
}

/// A form POST to `path` (token, revoke), optionally with HTTP Basic credentials.
pub async fn form(
    base: &str,
    path: &str,
    fields: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> Answer {
    let body = fields
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut req = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some((id, secret)) = basic {
        let pair = format!("{}:{}", urlencode(id), urlencode(secret));
        req = req.header(
            "authorization",
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ),
        );
    }
    answer(req.send().await.expect("form post")).await
}

/// The query parameters of a URL (the redirect back to the client).
pub fn query_of(url: &str) -> std::collections::BTreeMap<String, String> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Default::default();
    };
    parsed
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// An authorization request.
pub struct Request<'a> {
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub challenge: &'a str,
    pub method: &'a str,
    pub scope: &'a str,
    pub state: &'a str,
    pub resource: Option<&'a str>,
}

impl Request<'_> {
    pub fn query(&self) -> String {
        let mut q = format!(
            "response_type=code&client_id={}&redirect_uri={}&code_challenge={}&code_challenge_method={}&scope={}&state={}",
            urlencode(self.client_id),
            urlencode(self.redirect_uri),
            urlencode(self.challenge),
            urlencode(self.method),
            urlencode(self.scope),
            urlencode(self.state),
        );
        if let Some(r) = self.resource {
            q.push_str(&format!("&resource={}", urlencode(r)));
        }
        q
    }
}

/// Opens the authorization URL in a signed-in `browser`, approves on the consent page, and
/// returns where the server sent the browser back (the client's redirect URI with `code`,
/// `state` and `iss`), or the page that answered instead (`Err`).
pub async fn approve(
    browser: &mut Browser,
    request: &Request<'_>,
) -> Result<String, crate::browser::Page> {
    let page = browser
        .get(&format!("/oauth/authorize?{}", request.query()))
        .await;
    if page.status.as_u16() != 200 {
        return Err(page);
    }
    let mut fields: Vec<(String, String)> = [
        "csrf",
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
        "resource",
    ]
    .iter()
    .filter_map(|k| page.field(k).map(|v| (k.to_string(), v)))
    .collect();
    fields.push(("decision".into(), "approve".into()));
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let done = browser.post_form("/oauth/authorize", &pairs).await;
    if done.status.as_u16() != 303 {
        return Err(done);
    }
    Ok(done.location())
}

/// The whole flow for a public client: sign in as `handle`, approve, exchange the code.
/// Returns the token answer.
pub async fn tokens_for(base: &str, handle: &str, password: &str, client_id: &str) -> Answer {
    let mut browser = Browser::new(base);
    let signed = browser.sign_in(handle, password, "/login").await;
    assert_eq!(signed.status.as_u16(), 303, "sign-in: {}", signed.body);
    let (verifier, challenge) = pkce();
    let resource = format!("{base}/mcp");
    let back = approve(
        &mut browser,
        &Request {
            client_id,
            redirect_uri: "http://127.0.0.1:5555/callback",
            challenge: &challenge,
            method: "S256",
            scope: "memory:read memory:write",
            state: "st",
            resource: Some(&resource),
        },
    )
    .await
    .unwrap_or_else(|p| panic!("consent: {} {}", p.status, p.body));
    let code = query_of(&back).get("code").cloned().expect("code");
    form(
        base,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:5555/callback"),
            ("code_verifier", &verifier),
            ("client_id", client_id),
            ("resource", &resource),
        ],
        None,
    )
    .await
}
