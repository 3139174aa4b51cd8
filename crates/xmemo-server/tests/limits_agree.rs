//! The limits the published schemas state are the ones the server enforces:
//! `xmemo_core::limits` (and the slug rule of `xmemo_core::validate`).
//!
//! 1. Every upper bound (`maxLength`, `maximum`, `maxItems`, …) anywhere in `openapi.json`
//!    and in the input schemas a real server lists over MCP `tools/list` is in the tables
//!    below, and equals its constant; so are the listed lower bounds, patterns and defaults.
//!    A new bound that is not tied to a constant fails the test, and so does changing a
//!    constant without the schema (the MCP schemas are built from the constants; the OpenAPI
//!    document is a static file).
//! 2. Each MCP tool argument and the REST request field it mirrors have the same bounds.
//! 3. The `schemars` derive of `ExecuteRequest` carries the same bounds.

mod mcp_harness;

use mcp_harness::McpServer;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use xmemo_core::limits::*;
use xmemo_core::validate::SLUG_PATTERN;
use xmemo_server::state::McpConfig;

const DOC: &str = include_str!("../openapi.json");

/// Keywords that cap a value; every occurrence must be accounted for.
const CEILINGS: &[&str] = &[
    "maxLength",
    "maximum",
    "exclusiveMaximum",
    "maxItems",
    "maxProperties",
];

/// Keywords compared between an MCP argument and its REST field.
const BOUNDS: &[&str] = &[
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// Bounds that are not content limits of `xmemo_core::limits`: they belong to the import
/// routes (the upload's recorded file name, the outbound fetch's URL rule in
/// `service/fetch.rs`).
const NOT_FROM_LIMITS: &[&str] = &[
    "/components/parameters/FilenameQuery/schema",
    "/components/schemas/ImportUrlRequest/properties/url",
];

type Expect = (&'static str, Vec<(&'static str, Value)>);

fn slug() -> Vec<(&'static str, Value)> {
    vec![
        ("minLength", json!(1)),
        ("maxLength", json!(SLUG_MAX_CHARS)),
        ("pattern", json!(SLUG_PATTERN)),
    ]
}

fn logical_path() -> Vec<(&'static str, Value)> {
    vec![
        ("minLength", json!(1)),
        ("maxLength", json!(LOGICAL_PATH_MAX_BYTES)),
    ]
}

fn max_len(n: usize) -> Vec<(&'static str, Value)> {
    vec![("maxLength", json!(n))]
}

fn text(n: usize) -> Vec<(&'static str, Value)> {
    vec![("minLength", json!(1)), ("maxLength", json!(n))]
}

fn search_limit() -> Vec<(&'static str, Value)> {
    vec![
        ("minimum", json!(SEARCH_LIMIT_MIN)),
        ("maximum", json!(SEARCH_LIMIT_MAX)),
        ("default", json!(SEARCH_LIMIT_DEFAULT)),
    ]
}

fn timeout() -> Vec<(&'static str, Value)> {
    vec![
        ("minimum", json!(EXECUTE_TIMEOUT_MIN_SECONDS)),
        ("maximum", json!(EXECUTE_TIMEOUT_MAX_SECONDS)),
        ("default", json!(EXECUTE_TIMEOUT_DEFAULT_SECONDS)),
    ]
}

fn memory_limit() -> Vec<(&'static str, Value)> {
    vec![
        ("minimum", json!(MEMORY_RECALL_LIMIT_MIN)),
        ("maximum", json!(MEMORY_RECALL_LIMIT_MAX)),
        ("default", json!(MEMORY_RECALL_LIMIT_DEFAULT)),
    ]
}

fn score() -> Vec<(&'static str, Value)> {
    vec![("minimum", json!(SCORE_MIN)), ("maximum", json!(SCORE_MAX))]
}

fn tags() -> Vec<(&'static str, Value)> {
    vec![("maxItems", json!(MEMORY_TAGS_MAX))]
}

