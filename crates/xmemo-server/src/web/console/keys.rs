//! API keys (create: the secret is shown on the answer page exactly once and never again;
//! list with prefix, scopes, profile, last use, expiry; revoke) and OAuth grants (revoke).

use super::{Chrome, Ctx, PageResult, Params, Posted, Signed, link, render, see_other};
use crate::error::ServiceError;
use crate::service::PageRequest;
use crate::service::types::CreateKeyRequest;
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

#[derive(Debug, Deserialize, Default)]
pub struct PageQuery {
    #[serde(default)]
    cursor: String,
    #[serde(default)]
    notice: String,
}

pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub scopes: String,
    pub profile: String,
    pub created_at: String,
    pub last_used: String,
    pub expires: String,
    pub state: &'static str,
}

#[derive(Template)]
#[template(path = "console/keys.html")]
struct KeysPage {
    chrome: Option<Chrome>,
    token: String,
    rows: Vec<KeyRow>,
    next: Option<String>,
    /// The secret of the key just created: on this answer only.
    created: Option<(String, String)>,
    profiles: Vec<&'static str>,
    base_url: String,
}

/// Client profiles a key may connect as (config/mcp-documentation-contract.json).
const PROFILES: [&str; 5] = [
    "ordinary-full",
    "cursor-plugin",
    "claude-code",
    "generic-public",
    "chatgpt-public",
];

async fn keys_page(
    state: &AppState,
    ctx: &Ctx,
    cursor: &str,
    created: Option<(String, String)>,
) -> Result<KeysPage, ServiceError> {
    let page = state
        .service
        .keys_page(
            &ctx.principal,
            &PageRequest {
                limit: Some(100),
                cursor: (!cursor.is_empty()).then(|| cursor.to_string()),
            },
        )
        .await?;
    let now = xmemo_store::now();
    Ok(KeysPage {
        chrome: Some(ctx.chrome("keys")),
        token: ctx.token.clone(),
        next: page
            .next_cursor
            .map(|c| link("/console/keys", &[("cursor", &c)])),
        rows: page
            .items
            .into_iter()
            .map(|k| KeyRow {
                state: if k.revoked_at.is_some() {
                    "revoked"
                } else if k.expires_at.as_deref().is_some_and(|e| e <= now.as_str()) {
                    "expired"
                } else {
                    "active"
                },
                id: k.key_id,
                name: k.name,
                prefix: k.prefix,
                scopes: k.scopes.join(" "),
                profile: k.profile,
                created_at: super::when(&k.created_at),
                last_used: k
                    .last_used_at
                    .map_or_else(|| "never".into(), |t| super::when(&t)),
                expires: k
                    .expires_at
                    .map_or_else(|| "never".into(), |t| super::when(&t)),
            })
            .collect(),
        created,
        profiles: PROFILES.to_vec(),
        base_url: state.info.public_url.trim_end_matches('/').to_string(),
    })
}

pub async fn page(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    Params(q): Params<PageQuery>,
) -> PageResult {
    let mut page = keys_page(&state, &ctx, &q.cursor, None)
        .await
        .map_err(ctx.fail("keys"))?;
    page.chrome = Some(ctx.chrome("keys").with_notice(Some(&q.notice)));
    Ok(render(StatusCode::OK, &page))
}

pub async fn create(State(state): State<AppState>, Posted(ctx, f): Posted) -> PageResult {
    let scopes: Vec<String> =
        f.0.iter()
            .filter(|(k, _)| k == "scope")
            .map(|(_, v)| v.clone())
            .collect();
    let expires_at = f.opt("expires").map(|d| {
        if d.len() == 10 {
            format!("{d}T00:00:00Z")
        } else {
            d
        }
    });
    let req = CreateKeyRequest {
        name: f.get("name").trim().to_string(),
        scopes: Some(scopes),
        expires_at,
        profile: f.opt("profile"),
    };
    let created = state
        .service
        .create_key(&ctx.principal, req)
        .await
        .map_err(ctx.fail("keys"))?;
    let shown = Some((created.info.name.clone(), created.key.clone()));
    let page = keys_page(&state, &ctx, "", shown)
        .await
        .map_err(ctx.fail("keys"))?;
    Ok(render(StatusCode::OK, &page))
}

pub async fn revoke(State(state): State<AppState>, Posted(ctx, f): Posted) -> PageResult {
    state
        .service
        .revoke_key(&ctx.principal, f.get("key_id"))
        .await
        .map_err(ctx.fail("keys"))?;
    Ok(see_other("/console/keys?notice=revoked"))
}

pub struct GrantRow {
    pub id: String,
    pub client: String,
    pub client_id: String,
    pub scopes: String,
    pub created_at: String,
    pub revoked: String,
}

#[derive(Template)]
#[template(path = "console/grants.html")]
struct GrantsPage {
    chrome: Option<Chrome>,
    token: String,
    rows: Vec<GrantRow>,
    next: Option<String>,
}

pub async fn grants(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    Params(q): Params<PageQuery>,
) -> PageResult {
    let page = state
        .service
        .oauth_grants_page(
            &ctx.principal,
            &PageRequest {
                limit: Some(100),
                cursor: (!q.cursor.is_empty()).then(|| q.cursor.clone()),
            },
        )
        .await
        .map_err(ctx.fail("grants"))?;
    Ok(render(
        StatusCode::OK,
        &GrantsPage {
            chrome: Some(ctx.chrome("grants").with_notice(Some(&q.notice))),
            token: ctx.token.clone(),
            next: page
                .next_cursor
                .map(|c| link("/console/grants", &[("cursor", &c)])),
            rows: page
                .items
                .into_iter()
                .map(|g| GrantRow {
                    id: g.grant_id,
                    client: g.client_name,
                    client_id: g.client_id,
                    scopes: g.scopes.join(" "),
                    created_at: super::when(&g.created_at),
                    revoked: match (g.revoked_at, g.revoked_reason) {
                        (Some(at), Some(why)) => format!("{at} ({why})"),
                        (Some(at), None) => at,
                        _ => String::new(),
                    },
                })
                .collect(),
        },
    ))
}

pub async fn revoke_grant(State(state): State<AppState>, Posted(ctx, f): Posted) -> PageResult {
    state
        .service
        .revoke_oauth_grant(&ctx.principal, f.get("grant_id"))
        .await
        .map_err(ctx.fail("grants"))?;
    Ok(see_other("/console/grants?notice=revoked"))
}
