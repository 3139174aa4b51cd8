//! The authorization matrix: every REST operation and every MCP method, called by each kind
//! of caller, with the outcome each must get.
//!
//! The rows are checked for completeness before anything runs: every operation of
//! `openapi.json` (which `tests/openapi.rs` keeps in agreement with the router) needs a row,
//! and so does every MCP method the server advertises (one per capability it announces in
//! `initialize`, one `tools/call` per tool of the registry). A new route, tool or capability
//! without a row fails this test, and so does a row for something that no longer exists.
//!
//! The sign-in pages (`/login`, `/logout`) and the OAuth authorization server (`/oauth/*`,
//! `/.well-known/*`) have no rows: they are not REST operations of the API (openapi.json
//! does not list them) and take no API credential — who may do what there is the protocol
//! itself (a signed-in session and a form token for consent, client authentication at the
//! token endpoint), tested in `signin.rs` and `oauth.rs`. Their REST side
//! (`/oauth/grants`) has rows like every other operation.
//!
//! One server, seeded once: the team `acme` (owner, admin, member, viewer), an outsider with
//! no membership, a read-only key and a revoked key of the owner, and no credential at all.
//! Requests that change something act on targets seeded for each caller, so the order of the
//! calls does not change their outcomes.

mod common;

use common::{Reply, TestServer, skill};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use xmemo_server::state::McpConfig;

const DOC: &str = include_str!("../openapi.json");
const RW: &[&str] = &["memory:read", "memory:write"];

/// The callers, in the column order of every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Owner,
    Admin,
    Member,
    Viewer,
    Outsider,
    ReadOnly,
    Revoked,
    Anonymous,
}

const WHO: [Who; 8] = [
    Who::Owner,
    Who::Admin,
    Who::Member,
    Who::Viewer,
    Who::Outsider,
    Who::ReadOnly,
    Who::Revoked,
    Who::Anonymous,
];

impl Who {
    fn tag(self) -> &'static str {
        match self {
            Who::Owner => "owner",
            Who::Admin => "admin",
            Who::Member => "member",
            Who::Viewer => "viewer",
            Who::Outsider => "outsider",
            Who::ReadOnly => "ro",
            Who::Revoked => "revoked",
            Who::Anonymous => "anon",
        }
    }
}

// Outcomes. REST: the status, and the SPEC code of an error body. MCP: `ok` (with `+team` /
// `-team` for catalogs: whether acme's skill is listed), `tool CODE` for an `isError` tool
// result, `rpc CODE` for a JSON-RPC error (the SPEC code it carries, else its number), or the
// HTTP status and code when the request never reached JSON-RPC.
const OK: &str = "200";
const CREATED: &str = "201";
const ACCEPTED: &str = "202";
const GONE: &str = "204";
const AUTH: &str = "401 AUTH_REQUIRED";
const DENY: &str = "403 PERMISSION_DENIED";
const HIDDEN: &str = "404 NOT_FOUND";
const CONFLICT: &str = "409 CONFLICT";
const PIN: &str = "422 REVISION_PIN_REQUIRED";
const INVALID: &str = "422 VALIDATION_ERROR";
const NO_SANDBOX: &str = "503 SANDBOX_UNAVAILABLE";

const RPC_OK: &str = "ok";
/// How a catalog shows acme's `shared` skill (prompts list it by slug and description).
const SHARED_DESCRIPTION: &str = "The acme team's shared procedure";
const SEES_TEAM: &str = "ok +team";
const NO_TEAM: &str = "ok -team";

/// Readers of acme (every member, and the owner's read-only key) succeed; the outsider sees
/// nothing; bad or missing credentials are unauthenticated.
const READ: [&str; 8] = [OK, OK, OK, OK, HIDDEN, OK, AUTH, AUTH];
/// Any authenticated caller, whatever its memberships.
const ANY_READ: [&str; 8] = [OK, OK, OK, OK, OK, OK, AUTH, AUTH];
const PUBLIC: [&str; 8] = [OK; 8];

/// What one request sends.
struct Req {
    method: Method,
    /// Path and query, e.g. `/api/v1/skills?workspace=acme`.
    url: String,
    body: Body,
}