fn openapi_expectations() -> Vec<Expect> {
    vec![
        ("/components/schemas/Slug", slug()),
        (
            "/components/schemas/Handle",
            vec![
                ("minLength", json!(1)),
                ("maxLength", json!(HANDLE_MAX_CHARS)),
                ("pattern", json!(SLUG_PATTERN)),
            ],
        ),
        ("/components/schemas/LogicalPath", logical_path()),
        ("/components/parameters/ResourcePath/schema", logical_path()),
        ("/components/parameters/Query/schema", text(QUERY_MAX_CHARS)),
        ("/components/parameters/MinScore/schema", score()),
        // `GET /skills?limit=`: a page size without `query`, a result count with it (the
        // service refuses more than SEARCH_LIMIT_MAX then, which the description says).
        (
            "/components/parameters/SkillsLimit/schema",
            vec![
                ("minimum", json!(PAGE_LIMIT_MIN)),
                ("maximum", json!(PAGE_LIMIT_MAX)),
            ],
        ),
        (
            "/components/parameters/PageLimit/schema",
            vec![
                ("minimum", json!(PAGE_LIMIT_MIN)),
                ("maximum", json!(PAGE_LIMIT_MAX)),
                ("default", json!(PAGE_LIMIT_DEFAULT)),
            ],
        ),
        (
            "/components/parameters/Cursor/schema",
            text(CURSOR_MAX_CHARS),
        ),
        (
            "/components/parameters/AgentId/schema",
            text(ATTRIBUTION_MAX_CHARS),
        ),
        (
            "/components/parameters/AgentInstanceId/schema",
            text(ATTRIBUTION_MAX_CHARS),
        ),
        (
            "/components/schemas/ComponentRequest/properties/content",
            max_len(COMPONENT_CONTENT_MAX_CHARS),
        ),
        (
            "/components/schemas/SaveRequest/properties/name",
            text(NAME_MAX_CHARS),
        ),
        (
            "/components/schemas/SaveRequest/properties/description",
            text(DESCRIPTION_MAX_CHARS),
        ),
        (
            "/components/schemas/SaveRequest/properties/instruction_body",
            text(INSTRUCTION_BODY_MAX_BYTES),
        ),
        (
            "/components/schemas/SaveRequest/properties/components",
            vec![("maxItems", json!(MAX_COMPONENTS))],
        ),
        (
            "/components/schemas/RecallRequest/properties/query",
            text(QUERY_MAX_CHARS),
        ),
        (
            "/components/schemas/RecallRequest/properties/limit",
            search_limit(),
        ),
        (
            "/components/schemas/ExecuteRequest/properties/script_path",
            logical_path(),
        ),
        (
            "/components/schemas/ExecuteRequest/properties/timeout_seconds",
            timeout(),
        ),
        (
            "/components/schemas/LifecycleRequest/properties/note",
            max_len(NOTE_MAX_CHARS),
        ),
        (
            "/components/schemas/ReasonRequest/properties/reason",
            max_len(NOTE_MAX_CHARS),
        ),
        (
            "/components/schemas/CreateTeamRequest/properties/name",
            text(NAME_MAX_CHARS),
        ),
        (
            "/components/schemas/CreateAccountRequest/properties/display_name",
            text(NAME_MAX_CHARS),
        ),
        (
            "/components/schemas/CreateKeyRequest/properties/name",
            text(KEY_NAME_MAX_CHARS),
        ),
        (
            "/components/schemas/CreateKeyRequest/properties/profile",
            slug(),
        ),
        ("/components/schemas/MemoryTag", slug()),
        ("/components/schemas/MemoryTags", tags()),
        (
            "/components/schemas/RememberRequest/properties/content",
            text(MEMORY_CONTENT_MAX_BYTES),
        ),
        (
            "/components/schemas/RememberRequest/properties/title",
            text(MEMORY_TITLE_MAX_CHARS),
        ),
        (
            "/components/schemas/UpdateMemoryRequest/properties/content",
            text(MEMORY_CONTENT_MAX_BYTES),
        ),
        (
            "/components/schemas/UpdateMemoryRequest/properties/title",
            text(MEMORY_TITLE_MAX_CHARS),
        ),
        (
            "/paths/~1memories/get/parameters/0/schema",
            text(QUERY_MAX_CHARS),
        ),
        ("/paths/~1memories/get/parameters/8/schema", memory_limit()),
    ]
}

