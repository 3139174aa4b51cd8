//! The OpenAPI document and the server agree.
//!
//! 1. The document is OpenAPI 3.1 JSON whose `$ref`s all resolve, and it is internally
//!    consistent (unique operation ids, path parameters declared, strict request bodies).
//! 2. The server serves it byte for byte, without credentials, at every documented address.
//! 3. Every documented operation exists on a real server: protected ones answer an anonymous
//!    request with 401 AUTH_REQUIRED in the SPEC error shape, public ones with 200.
//! 4. Conversely, paths and methods the document does not list are NOT_FOUND, and every route
//!    the REST source declares is documented.

use reqwest::Method;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use xmemo_server::Service;
use xmemo_server::app::{OPENAPI_JSON, build_app, serve};
use xmemo_server::state::ServerInfo;

const DOC: &str = include_str!("../openapi.json");
const METHODS: [&str; 5] = ["get", "post", "put", "delete", "patch"];

/// The REST route declarations live in these sources, scanned for routes missing from the
/// document. (The public routes of `app.rs` — `/healthz`, `/readyz`, `/openapi.json` — are
/// checked over HTTP.)
fn route_sources() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rest");
    let mut sources: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read source");
            (path.display().to_string(), text)
        })
        .collect();
    sources.sort();
    sources
}

fn doc() -> Value {
    serde_json::from_str(DOC).expect("openapi.json is valid JSON")
}

/// One documented operation.
struct Operation {
    /// The path as the document writes it, e.g. `/skills/{slug}`.
    path: String,
    method: String,
    /// The server URL that applies (path-level `servers` override, else the document's).
    server: String,
    public: bool,
    op: Value,
    /// Parameters declared on the path item and on the operation.
    parameters: Vec<Value>,
}

fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => doc
            .pointer(r.strip_prefix('#').expect("local $ref"))
            .unwrap_or_else(|| panic!("unresolved $ref {r}")),
        None => v,
    }
}

fn operations(doc: &Value) -> Vec<Operation> {
    let default_server = doc["servers"][0]["url"]
        .as_str()
        .expect("document servers[0].url")
        .to_string();
    let global_public = doc["security"].as_array().is_some_and(|s| s.is_empty());
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths object") {
        let server = item["servers"][0]["url"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| default_server.clone());
        let path_params: Vec<Value> = item["parameters"]
            .as_array()
            .map(|a| a.iter().map(|p| resolve(doc, p).clone()).collect())
            .unwrap_or_default();
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let public = match op.get("security") {
                Some(s) => s.as_array().is_some_and(|s| s.is_empty()),
                None => global_public,
            };
            let mut parameters = path_params.clone();
            if let Some(own) = op["parameters"].as_array() {
                parameters.extend(own.iter().map(|p| resolve(doc, p).clone()));
            }
            ops.push(Operation {
                path: path.clone(),
                method: method.to_string(),
                server: server.clone(),
                public,
                op: op.clone(),
                parameters,
            });
        }
    }
    ops
}

fn template_params(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(str::to_string)
        .collect()
}

/// A concrete URL path for a documented path template.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(
            |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                None => seg,
                Some("slug") => "demo",
                Some("revision_id") => "rev_x",
                Some("path") => "a/b.txt",
                Some("workspace") => "personal",
                Some("account") => "bob",
                Some("key_id") => "key_x",
                Some("memory_id") => "mem_x",
                Some("invitation_id") => "inv_x",
                Some("grant_id") => "grant_x",
                Some(other) => panic!("no placeholder for path parameter `{other}`; add one"),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

/// Every URL prefix an operation is served under: the server URL, plus `/v1` for `/api/v1`.
fn prefixes(server: &str) -> Vec<String> {
    let base = server.trim_end_matches('/').to_string();
    if base == "/api/v1" {
        vec![base, "/v1".to_string()]
    } else {
        vec![base]
    }
}

fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == "$ref" {
                    out.push(child.as_str().expect("$ref is a string"));
                } else if k == "mapping" {
                    // Discriminator mappings are references too.
                    if let Some(m) = child.as_object() {
                        out.extend(m.values().filter_map(Value::as_str));
                    }
                } else {
                    collect_refs(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

// ------------------------------------------------------------------------------------------
// 1. The document itself
// ------------------------------------------------------------------------------------------

#[test]
fn document_is_openapi_3_1_and_every_ref_resolves() {
    let doc = doc();
    let version = doc["openapi"].as_str().expect("openapi field");
    assert!(
        version.starts_with("3.1."),
        "openapi {version} is not 3.1.x"
    );
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    assert_eq!(doc["servers"][0]["url"], "/api/v1");
    assert_eq!(OPENAPI_JSON, DOC, "the server embeds this very file");

    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in &refs {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("$ref {r} leaves the document"));
        assert!(doc.pointer(pointer).is_some(), "$ref {r} does not resolve");
    }

    // Every reusable parameter and response is used (schemas may stand alone, e.g. ToolResult).
    let used: BTreeSet<&str> = refs.iter().copied().collect();
    for kind in ["parameters", "responses"] {
        for name in doc["components"][kind].as_object().expect(kind).keys() {
            let r = format!("#/components/{kind}/{name}");
            assert!(used.contains(r.as_str()), "{r} is never used");
        }
    }

    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["bearerAuth"]["type"], "http");
    assert_eq!(schemes["bearerAuth"]["scheme"], "bearer");
    assert_eq!(schemes["apiKeyHeader"]["type"], "apiKey");
    assert_eq!(schemes["apiKeyHeader"]["in"], "header");
    assert_eq!(schemes["apiKeyHeader"]["name"], "X-API-Key");
    for requirement in doc["security"].as_array().expect("global security") {
        for scheme in requirement.as_object().expect("requirement").keys() {
            assert!(
                schemes.get(scheme).is_some(),
                "unknown security scheme {scheme}"
            );
        }
    }

    let codes: BTreeSet<&str> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("ErrorCode enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let spec_codes: BTreeSet<&str> = [
        "VALIDATION_ERROR",
        "PAYLOAD_TOO_LARGE",
        "AUTH_REQUIRED",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "CONFLICT",
        "AMBIGUOUS_SLUG",
        "REVISION_PIN_REQUIRED",
        "RATE_LIMITED",
        "SANDBOX_UNAVAILABLE",
        "SAFETY_BLOCKED",
        "SERVICE_UNAVAILABLE",
    ]
    .into();
    assert_eq!(
        codes, spec_codes,
        "ErrorCode lists exactly the SPEC §10 codes and SAFETY_BLOCKED (docs/contract.md)"
    );
}

