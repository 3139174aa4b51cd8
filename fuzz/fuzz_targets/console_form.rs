#![no_main]
//! Arbitrary bodies and headers posted to the console's forms of the whole application, in
//! process, on a real (temporary) SQLite store built once, signed out and signed in with a
//! live session. Asserts that nothing panics, nothing answers 5xx, every answer completes
//! and is bounded by what was sent, a signed-out post is sent to sign in (or refused as
//! cross-site) and a post without the session's form token changes nothing (a 4xx).
//!
//! Input: the first byte picks the route and the headers (see [`Flags`]), the second how
//! many times the rest is repeated (to reach the routes' body limits), the rest is the body.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tower::ServiceExt;
use xmemo_server::Service;
use xmemo_server::app::build_app;
use xmemo_server::bootstrap::bootstrap_admin;
use xmemo_server::fetch::FetchConfig;
use xmemo_server::state::ServerInfo;
use xmemo_store::Store;
use xmemo_store::sqlite::SqliteStore;

const PUBLIC_URL: &str = "http://localhost";

struct World {
    rt: tokio::runtime::Runtime,
    app: axum::Router,
    /// The session cookie's secret and the form token of that session.
    session: String,
    token: String,
    _dir: tempfile::TempDir,
}

static WORLD: OnceLock<World> = OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(|| {
        std::panic::set_hook(Box::new(|info| {
            eprintln!("panic: {info}");
            std::process::abort();
        }));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("tempdir");
        let (app, session) = rt.block_on(async {
            let store: Arc<dyn Store> = Arc::new(
                SqliteStore::open(&dir.path().join("xmemo.db"))
                    .await
                    .expect("sqlite"),
            );
            // A URL import must never leave the process: every source is a loopback address
            // over plain http, which the outbound rules refuse before connecting.
            let fetch = FetchConfig {
                github_api_base: "http://127.0.0.1:9".into(),
                clawhub_base: "http://127.0.0.1:9".into(),
                timeout: Duration::from_secs(1),
                ..FetchConfig::default()
            };
            let service = Service::new(store).with_fetch_config(fetch);
            bootstrap_admin(&service, dir.path())
                .await
                .expect("bootstrap")
                .expect("fresh database");
            let password =
                std::fs::read_to_string(dir.path().join("admin.password")).expect("admin password");
            let signed = service
                .sign_in("admin", password.trim(), None, None, None)
                .await
                .expect("sign in");
            let info = ServerInfo {
                public_url: PUBLIC_URL.into(),
                version: "fuzz",
                ..Default::default()
            };
            (build_app(service, info), signed.secret)
        });
        let token = xmemo_server::web::guard::session_token(&session);
        World {
            rt,
            app,
            session,
            token,
            _dir: dir,
        }
    })
}

/// Every console form, by the low four bits of the flags. Account deletion and the password
/// change are left out: the first would end the world's session, the second hashes a
/// password per input (tested elsewhere).
const ROUTES: [&str; 16] = [
    "/console/preview",
    "/console/preview",
    "/console/skills/save",
    "/console/import",
    "/console/skills/personal/fuzz/lifecycle",
    "/console/skills/personal/fuzz/archive",
    "/console/skill/lifecycle",
    "/console/skill/archive",
    "/console/memories/forget",
    "/console/memories/restore",
    "/console/keys/create",
    "/console/keys/revoke",
    "/console/grants/revoke",
    "/console/members/action",
    "/console/preview",
    "/console/skills/save",
];

/// The choices one input byte encodes.
struct Flags(u8);

impl Flags {
    fn path(&self) -> &'static str {
        ROUTES[usize::from(self.0 & 0x0f)]
    }
    fn multipart(&self) -> bool {
        matches!(self.path(), "/console/skills/save" | "/console/import")
    }
    fn signed_in(&self) -> bool {
        self.0 & 0x10 == 0
    }
    /// The session's form token goes first in the form.
    fn with_token(&self) -> bool {
        self.0 & 0x20 == 0
    }
    /// The browser says the post comes from another site.
    fn cross_site(&self) -> bool {
        self.0 & 0xc0 == 0xc0
    }
    /// No `Content-Type` (or, for the multipart routes, one without a boundary).
    fn odd_type(&self) -> bool {
        self.0 & 0xc0 == 0x40
    }
}