/// Per tool: pointer inside its input schema → expected bounds.
fn mcp_expectations() -> BTreeMap<&'static str, Vec<Expect>> {
    BTreeMap::from([
        (
            "recall_cloud_skill",
            vec![
                ("/properties/query", text(QUERY_MAX_CHARS)),
                ("/properties/limit", search_limit()),
                ("/properties/min_score", score()),
                ("/properties/slug", slug()),
                ("/properties/resource", logical_path()),
            ],
        ),
        (
            "save_cloud_skill",
            vec![
                ("/properties/slug", slug()),
                ("/properties/name", text(NAME_MAX_CHARS)),
                ("/properties/description", text(DESCRIPTION_MAX_CHARS)),
                (
                    "/properties/instruction_body",
                    text(INSTRUCTION_BODY_MAX_BYTES),
                ),
                (
                    "/properties/components",
                    vec![("maxItems", json!(MAX_COMPONENTS))],
                ),
                (
                    "/properties/components/items/properties/logical_path",
                    logical_path(),
                ),
                (
                    "/properties/components/items/properties/content",
                    max_len(COMPONENT_CONTENT_MAX_CHARS),
                ),
            ],
        ),
        (
            "execute_cloud_skill",
            vec![
                ("/properties/slug", slug()),
                ("/properties/script_path", logical_path()),
                ("/properties/timeout_seconds", timeout()),
            ],
        ),
        (
            "remember",
            vec![
                ("/properties/content", text(MEMORY_CONTENT_MAX_BYTES)),
                ("/properties/title", text(MEMORY_TITLE_MAX_CHARS)),
                ("/properties/tags", tags()),
                ("/properties/tags/items", slug()),
                ("/properties/project", slug()),
            ],
        ),
        (
            "recall",
            vec![
                ("/properties/query", text(QUERY_MAX_CHARS)),
                ("/properties/limit", memory_limit()),
                ("/properties/min_score", score()),
                ("/properties/tags", tags()),
                ("/properties/tags/items", slug()),
                ("/properties/project", slug()),
            ],
        ),
        (
            "update_memory",
            vec![
                ("/properties/content", text(MEMORY_CONTENT_MAX_BYTES)),
                ("/properties/title", text(MEMORY_TITLE_MAX_CHARS)),
                ("/properties/tags", tags()),
                ("/properties/tags/items", slug()),
            ],
        ),
        (
            "forget",
            vec![("/properties/reason", max_len(NOTE_MAX_CHARS))],
        ),
        ("restore_memory", vec![]),
    ])
}

/// Every `(pointer, keyword, value)` under `v` whose keyword is in `keywords` and whose value
/// is a number (so a *property* named like a keyword is not mistaken for one).
fn find_keywords(v: &Value, at: &str, keywords: &[&str], out: &mut Vec<(String, String, Value)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if keywords.contains(&k.as_str()) && child.is_number() {
                    out.push((at.to_string(), k.clone(), child.clone()));
                }
                let escaped = k.replace('~', "~0").replace('/', "~1");
                find_keywords(child, &format!("{at}/{escaped}"), keywords, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                find_keywords(child, &format!("{at}/{i}"), keywords, out);
            }
        }
        _ => {}
    }
}

/// Checks `expectations` against `schema` and that they cover every ceiling in it; returns
/// the problems, each naming where.
fn check(what: &str, schema: &Value, expectations: &[Expect], exempt: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for (pointer, bounds) in expectations {
        let Some(at) = schema.pointer(pointer) else {
            problems.push(format!("{what}: nothing at {pointer}"));
            continue;
        };
        for (keyword, expected) in bounds {
            let actual = at.get(*keyword);
            if actual != Some(expected) {
                problems.push(format!(
                    "{what} {pointer}: {keyword} is {}, xmemo_core says {expected}",
                    actual.map_or("absent".to_string(), Value::to_string)
                ));
            }
        }
    }
    let mut ceilings = Vec::new();
    find_keywords(schema, "", CEILINGS, &mut ceilings);
    for (pointer, keyword, value) in ceilings {
        let known = expectations
            .iter()
            .any(|(p, bounds)| *p == pointer && bounds.iter().any(|(k, _)| *k == keyword));
        if !known && !exempt.contains(&pointer.as_str()) {
            problems.push(format!(
                "{what} {pointer}: {keyword} {value} is tied to no xmemo_core limit (add it to this test)"
            ));
        }
    }
    problems
}

fn openapi() -> Value {
    serde_json::from_str(DOC).expect("openapi.json is JSON")
}