enum Body {
    None,
    Json(Value),
    Raw(&'static str, Vec<u8>),
}

fn get(url: impl Into<String>) -> Req {
    Req {
        method: Method::GET,
        url: url.into(),
        body: Body::None,
    }
}

fn post(url: impl Into<String>, body: Value) -> Req {
    Req {
        method: Method::POST,
        url: url.into(),
        body: Body::Json(body),
    }
}

fn put(url: impl Into<String>, body: Value) -> Req {
    Req {
        method: Method::PUT,
        url: url.into(),
        body: Body::Json(body),
    }
}

fn patch(url: impl Into<String>, body: Value) -> Req {
    Req {
        method: Method::PATCH,
        url: url.into(),
        body: Body::Json(body),
    }
}

fn delete_with(url: impl Into<String>, body: Value) -> Req {
    Req {
        method: Method::DELETE,
        url: url.into(),
        body: Body::Json(body),
    }
}

fn delete(url: impl Into<String>) -> Req {
    Req {
        method: Method::DELETE,
        url: url.into(),
        body: Body::None,
    }
}

type Make = Box<dyn Fn(&Seeds, Who) -> Req>;

struct RestRow {
    /// `METHOD /documented/path` as openapi.json writes it (`/healthz` and `/readyz` at the
    /// root, every other path relative to `/api/v1`).
    op: &'static str,
    make: Make,
    expect: [&'static str; 8],
}

fn row(
    op: &'static str,
    expect: [&'static str; 8],
    make: impl Fn(&Seeds, Who) -> Req + 'static,
) -> RestRow {
    RestRow {
        op,
        make: Box::new(make),
        expect,
    }
}

/// Everything seeded once, by caller where a request changes something.
struct Seeds {
    keys: BTreeMap<&'static str, String>,
    /// Revision ids of acme's `shared` skill: a draft (r1) and the published r2.
    shared_r1: String,
    shared_r2: String,
    /// Per caller tag: revisions to publish / approve / reject / deprecate.
    to_publish: BTreeMap<&'static str, String>,
    to_approve: BTreeMap<&'static str, String>,
    to_reject: BTreeMap<&'static str, String>,
    to_deprecate: BTreeMap<&'static str, String>,
    /// Per caller tag: acme invitations to revoke; invitations addressed to the caller's
    /// account (teams `beta` and `gamma`) to accept and to decline; a spare key to revoke.
    to_revoke: BTreeMap<&'static str, String>,
    to_accept: BTreeMap<&'static str, String>,
    to_decline: BTreeMap<&'static str, String>,
    spare_keys: BTreeMap<&'static str, String>,
    /// Per caller tag: an OAuth grant of the caller's account to revoke.
    grants: BTreeMap<&'static str, String>,
    /// An acme memory every reader may read; per caller tag, acme memories to update, to
    /// forget and (forgotten) to restore, over REST and over MCP.
    memory: String,
    memories: BTreeMap<String, String>,
}

impl Seeds {
    /// The acme memory seeded for `purpose` (e.g. `rest-update`) and this caller.
    fn memory_for(&self, purpose: &str, who: Who) -> &str {
        self.memories
            .get(&format!("{purpose}-{}", who.tag()))
            .map(String::as_str)
            .unwrap_or("mem_none")
    }
}

impl Seeds {
    fn id<'a>(map: &'a BTreeMap<&'static str, String>, who: Who) -> &'a str {
        map.get(who.tag()).map(String::as_str).unwrap_or("inv_none")
    }
}

fn rest_rows() -> Vec<RestRow> {
    let t = |w: Who| w.tag();
    vec![
        // ---- meta (public) ----
        row("GET /openapi.json", PUBLIC, |_, _| {
            get("/api/v1/openapi.json")
        }),
        row("GET /healthz", PUBLIC, |_, _| get("/healthz")),
        row("GET /readyz", PUBLIC, |_, _| get("/readyz")),
        // Public even to a revoked key: a runner fetches it before it has a credential.
        row("GET /mcp/config/autonomous-agent", PUBLIC, |_, _| {
            get("/api/v1/mcp/config/autonomous-agent")
        }),
        // ---- skills and recall ----
        row("GET /skills", READ, |_, _| {
            get("/api/v1/skills?query=shared&workspace=acme")
        }),
        row(
            "POST /skills",
            [CREATED, CREATED, CREATED, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |_, w| {
                let mut body = skill(&format!("save-{}", t(w)), "Saved.");
                body["workspace"] = json!("acme");
                post("/api/v1/skills", body)
            },
        ),
        row("POST /recall", READ, |_, _| {
            post(
                "/api/v1/recall",
                json!({"slug": "shared", "workspace": "acme"}),
            )
        }),
        row("GET /skills/{slug}", READ, |_, _| {
            get("/api/v1/skills/shared?workspace=acme")
        }),
        row("GET /skills/{slug}/revisions", READ, |_, _| {
            get("/api/v1/skills/shared/revisions?workspace=acme")
        }),
        row(
            "GET /skills/{slug}/revisions/{revision_id}",
            READ,
            |s, _| {
                get(format!(
                    "/api/v1/skills/shared/revisions/{}?workspace=acme",
                    s.shared_r2
                ))
            },
        ),
        row(
            "GET /skills/{slug}/revisions/{revision_id}/resources/{path}",
            READ,
            |s, _| {
                get(format!(
                    "/api/v1/skills/shared/revisions/{}/resources/references/guide.md?workspace=acme",
                    s.shared_r2
                ))
            },
        ),
        // Refused before any lookup, so it tells the outsider nothing either.
        row(
            "GET /skills/{slug}/resources/{path}",
            [PIN, PIN, PIN, PIN, PIN, PIN, AUTH, AUTH],
            |_, _| get("/api/v1/skills/shared/resources/references/guide.md?workspace=acme"),
        ),
        // ---- lifecycle ----
        row(
            "POST /skills/{slug}/revisions/{revision_id}/publish",
            [OK, OK, OK, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |s, w| {
                post(
                    format!(
                        "/api/v1/skills/pub-{}/revisions/{}/publish?workspace=acme",
                        t(w),
                        Seeds::id(&s.to_publish, w)
                    ),
                    json!({}),
                )
            },
        ),
        row(
            "POST /skills/{slug}/revisions/{revision_id}/approve",
            [OK, OK, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |s, w| {
                post(
                    format!(
                        "/api/v1/skills/appr-{}/revisions/{}/approve?workspace=acme",
                        t(w),
                        Seeds::id(&s.to_approve, w)
                    ),
                    json!({}),
                )
            },
        ),
        row(
            "POST /skills/{slug}/revisions/{revision_id}/reject",
            [OK, OK, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |s, w| {
                post(
                    format!(
                        "/api/v1/skills/rej-{}/revisions/{}/reject?workspace=acme",
                        t(w),
                        Seeds::id(&s.to_reject, w)
                    ),
                    json!({"note": "not yet"}),
                )
            },
        ),
        row(
            "POST /skills/{slug}/revisions/{revision_id}/deprecate",
            [OK, OK, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |s, w| {
                post(
                    format!(
                        "/api/v1/skills/dep-{}/revisions/{}/deprecate?workspace=acme",
                        t(w),
                        Seeds::id(&s.to_deprecate, w)
                    ),
                    json!({}),
                )
            },
        ),
        row(
            "POST /skills/{slug}/archive",
            [OK, OK, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |_, w| {
                post(
                    format!("/api/v1/skills/arch-{}/archive?workspace=acme", t(w)),
                    json!({}),
                )
            },
        ),
        row(
            "POST /skills/{slug}/restore",
            [OK, OK, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |_, w| {
                post(
                    format!("/api/v1/skills/rest-{}/restore?workspace=acme", t(w)),
                    json!({}),
                )
            },
        ),
        // A published revision runs for every reader; this server has no sandbox, so the
        // callers allowed to run it reach SANDBOX_UNAVAILABLE.
        row(
            "POST /skills/{slug}/execute",
            [
                NO_SANDBOX, NO_SANDBOX, NO_SANDBOX, NO_SANDBOX, HIDDEN, DENY, AUTH, AUTH,
            ],
            |s, _| {
                post(
                    "/api/v1/skills/shared/execute",
                    json!({"revision_id": s.shared_r2, "script_path": "scripts/run.py", "workspace": "acme"}),
                )
            },
        ),
        // ---- packages ----
        row(
            "POST /imports",
            [CREATED, CREATED, CREATED, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |_, w| Req {
                method: Method::POST,
                url: format!("/api/v1/imports?workspace=acme&slug=imp-{}", t(w)),
                // Each caller's own content: the same content under another slug of the
                // workspace would be a duplicate (#24), which writes nothing.
                body: Body::Raw(
                    "text/markdown",
                    format!(
                        "---\nname: Imported\ndescription: An imported skill\n---\nDo it ({}).\n",
                        t(w)
                    )
                    .into_bytes(),
                ),
            },
        ),
        row("GET /skills/{slug}/export", READ, |_, _| {
            get("/api/v1/skills/shared/export?workspace=acme")
        }),
        row("GET /skills/{slug}/diff", READ, |s, _| {
            get(format!(
                "/api/v1/skills/shared/diff?from={}&to={}&workspace=acme",
                s.shared_r1, s.shared_r2
            ))
        }),
        // ---- the caller, workspaces, members, invitations ----
        row("GET /me", ANY_READ, |_, _| get("/api/v1/me")),
        row("GET /workspaces", ANY_READ, |_, _| {
            get("/api/v1/workspaces")
        }),
        row(
            "POST /workspaces",
            [
                CREATED, CREATED, CREATED, CREATED, CREATED, DENY, AUTH, AUTH,
            ],
            move |_, w| {
                post(
                    "/api/v1/workspaces",
                    json!({"handle": format!("t-{}", t(w))}),
                )
            },
        ),
        row("GET /workspaces/{workspace}/members", READ, |_, _| {
            get("/api/v1/workspaces/acme/members")
        }),
        row(
            "PUT /workspaces/{workspace}/members/{account}",
            [OK, OK, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            |_, _| {
                put(
                    "/api/v1/workspaces/acme/members/pawn",
                    json!({"role": "viewer"}),
                )
            },
        ),
        row(
            "DELETE /workspaces/{workspace}/members/{account}",
            [GONE, GONE, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |_, w| delete(format!("/api/v1/workspaces/acme/members/pawn-{}", t(w))),
        ),
        row(
            "GET /workspaces/{workspace}/invitations",
            [OK, OK, DENY, DENY, HIDDEN, OK, AUTH, AUTH],
            |_, _| get("/api/v1/workspaces/acme/invitations"),
        ),
        row(
            "POST /workspaces/{workspace}/invitations",
            [ACCEPTED, ACCEPTED, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |_, w| {
                post(
                    "/api/v1/workspaces/acme/invitations",
                    json!({"invitee": format!("new-{}", t(w)), "role": "viewer"}),
                )
            },
        ),
        row(
            "DELETE /workspaces/{workspace}/invitations/{invitation_id}",
            [GONE, GONE, DENY, DENY, HIDDEN, DENY, AUTH, AUTH],
            |s, w| {
                delete(format!(
                    "/api/v1/workspaces/acme/invitations/{}",
                    Seeds::id(&s.to_revoke, w)
                ))
            },
        ),
        // Team `exit` has the same members as acme; its owner is its only owner.
        row(
            "POST /workspaces/{workspace}/leave",
            [CONFLICT, GONE, GONE, GONE, HIDDEN, DENY, AUTH, AUTH],
            |_, _| post("/api/v1/workspaces/exit/leave", json!({})),
        ),
        row("GET /invitations", ANY_READ, |_, _| {
            get("/api/v1/invitations")
        }),
        // Invitations addressed to each caller's own account (the read-only key's: the
        // owner's).
        row(
            "POST /invitations/{invitation_id}/accept",
            [OK, OK, OK, OK, OK, DENY, AUTH, AUTH],
            |s, w| {
                post(
                    format!("/api/v1/invitations/{}/accept", Seeds::id(&s.to_accept, w)),
                    json!({}),
                )
            },
        ),
        row(
            "POST /invitations/{invitation_id}/decline",
            [OK, OK, OK, OK, OK, DENY, AUTH, AUTH],
            |s, w| {
                post(
                    format!(
                        "/api/v1/invitations/{}/decline",
                        Seeds::id(&s.to_decline, w)
                    ),
                    json!({}),
                )
            },
        ),
        // ---- keys ----
        row("GET /keys", ANY_READ, |_, _| get("/api/v1/keys")),
        row(
            "POST /keys",
            [
                CREATED, CREATED, CREATED, CREATED, CREATED, DENY, AUTH, AUTH,
            ],
            move |_, w| post("/api/v1/keys", json!({"name": format!("k-{}", t(w))})),
        ),
        row(
            "DELETE /keys/{key_id}",
            [GONE, GONE, GONE, GONE, GONE, DENY, AUTH, AUTH],
            |s, w| {
                delete(format!(
                    "/api/v1/keys/{}",
                    s.spare_keys
                        .get(w.tag())
                        .map(String::as_str)
                        .unwrap_or("key_none")
                ))
            },
        ),
        row("GET /oauth/grants", ANY_READ, |_, _| {
            get("/api/v1/oauth/grants")
        }),
        row(
            "DELETE /oauth/grants/{grant_id}",
            [GONE, GONE, GONE, GONE, GONE, DENY, AUTH, AUTH],
            |s, w| {
                delete(format!(
                    "/api/v1/oauth/grants/{}",
                    s.grants
                        .get(w.tag())
                        .map(String::as_str)
                        .unwrap_or("grant_none")
                ))
            },
        ),
        // ---- server administrators (the owner is the bootstrap admin) ----
        row(
            "GET /accounts",
            [OK, DENY, DENY, DENY, DENY, OK, AUTH, AUTH],
            |_, _| get("/api/v1/accounts"),
        ),
        row(
            "POST /accounts",
            [CREATED, DENY, DENY, DENY, DENY, DENY, AUTH, AUTH],
            move |_, w| {
                post(
                    "/api/v1/accounts",
                    json!({"handle": format!("acc-{}", t(w))}),
                )
            },
        ),
        // ---- memories ----
        row("GET /memories", READ, |_, _| {
            get("/api/v1/memories?workspace=acme&query=matrix")
        }),
        row(
            "POST /memories",
            [CREATED, CREATED, CREATED, DENY, HIDDEN, DENY, AUTH, AUTH],
            move |_, w| {
                post(
                    "/api/v1/memories",
                    json!({"kind": "note", "content": format!("remembered by {}", t(w)), "workspace": "acme"}),
                )
            },
        ),
        row("GET /memories/{memory_id}", READ, |s, _| {
            get(format!("/api/v1/memories/{}", s.memory))
        }),
        row("GET /memories/{memory_id}/history", READ, |s, _| {
            get(format!("/api/v1/memories/{}/history", s.memory))
        }),
        row(
            "PATCH /memories/{memory_id}",
            [OK, OK, OK, DENY, HIDDEN, DENY, AUTH, AUTH],
            |s, w| {
                patch(
                    format!("/api/v1/memories/{}", s.memory_for("rest-update", w)),
                    json!({"expected_version": 1, "content": format!("updated by {}", w.tag())}),
                )
            },
        ),
        row(
            "POST /memories/{memory_id}/forget",
            [OK, OK, OK, DENY, HIDDEN, DENY, AUTH, AUTH],
            |s, w| {
                post(
                    format!("/api/v1/memories/{}/forget", s.memory_for("rest-forget", w)),
                    json!({"reason": "matrix"}),
                )
            },
        ),
        row(
            "POST /memories/{memory_id}/restore",
            [OK, OK, OK, DENY, HIDDEN, DENY, AUTH, AUTH],
            |s, w| {
                post(
                    format!(
                        "/api/v1/memories/{}/restore",
                        s.memory_for("rest-restore", w)
                    ),
                    json!({}),
                )
            },
        ),
        // ---- the caller's own data ----
        row("GET /account/export", ANY_READ, |_, _| {
            get("/api/v1/account/export")
        }),
        // A wrong confirmation: every authenticated writer reaches the check, nothing goes.
        row(
            "DELETE /account",
            [
                INVALID, INVALID, INVALID, INVALID, INVALID, DENY, AUTH, AUTH,
            ],
            |_, _| delete_with("/api/v1/account", json!({"confirm": "not-my-handle"})),
        ),
    ]
}

/// Routes outside openapi.json that still need a row (`/metrics`: server administrators).
fn extra_rows() -> Vec<RestRow> {
    vec![row(
        "GET /metrics",
        [OK, DENY, DENY, DENY, DENY, OK, AUTH, AUTH],
        |_, _| get("/metrics"),
    )]
}

type Params = Box<dyn Fn(&Seeds, Who) -> Value>;

struct McpRow {
    /// A JSON-RPC method, or `tools/call <tool>`.
    method: String,
    params: Params,
    expect: [&'static str; 8],
}

fn mcp_row(
    method: &str,
    expect: [&'static str; 8],
    params: impl Fn(&Seeds, Who) -> Value + 'static,
) -> McpRow {
    McpRow {
        method: method.to_string(),
        params: Box::new(params),
        expect,
    }
}

const MCP_READ: [&str; 8] = [RPC_OK, RPC_OK, RPC_OK, RPC_OK, RPC_OK, RPC_OK, AUTH, AUTH];
/// Changing an acme memory: writers of acme; viewers and the read-only key are refused, the
/// outsider does not see it.
const MEMORY_WRITE: [&str; 8] = [
    RPC_OK,
    RPC_OK,
    RPC_OK,
    "tool PERMISSION_DENIED",
    "tool NOT_FOUND",
    "tool PERMISSION_DENIED",
    AUTH,
    AUTH,
];
const CATALOG: [&str; 8] = [
    SEES_TEAM, SEES_TEAM, SEES_TEAM, SEES_TEAM, NO_TEAM, SEES_TEAM, AUTH, AUTH,
];

fn mcp_rows() -> Vec<McpRow> {
    let shared_md = "skill://acme/shared/SKILL.md";
    vec![
        mcp_row("initialize", MCP_READ, |_, _| {
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "authz-matrix", "version": "1"}})
        }),
        mcp_row("ping", MCP_READ, |_, _| json!({})),
        mcp_row(
            "logging/setLevel",
            MCP_READ,
            |_, _| json!({"level": "info"}),
        ),
        mcp_row("tools/list", MCP_READ, |_, _| json!({})),
        mcp_row(
            "tools/call recall_cloud_skill",
            [
                RPC_OK,
                RPC_OK,
                RPC_OK,
                RPC_OK,
                "tool NOT_FOUND",
                RPC_OK,
                AUTH,
                AUTH,
            ],
            |_, _| json!({"slug": "shared", "workspace": "acme"}),
        ),
        mcp_row(
            "tools/call save_cloud_skill",
            [
                RPC_OK,
                RPC_OK,
                RPC_OK,
                "tool PERMISSION_DENIED",
                "tool NOT_FOUND",
                "tool PERMISSION_DENIED",
                AUTH,
                AUTH,
            ],
            |_, w| {
                let mut args = skill(&format!("mcp-{}", w.tag()), "Saved over MCP.");
                args["workspace"] = json!("acme");
                args
            },
        ),
        mcp_row(
            "tools/call execute_cloud_skill",
            [
                "tool SANDBOX_UNAVAILABLE",
                "tool SANDBOX_UNAVAILABLE",
                "tool SANDBOX_UNAVAILABLE",
                "tool SANDBOX_UNAVAILABLE",
                "tool NOT_FOUND",
                "tool PERMISSION_DENIED",
                AUTH,
                AUTH,
            ],
            |s, _| {
                json!({"slug": "shared", "revision_id": s.shared_r2,
                       "script_path": "scripts/run.py", "workspace": "acme"})
            },
        ),
        mcp_row(
            "tools/call remember",
            [
                RPC_OK,
                RPC_OK,
                RPC_OK,
                "tool PERMISSION_DENIED",
                "tool NOT_FOUND",
                "tool PERMISSION_DENIED",
                AUTH,
                AUTH,
            ],
            |_, w| json!({"kind": "note", "content": format!("mcp memory of {}", w.tag()), "workspace": "acme"}),
        ),
        mcp_row(
            "tools/call recall",
            [
                RPC_OK,
                RPC_OK,
                RPC_OK,
                RPC_OK,
                "tool NOT_FOUND",
                RPC_OK,
                AUTH,
                AUTH,
            ],
            |_, _| json!({"workspace": "acme", "query": "matrix"}),
        ),
        mcp_row(
            "tools/call update_memory",
            MEMORY_WRITE,
            |s, w| json!({"memory_id": s.memory_for("mcp-update", w), "expected_version": 1, "content": format!("updated over MCP by {}", w.tag())}),
        ),
        mcp_row(
            "tools/call forget",
            MEMORY_WRITE,
            |s, w| json!({"memory_id": s.memory_for("mcp-forget", w)}),
        ),
        mcp_row(
            "tools/call restore_memory",
            MEMORY_WRITE,
            |s, w| json!({"memory_id": s.memory_for("mcp-restore", w)}),
        ),
        mcp_row("resources/list", CATALOG, |_, _| json!({})),
        mcp_row("resources/templates/list", MCP_READ, |_, _| json!({})),
        mcp_row(
            "resources/read",
            [
                RPC_OK,
                RPC_OK,
                RPC_OK,
                RPC_OK,
                "rpc -32002",
                RPC_OK,
                AUTH,
                AUTH,
            ],
            move |_, _| json!({"uri": shared_md}),
        ),
        mcp_row("prompts/list", CATALOG, |_, _| json!({})),
        mcp_row(
            "prompts/get",
            [
                RPC_OK,
                RPC_OK,
                RPC_OK,
                RPC_OK,
                "rpc -32602",
                RPC_OK,
                AUTH,
                AUTH,
            ],
            |_, _| json!({"name": "acme/shared"}),
        ),
        mcp_row("skills/list", CATALOG, |_, _| json!({})),
        mcp_row(
            "skills/get",
            [
                RPC_OK,
                RPC_OK,
                RPC_OK,
                RPC_OK,
                "rpc -32602",
                RPC_OK,
                AUTH,
                AUTH,
            ],
            move |_, _| json!({"uri": shared_md}),
        ),
    ]
}

/// The JSON-RPC methods each server capability brings. A capability missing here fails the
/// test: its methods need rows.
fn methods_of_capability(capability: &str) -> Option<Vec<&'static str>> {
    Some(match capability {
        "tools" => vec!["tools/list"],
        "resources" => vec![
            "resources/list",
            "resources/templates/list",
            "resources/read",
        ],
        "prompts" => vec!["prompts/list", "prompts/get"],
        "logging" => vec!["logging/setLevel"],
        "io.modelcontextprotocol/skills" => vec!["skills/list", "skills/get"],
        _ => return None,
    })
}

// ------------------------------------------------------------------------------------------
// Seeding
// ------------------------------------------------------------------------------------------

async fn account(s: &TestServer, handle: &str) -> String {
    s.account(handle, RW).await
}

async fn revision_of(r: &Reply) -> String {
    r.expect_ok()["data"]["revision_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no revision id: {}", r.body))
        .to_string()
}

async fn save_in_acme(s: &TestServer, key: &str, slug: &str, publish: bool) -> String {
    let mut body = skill(slug, &format!("Steps of {slug}."));
    body["workspace"] = json!("acme");
    if publish {
        body["intent"] = json!("publish");
    }
    revision_of(&s.save(key, body).await).await
}

async fn approve(s: &TestServer, key: &str, slug: &str, rev: &str) {
    s.post(
        &format!("/api/v1/skills/{slug}/revisions/{rev}/approve?workspace=acme"),
        key,
        json!({}),
    )
    .await
    .expect_ok();
}

async fn invitation(s: &TestServer, team: &str, key: &str, invitee: &str) -> String {
    let r = s
        .post(
            &format!("/api/v1/workspaces/{team}/invitations"),
            key,
            json!({"invitee": invitee, "role": "viewer"}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.body);
    r.body["invitation"]["invitation_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn remember_in_acme(s: &TestServer, key: &str, content: &str) -> String {
    let r = s
        .post(
            "/api/v1/memories",
            key,
            json!({"kind": "fact", "content": content, "workspace": "acme"}),
        )
        .await;
    r.expect_ok()["data"]["memory"]["memory_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no memory id: {}", r.body))
        .to_string()
}

async fn seed(s: &TestServer) -> Seeds {
    let owner = s.admin_key.clone();
    let admin = account(s, "ada").await;
    let member = account(s, "mia").await;
    let viewer = account(s, "vera").await;
    let outsider = account(s, "eve").await;
    let host = account(s, "hana").await;
    let make_key = |scopes: &'static str| {
        let owner = owner.clone();
        async move {
            let r = s
                .post(
                    "/api/v1/keys",
                    &owner,
                    json!({"name": "matrix", "scopes": [scopes]}),
                )
                .await;
            (
                r.body["key"]["key"].as_str().unwrap().to_string(),
                r.body["key"]["key_id"].as_str().unwrap().to_string(),
            )
        }
    };
    let (read_only, _) = make_key("memory:read").await;
    let (revoked, revoked_id) = make_key("memory:read").await;
    s.call(
        Method::DELETE,
        &format!("/api/v1/keys/{revoked_id}"),
        &owner,
        None,
    )
    .await
    .expect_ok();

    let handles = [
        (Who::Owner, "admin", owner.clone()),
        (Who::Admin, "ada", admin.clone()),
        (Who::Member, "mia", member.clone()),
        (Who::Viewer, "vera", viewer.clone()),
        (Who::Outsider, "eve", outsider.clone()),
    ];
    for team in ["acme", "exit"] {
        s.post("/api/v1/workspaces", &owner, json!({"handle": team}))
            .await
            .expect_ok();
        s.join(team, &owner, "ada", &admin, "admin").await;
        s.join(team, &owner, "mia", &member, "member").await;
        s.join(team, &owner, "vera", &viewer, "viewer").await;
    }
    // Members of acme for the role change and for each caller's removal.
    for w in
        std::iter::once("pawn".to_string()).chain(WHO.iter().map(|w| format!("pawn-{}", w.tag())))
    {
        let key = account(s, &w).await;
        s.join("acme", &owner, &w, &key, "viewer").await;
    }

    // acme's `shared`: a draft r1 with a script and a reference, then the published r2.
    let mut body = skill("shared", "Shared steps.");
    body["workspace"] = json!("acme");
    body["description"] = json!(SHARED_DESCRIPTION);
    body["components"] = json!([
        {"logical_path": "scripts/run.py", "type": "script", "content": "print('{}')\n"},
        {"logical_path": "references/guide.md", "type": "reference", "content": "Guide.\n"},
    ]);
    let shared_r1 = revision_of(&s.save(&owner, body.clone()).await).await;
    body["instruction_body"] = json!("Shared steps, second edition.");
    body["intent"] = json!("publish");
    let shared_r2 = revision_of(&s.save(&owner, body).await).await;
    approve(s, &owner, "shared", &shared_r2).await;

    let mut seeds = Seeds {
        keys: BTreeMap::new(),
        shared_r1,
        shared_r2,
        to_publish: BTreeMap::new(),
        to_approve: BTreeMap::new(),
        to_reject: BTreeMap::new(),
        to_deprecate: BTreeMap::new(),
        to_revoke: BTreeMap::new(),
        to_accept: BTreeMap::new(),
        to_decline: BTreeMap::new(),
        spare_keys: BTreeMap::new(),
        grants: BTreeMap::new(),
        memory: remember_in_acme(s, &owner, "the matrix memory").await,
        memories: BTreeMap::new(),
    };
    for w in WHO {
        let tag = w.tag();
        seeds.to_publish.insert(
            tag,
            save_in_acme(s, &owner, &format!("pub-{tag}"), false).await,
        );
        seeds.to_approve.insert(
            tag,
            save_in_acme(s, &owner, &format!("appr-{tag}"), true).await,
        );
        seeds.to_reject.insert(
            tag,
            save_in_acme(s, &owner, &format!("rej-{tag}"), true).await,
        );
        let dep = format!("dep-{tag}");
        let rev = save_in_acme(s, &owner, &dep, true).await;
        approve(s, &owner, &dep, &rev).await;
        seeds.to_deprecate.insert(tag, rev);
        save_in_acme(s, &owner, &format!("arch-{tag}"), false).await;
        let rest = format!("rest-{tag}");
        save_in_acme(s, &owner, &rest, false).await;
        s.post(
            &format!("/api/v1/skills/{rest}/archive?workspace=acme"),
            &owner,
            json!({}),
        )
        .await
        .expect_ok();
        seeds.to_revoke.insert(
            tag,
            invitation(s, "acme", &owner, &format!("rv-{tag}")).await,
        );
        for purpose in [
            "rest-update",
            "rest-forget",
            "rest-restore",
            "mcp-update",
            "mcp-forget",
            "mcp-restore",
        ] {
            let id = remember_in_acme(s, &owner, &format!("{purpose} of {tag}")).await;
            if purpose.ends_with("restore") {
                s.post(&format!("/api/v1/memories/{id}/forget"), &owner, json!({}))
                    .await
                    .expect_ok();
            }
            seeds.memories.insert(format!("{purpose}-{tag}"), id);
        }
    }

    // Invitations addressed to each caller, from teams none of them is in.
    for team in ["beta", "gamma"] {
        s.post("/api/v1/workspaces", &host, json!({"handle": team}))
            .await
            .expect_ok();
    }
    for (w, handle, key) in &handles {
        let tag = w.tag();
        seeds
            .to_accept
            .insert(tag, invitation(s, "beta", &host, handle).await);
        seeds
            .to_decline
            .insert(tag, invitation(s, "gamma", &host, handle).await);
        let spare = s.post("/api/v1/keys", key, json!({"name": "spare"})).await;
        seeds.spare_keys.insert(
            tag,
            spare.body["key"]["key_id"].as_str().unwrap().to_string(),
        );
        seeds.keys.insert(tag, key.clone());
        let account = s
            .store
            .find_account_by_handle(handle)
            .await
            .unwrap()
            .expect("account");
        let grant = s
            .store
            .create_oauth_grant(
                xmemo_store::NewOAuthGrant {
                    account_id: account.account_id.clone(),
                    client_id: "client_matrix".into(),
                    client_name: "Matrix".into(),
                    redirect_uri: "http://127.0.0.1/callback".into(),
                    scopes: vec!["memory:read".into()],
                    resource: format!("{}/mcp", s.url),
                    code: xmemo_store::NewOAuthCode {
                        code_hash: format!("{:0>64}", tag),
                        code_challenge: "c".into(),
                        expires_at: "2099-01-01T00:00:00.000Z".into(),
                    },
                },
                xmemo_store::AuditDraft::new(
                    "oauth.authorize",
                    &xmemo_store::Attribution::default(),
                ),
            )
            .await
            .unwrap();
        seeds.grants.insert(tag, grant.grant_id);
    }
    // The read-only key is the owner's: its invitations are the owner's.
    for map in [&mut seeds.to_accept, &mut seeds.to_decline] {
        let owners = map[Who::Owner.tag()].clone();
        map.insert(Who::ReadOnly.tag(), owners);
    }
    seeds.keys.insert(Who::ReadOnly.tag(), read_only);
    seeds.keys.insert(Who::Revoked.tag(), revoked);
    seeds
}

// ------------------------------------------------------------------------------------------
// Running
// ------------------------------------------------------------------------------------------

fn documented_operations() -> BTreeSet<String> {
    let doc: Value = serde_json::from_str(DOC).expect("openapi.json");
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in ["get", "post", "put", "delete", "patch"] {
            if item.get(method).is_some() {
                ops.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    ops
}

/// Whether a concrete request path is an instance of a documented template (`{x}` is one
/// segment, a trailing `{path}` the rest).
fn instance_of(template: &str, url: &str) -> bool {
    let path = url.split('?').next().unwrap_or_default();
    let path = path
        .strip_prefix("/api/v1")
        .filter(|_| !matches!(template, "/healthz" | "/readyz" | "/metrics"))
        .unwrap_or(path);
    let t: Vec<&str> = template.split('/').collect();
    let p: Vec<&str> = path.split('/').collect();
    for (i, seg) in t.iter().enumerate() {
        if *seg == "{path}" && i == t.len() - 1 {
            return p.len() > i;
        }
        let Some(actual) = p.get(i) else {
            return false;
        };
        if seg.starts_with('{') {
            if actual.is_empty() {
                return false;
            }
        } else if seg != actual {
            return false;
        }
    }
    t.len() == p.len()
}

fn rest_outcome(r: &Reply) -> String {
    match r.body["error"]["code"].as_str() {
        Some(code) => format!("{} {code}", r.status.as_u16()),
        None => r.status.as_u16().to_string(),
    }
}

fn mcp_outcome(r: &Reply, catalog: bool) -> String {
    if r.status.as_u16() != 200 {
        // Refused before JSON-RPC dispatch: the HTTP status, and the SPEC code the JSON-RPC
        // error carries in `data`.
        return match r.body["error"]["data"]["error"]["code"].as_str() {
            Some(code) => format!("{} {code}", r.status.as_u16()),
            None => rest_outcome(r),
        };
    }
    if let Some(error) = r.body.get("error") {
        return match error["data"]["error"]["code"].as_str() {
            Some(code) => format!("rpc {code}"),
            None => format!("rpc {}", error["code"]),
        };
    }
    let result = &r.body["result"];
    if result["isError"] == true {
        return format!(
            "tool {}",
            result["structuredContent"]["error"]["code"]
                .as_str()
                .unwrap_or("?")
        );
    }
    if catalog {
        let listed = result.to_string();
        return if listed.contains("skill://acme/") || listed.contains(SHARED_DESCRIPTION) {
            SEES_TEAM.into()
        } else {
            NO_TEAM.into()
        };
    }
    RPC_OK.into()
}

async fn send(s: &TestServer, key: Option<&str>, req: &Req) -> Reply {
    let mut r = s
        .http
        .request(req.method.clone(), format!("{}{}", s.url, req.url));
    if let Some(k) = key {
        r = r.bearer_auth(k);
    }
    r = match &req.body {
        Body::None => r,
        Body::Json(v) => r.json(v),
        Body::Raw(content_type, bytes) => {
            r.header("content-type", *content_type).body(bytes.clone())
        }
    };
    Reply::from(r.send().await.expect("request")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_and_method_answers_each_caller_as_the_matrix_says() {
    let execute_everywhere = McpConfig {
        execute_profiles: vec!["ordinary-full".into()],
        ..Default::default()
    };
    // Hundreds of refused credentials come from one address here: the throttle of failed
    // authentication (tested on its own in http_hardening.rs) stays out of the way.
    let s = TestServer::start_with(
        |service| service.with_auth_throttle(xmemo_server::throttle::LimiterConfig::disabled()),
        common::ServeOptions {
            mcp: execute_everywhere,
            ..Default::default()
        },
    )
    .await;

    // Completeness first: a route, tool or capability without a row fails before anything
    // is seeded.
    let rows = rest_rows();
    let extras = extra_rows();
    let documented = documented_operations();
    let covered: BTreeSet<String> = rows.iter().map(|r| r.op.to_string()).collect();
    assert_eq!(rows.len(), covered.len(), "a REST operation has two rows");
    let missing: Vec<&String> = documented.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "operations in openapi.json without a row in the authorization matrix: {missing:?}"
    );
    let stale: Vec<&String> = covered.difference(&documented).collect();
    assert!(
        stale.is_empty(),
        "matrix rows for operations openapi.json does not have: {stale:?}"
    );

    let mcp = mcp_rows();
    let mcp_methods: BTreeSet<String> = mcp.iter().map(|r| r.method.clone()).collect();
    assert_eq!(mcp.len(), mcp_methods.len(), "an MCP method has two rows");
    let init = s
        .mcp(
            Some(&s.admin_key),
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "authz-matrix", "version": "1"}}),
        )
        .await;
    let capabilities = init.body["result"]["capabilities"]
        .as_object()
        .unwrap_or_else(|| panic!("initialize: {}", init.body))
        .clone();
    let mut served: BTreeSet<String> = ["initialize", "ping"].map(String::from).into();
    for (name, value) in &capabilities {
        let names: Vec<String> = if name == "extensions" {
            value
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        } else {
            vec![name.clone()]
        };
        for n in names {
            let methods = methods_of_capability(&n).unwrap_or_else(|| {
                panic!("capability `{n}` has no methods in the authorization matrix")
            });
            served.extend(methods.into_iter().map(String::from));
        }
    }
    for tool in xmemo_server::mcp::tools::REGISTRY {
        served.insert(format!("tools/call {}", tool.name));
    }
    let missing: Vec<&String> = served.difference(&mcp_methods).collect();
    assert!(
        missing.is_empty(),
        "MCP methods without a row in the authorization matrix: {missing:?}"
    );
    let stale: Vec<&String> = mcp_methods.difference(&served).collect();
    assert!(
        stale.is_empty(),
        "matrix rows for MCP methods the server does not serve: {stale:?}"
    );

    let seeds = seed(&s).await;
    let key_of = |w: Who| -> Option<&str> {
        match w {
            Who::Anonymous => None,
            other => Some(seeds.keys[other.tag()].as_str()),
        }
    };

    let mut mismatches = Vec::new();
    let mut calls = 0;
    for r in rows.iter().chain(&extras) {
        let template = r.op.split_once(' ').map(|(_, p)| p).unwrap_or_default();
        for (i, w) in WHO.into_iter().enumerate() {
            let req = (r.make)(&seeds, w);
            assert!(
                r.op.starts_with(req.method.as_str()) && instance_of(template, &req.url),
                "row `{}` sends {} {}, which is not that operation",
                r.op,
                req.method,
                req.url
            );
            let reply = send(&s, key_of(w), &req).await;
            calls += 1;
            let got = rest_outcome(&reply);
            if got != r.expect[i] {
                mismatches.push(format!(
                    "{:<60} {:<9} expected {:<26} got {got}: {}",
                    r.op,
                    w.tag(),
                    r.expect[i],
                    reply.body.to_string().chars().take(200).collect::<String>()
                ));
            }
        }
    }
    for r in &mcp {
        let (method, tool) = match r.method.split_once(' ') {
            Some((m, t)) => (m, Some(t)),
            None => (r.method.as_str(), None),
        };
        let catalog = method.ends_with("/list")
            && method != "tools/list"
            && method != "resources/templates/list";
        for (i, w) in WHO.into_iter().enumerate() {
            let args = (r.params)(&seeds, w);
            let params = match tool {
                Some(name) => json!({"name": name, "arguments": args}),
                None => args,
            };
            let reply = s.mcp(key_of(w), method, params).await;
            calls += 1;
            let got = mcp_outcome(&reply, catalog);
            if got != r.expect[i] {
                mismatches.push(format!(
                    "MCP {:<56} {:<9} expected {:<26} got {got}: {}",
                    r.method,
                    w.tag(),
                    r.expect[i],
                    reply.body.to_string().chars().take(200).collect::<String>()
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {calls} calls disagree with the matrix:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