#[test]
fn operations_are_consistent() {
    let doc = doc();
    let ops = operations(&doc);
    assert!(ops.len() >= 20, "only {} operations documented", ops.len());
    let mut ids = BTreeSet::new();
    for o in &ops {
        let here = format!("{} {}", o.method.to_uppercase(), o.path);
        let id = o.op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{here}: operationId"));
        assert!(
            ids.insert(id.to_string()),
            "{here}: duplicate operationId {id}"
        );
        assert!(
            o.op["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{here}: summary"
        );
        let responses = o.op["responses"].as_object().expect("responses");
        assert!(
            responses.keys().any(|k| k.starts_with('2')),
            "{here}: no success response"
        );

        // Template variables and path parameters name each other exactly.
        let declared: BTreeSet<String> = o
            .parameters
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| {
                assert_eq!(p["required"], true, "{here}: path parameters are required");
                p["name"].as_str().expect("parameter name").to_string()
            })
            .collect();
        let templated: BTreeSet<String> = template_params(&o.path).into_iter().collect();
        assert_eq!(declared, templated, "{here}: path parameters");

        if o.public {
            continue;
        }
        for status in ["401", "422", "503"] {
            assert!(
                responses.contains_key(status),
                "{here}: no {status} response"
            );
        }
        for (status, response) in responses {
            if status.starts_with('4') || status.starts_with('5') {
                let schema = &resolve(&doc, response)["content"]["application/json"]["schema"];
                assert_eq!(
                    schema["$ref"], "#/components/schemas/ErrorResponse",
                    "{here}: {status} uses the ErrorResponse schema"
                );
            }
        }

        // JSON request bodies mirror `deny_unknown_fields`; raw ones (a ZIP, a SKILL.md) are
        // typed strings.
        if let Some(body) = o.op.get("requestBody") {
            let content = body["content"].as_object().expect("requestBody content");
            assert!(
                !content.is_empty(),
                "{here}: request body without a media type"
            );
            for (media_type, media) in content {
                let schema = resolve(&doc, &media["schema"]);
                if media_type == "application/json" {
                    assert_eq!(
                        schema["additionalProperties"], false,
                        "{here}: request body schema must refuse unknown fields"
                    );
                } else {
                    assert_eq!(schema["type"], "string", "{here}: raw {media_type} body");
                }
            }
            assert!(responses.contains_key("413"), "{here}: no 413 response");
        }

        // Writes document the attribution headers.
        let writes = o.method != "get" && id != "recallSkill";
        if writes {
            let headers: BTreeSet<&str> = o
                .parameters
                .iter()
                .filter(|p| p["in"] == "header")
                .filter_map(|p| p["name"].as_str())
                .collect();
            for h in ["X-Memory-OS-Agent-ID", "X-Memory-OS-Agent-Instance-ID"] {
                assert!(headers.contains(h), "{here}: missing header parameter {h}");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// A real server
// ------------------------------------------------------------------------------------------

struct TestServer {
    base: String,
    service: Service,
    _dir: tempfile::TempDir,
}

async fn start() -> TestServer {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = xmemo_store::sqlite::SqliteStore::open(&dir.path().join("x.db"))
        .await
        .expect("open store");
    // What `xmemo serve` does at start (else /readyz says the search is still building).
    xmemo_store::Store::warm_search(&store)
        .await
        .expect("search built");
    let service = Service::new(Arc::new(store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let app = build_app(
        service.clone(),
        ServerInfo {
            public_url: base.clone(),
            version: "test",
            ..Default::default()
        },
    );
    tokio::spawn(serve(listener, app, std::future::pending()));
    TestServer {
        base,
        service,
        _dir: dir,
    }
}

fn assert_error(body: &Value, code: &str, what: &str) {
    let error = body
        .get("error")
        .unwrap_or_else(|| panic!("{what}: not the SPEC error shape: {body}"));
    assert_eq!(error["code"], code, "{what}: {body}");
    assert!(error["message"].is_string(), "{what}: message: {body}");
    assert!(error["retryable"].is_boolean(), "{what}: retryable: {body}");
    assert!(
        error["request_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("req_")),
        "{what}: request_id: {body}"
    );
    let allowed: BTreeSet<&str> = ["code", "message", "retryable", "details", "request_id"].into();
    for key in error.as_object().expect("error object").keys() {
        assert!(
            allowed.contains(key.as_str()),
            "{what}: unexpected field {key}"
        );
    }
}

// ------------------------------------------------------------------------------------------
// 2. Served as is, without credentials
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn document_is_served_identically_without_credentials() {
    let server = start().await;
    let client = reqwest::Client::new();
    for path in ["/openapi.json", "/api/v1/openapi.json", "/v1/openapi.json"] {
        let response = client
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200, "{path}");
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert!(
            content_type.starts_with("application/json"),
            "{path}: content-type {content_type}"
        );
        let body = response.text().await.expect("body");
        assert_eq!(body, DOC, "{path} serves openapi.json byte for byte");
    }
}

// ------------------------------------------------------------------------------------------
// 3. Every documented operation exists (and is protected unless documented public)
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn every_documented_operation_is_routed_and_protected() {
    let server = start().await;
    let client = reqwest::Client::new();
    let doc = doc();
    let ops = operations(&doc);
    let mut checked = 0;
    for o in &ops {
        for prefix in prefixes(&o.server) {
            let url = format!("{}{prefix}{}", server.base, concrete(&o.path));
            let method = Method::from_bytes(o.method.to_uppercase().as_bytes()).expect("method");
            let what = format!("{method} {url}");
            let response = client
                .request(method, &url)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let status = response.status().as_u16();
            if o.public {
                assert_eq!(status, 200, "{what}: public operation");
                continue;
            }
            assert_eq!(status, 401, "{what}: expected 401 without credentials");
            assert!(
                response.headers().contains_key("www-authenticate"),
                "{what}: 401 without WWW-Authenticate"
            );
            let body: Value = response
                .json()
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_error(&body, "AUTH_REQUIRED", &what);
            assert_eq!(body["error"]["retryable"], false, "{what}");
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} protected requests checked");
}

// ------------------------------------------------------------------------------------------
// 4. What the document does not list does not exist
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn undocumented_paths_and_methods_are_not_found() {
    let server = start().await;
    let client = reqwest::Client::new();
    let doc = doc();

    for path in [
        "/api/v1/nope",
        "/v1/nope",
        "/nope",
        "/api/v1",
        "/api/v2/skills",
        "/api/v1/skills/demo/nope",
        "/api/v1/healthz",
        "/api/v1/workspaces/personal",
        "/api/v1/keys/key_x/nope",
    ] {
        for method in [Method::GET, Method::POST] {
            let what = format!("{method} {path}");
            let response = client
                .request(method, format!("{}{path}", server.base))
                .send()
                .await
                .expect("request");
            assert_eq!(response.status(), 404, "{what}");
            let body: Value = response
                .json()
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_error(&body, "NOT_FOUND", &what);
        }
    }

    // Documented paths with a method the document does not list.
    let mut documented: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for o in operations(&doc) {
        documented
            .entry((o.server.clone(), o.path.clone()))
            .or_default()
            .insert(o.method.clone());
    }
    for ((server_url, path), methods) in &documented {
        for method in ["get", "post", "put", "delete", "patch"] {
            if methods.contains(method) {
                continue;
            }
            for prefix in prefixes(server_url) {
                let url = format!("{}{prefix}{}", server.base, concrete(path));
                let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
                let what = format!("{m} {url}");
                let response = client.request(m, &url).send().await.expect("request");
                assert_eq!(response.status(), 404, "{what}: undocumented method");
                let body: Value = response
                    .json()
                    .await
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_error(&body, "NOT_FOUND", &what);
            }
        }
    }

    // The lifecycle actions are one route with an `{action}` segment on the server; an action
    // the document does not list is refused once the caller is known.
    let (_, key) = server
        .service
        .bootstrap()
        .await
        .expect("bootstrap")
        .expect("empty database");
    for prefix in ["/api/v1", "/v1"] {
        let url = format!("{}{prefix}/skills/demo/revisions/rev_x/nope", server.base);
        let response = client
            .post(&url)
            .bearer_auth(&key.key)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 404, "POST {url}");
        let body: Value = response.json().await.expect("json");
        assert_error(&body, "NOT_FOUND", &url);
    }
}

// ------------------------------------------------------------------------------------------
// 4b. Every route the source declares is documented
// ------------------------------------------------------------------------------------------

/// `(method, path)` for every `.route("path", get(…).post(…))` in a source file.
fn declared_routes(src: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find(".route(") {
        rest = &rest[i + ".route(".len()..];
        let mut depth = 1;
        let mut end = rest.len();
        for (j, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        let args = &rest[..end];
        let open = args.find('"').expect("route path literal");
        let close = open + 1 + args[open + 1..].find('"').expect("route path literal end");
        let path = &args[open + 1..close];
        let handlers = &args[close + 1..];
        for method in METHODS {
            let needle = format!("{method}(");
            let found = handlers.match_indices(&needle).any(|(at, _)| {
                !handlers[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if found {
                out.push((method.to_string(), path.to_string()));
            }
        }
    }
    out
}

/// Whether a server route pattern (`{param}`, `{*wildcard}`) covers a documented path.
fn route_covers(route: &str, documented: &str) -> bool {
    let r: Vec<&str> = route.trim_start_matches('/').split('/').collect();
    let d: Vec<&str> = documented.trim_start_matches('/').split('/').collect();
    for (i, seg) in r.iter().enumerate() {
        if seg.starts_with("{*") {
            return d.len() > i;
        }
        let Some(doc_seg) = d.get(i) else {
            return false;
        };
        if seg.starts_with('{') {
            // A parameter covers a literal (e.g. `{action}` → `publish`) or a parameter.
            continue;
        }
        if seg != doc_seg {
            return false;
        }
    }
    r.len() == d.len()
}

#[test]
fn every_declared_route_is_documented_and_vice_versa() {
    let doc = doc();
    let ops = operations(&doc);
    let mut routes = Vec::new();
    for (file, src) in route_sources() {
        for (method, path) in declared_routes(&src) {
            routes.push((file.clone(), method, path));
        }
    }
    assert!(
        routes.len() >= 20,
        "the route scanner found only {} routes: {routes:?}",
        routes.len()
    );
    for (file, method, path) in &routes {
        assert!(
            ops.iter()
                .any(|o| &o.method == method && route_covers(path, &o.path)),
            "{file}: {} {path} is routed but not in openapi.json",
            method.to_uppercase()
        );
    }
    for o in ops.iter().filter(|o| !o.public) {
        assert!(
            routes
                .iter()
                .any(|(_, m, p)| m == &o.method && route_covers(p, &o.path)),
            "{} {} is documented but no route declares it",
            o.method.to_uppercase(),
            o.path
        );
    }
}