#[test]
fn openapi_limits_are_the_core_limits() {
    let doc = openapi();
    let skills_limit = doc
        .pointer("/components/parameters/SkillsLimit/description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        skills_limit.contains(&format!(
            "{SEARCH_LIMIT_MIN}–{SEARCH_LIMIT_MAX} (default {SEARCH_LIMIT_DEFAULT}"
        )) && skills_limit.contains(&format!(
            "{PAGE_LIMIT_MIN}–{PAGE_LIMIT_MAX} (default {PAGE_LIMIT_DEFAULT})"
        )),
        "GET /skills `limit` states both ranges: {skills_limit}"
    );
    let problems = check(
        "openapi.json",
        &doc,
        &openapi_expectations(),
        NOT_FROM_LIMITS,
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The tool schemas exactly as a client gets them: `tools/list` on a real server, with
/// `execute_cloud_skill` enabled so all three are listed.
async fn listed_tool_schemas() -> BTreeMap<String, Value> {
    let mcp = McpConfig {
        execute_profiles: vec!["ordinary-full".into()],
        ..McpConfig::default()
    };
    let s = McpServer::start_with(mcp).await;
    let client = s.client("/mcp", &s.admin_key).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    tools
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                Value::Object(t.input_schema.as_ref().clone()),
            )
        })
        .collect()
}

#[tokio::test]
async fn mcp_tool_limits_are_the_core_limits() {
    let schemas = listed_tool_schemas().await;
    let expectations = mcp_expectations();
    assert_eq!(
        schemas.keys().collect::<Vec<_>>(),
        expectations.keys().collect::<Vec<_>>(),
        "every listed tool has expectations here"
    );
    let mut problems = Vec::new();
    for (tool, expected) in &expectations {
        problems.extend(check(tool, &schemas[*tool], expected, &[]));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The bounds of a schema: `$ref`s followed and `allOf` parts merged.
fn bounds_of(doc: &Value, schema: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = doc
            .pointer(r.strip_prefix('#').expect("local $ref"))
            .unwrap_or_else(|| panic!("unresolved {r}"));
        out.extend(bounds_of(doc, target));
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        out.extend(bounds_of(doc, part));
    }
    for k in BOUNDS {
        if let Some(v) = schema.get(*k) {
            out.insert(k.to_string(), v.clone());
        }
    }
    out
}

/// Property name → bounds, for the properties of an object schema.
fn property_bounds(doc: &Value, object: &Value) -> BTreeMap<String, BTreeMap<String, Value>> {
    let resolved = match object.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(&r[1..]).expect("resolved"),
        None => object,
    };
    resolved["properties"]
        .as_object()
        .expect("properties")
        .iter()
        .map(|(name, s)| (name.clone(), bounds_of(doc, s)))
        .collect()
}

#[tokio::test]
async fn mcp_arguments_and_rest_fields_have_the_same_bounds() {
    let doc = openapi();
    let schemas = listed_tool_schemas().await;
    let pairs = [
        ("recall_cloud_skill", "RecallRequest"),
        ("save_cloud_skill", "SaveRequest"),
        ("execute_cloud_skill", "ExecuteRequest"),
    ];
    let mut problems = Vec::new();
    let mut compare = |what: String, mcp: &Value, rest: &Value| {
        let ours = property_bounds(&Value::Null, mcp);
        let theirs = property_bounds(&doc, rest);
        for (name, rest_bounds) in &theirs {
            let Some(mcp_bounds) = ours.get(name) else {
                continue;
            };
            if mcp_bounds != rest_bounds {
                problems.push(format!(
                    "{what}.{name}: MCP {mcp_bounds:?} vs REST {rest_bounds:?}"
                ));
            }
        }
        ours.keys().filter(|k| theirs.contains_key(*k)).count()
    };
    for (tool, rest) in pairs {
        let rest_schema = &doc["components"]["schemas"][rest];
        let shared = compare(tool.to_string(), &schemas[tool], rest_schema);
        assert!(shared >= 3, "{tool} and {rest} share only {shared} fields");
    }
    let shared = compare(
        "save_cloud_skill.components[]".to_string(),
        &schemas["save_cloud_skill"]["properties"]["components"]["items"],
        &doc["components"]["schemas"]["ComponentRequest"],
    );
    assert_eq!(shared, 4, "logical_path, type, content, encoding");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn execute_request_schemars_derive_uses_the_core_limits() {
    let schema = serde_json::to_value(schemars::schema_for!(
        xmemo_server::service::types::ExecuteRequest
    ))
    .expect("schema as JSON");
    let props = &schema["properties"];
    assert_eq!(
        props["timeout_seconds"]["minimum"],
        json!(EXECUTE_TIMEOUT_MIN_SECONDS),
        "{schema:#}"
    );
    assert_eq!(
        props["timeout_seconds"]["maximum"],
        json!(EXECUTE_TIMEOUT_MAX_SECONDS)
    );
    assert_eq!(
        props["script_path"]["maxLength"],
        json!(LOGICAL_PATH_MAX_BYTES)
    );
    assert_eq!(props["slug"]["maxLength"], json!(SLUG_MAX_CHARS));
}