const BOUNDARY: &str = "fuzzboundary";

fn request(w: &World, flags: &Flags, body: Vec<u8>) -> Request<Body> {
    let mut b = Request::builder()
        .method(Method::POST)
        .uri(flags.path())
        .header(header::HOST, "localhost");
    let content_type = match (flags.multipart(), flags.odd_type()) {
        (_, true) if flags.0 & 1 == 0 => None,
        (true, true) => Some("multipart/form-data".to_string()),
        (false, true) => Some("text/plain".to_string()),
        (true, false) => Some(format!("multipart/form-data; boundary={BOUNDARY}")),
        (false, false) => Some("application/x-www-form-urlencoded".to_string()),
    };
    if let Some(t) = content_type {
        b = b.header(header::CONTENT_TYPE, t);
    }
    if flags.signed_in() {
        b = b.header(header::COOKIE, format!("xmemo_session={}", w.session));
    }
    if flags.cross_site() {
        b = b.header("sec-fetch-site", "cross-site");
    } else {
        b = b
            .header(header::ORIGIN, PUBLIC_URL)
            .header("sec-fetch-site", "same-origin");
    }
    let body = match (flags.with_token(), flags.multipart()) {
        (false, _) => body,
        (true, false) => {
            let mut with = format!("csrf={}&", w.token).into_bytes();
            with.extend_from_slice(&body);
            with
        }
        (true, true) => {
            let mut with = format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{}\r\n",
                w.token
            )
            .into_bytes();
            with.extend_from_slice(&body);
            with
        }
    };
    b.body(Body::from(body)).expect("request")
}

async fn check(flags: &Flags, sent: usize, response: axum::response::Response) {
    let status = response.status();
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = tokio::time::timeout(
        Duration::from_secs(30),
        axum::body::to_bytes(response.into_body(), 64 << 20),
    )
    .await
    .expect("the answer completes")
    .expect("the body reads");
    let text = String::from_utf8_lossy(&bytes);
    assert!(!status.is_server_error(), "{status}: {text}");
    // A page shows back at most what was sent (escaped: up to 6 bytes for one) around its
    // chrome; never something that grows faster than the input.
    assert!(
        bytes.len() <= (1 << 20) + 8 * sent,
        "{status}: an answer of {} bytes to {sent} bytes",
        bytes.len()
    );
    if flags.cross_site() {
        assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    } else if !flags.signed_in() {
        assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
        assert!(location.starts_with("/login?"), "{location}");
    } else if location.starts_with("/login") {
        panic!("the world's session is not live: {status} {location}");
    } else if flags.with_token() && flags.path() == "/console/preview" && !flags.odd_type() {
        // The preview with the token renders whatever it is sent, within its limits.
        assert!(
            matches!(status.as_u16(), 200 | 413 | 422),
            "{status}: {text}"
        );
    } else if !flags.with_token() {
        // The body is free to carry a `csrf` field, but not the session's token: the libFuzzer
        // input cannot know it.
        assert!(
            status.is_client_error(),
            "{status} without the token: {text}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Some((&times, body)) = rest.split_first() else {
        return;
    };
    // Up to ~255 copies: past the forms' 64 KiB and the preview's limit for longer inputs.
    let repeated = body.repeat(usize::from(times).max(1));
    let flags = Flags(flags);
    let w = world();
    let sent = repeated.len();
    let req = request(w, &flags, repeated);
    let app = w.app.clone();
    w.rt.block_on(async move {
        let response = app.oneshot(req).await.expect("infallible");
        check(&flags, sent, response).await;
    });
});
