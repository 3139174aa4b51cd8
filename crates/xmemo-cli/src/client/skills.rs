//! Reading and managing skills: search (Level 0), recall (Levels 1 and 2), revisions,
//! lifecycle actions, archive and restore.

use super::Conn;
use super::http::{Api, Failure, decode, decode_field, fail, not_answered_with};
use super::text::{excerpt, or_dash, short_hash, size, table_of};
use crate::output::{print_json, print_result};
use clap::Args;
use reqwest::Method;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use xmemo_core::{LifecycleAction, RevisionStatus};
use xmemo_server::service::types::{ContentEncoding, RevisionSummary, SkillView, ToolResult};

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// Words to look for in slugs, names, descriptions and instructions
    pub query: String,
    /// How many results (1–50, default 10)
    #[arg(long)]
    pub limit: Option<i64>,
    /// Only this workspace (id, `personal` or a team handle)
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct RecallArgs {
    pub slug: String,
    /// A revision id (from `recall` or `revisions`); required for --resource
    #[arg(long)]
    pub revision: Option<String>,
    /// Level 2: the logical path of one resource of the pinned revision
    #[arg(long)]
    pub resource: Option<String>,
    /// Write the resource's raw bytes to this file (`-` for stdout)
    #[arg(short = 'o', long = "output", requires = "resource")]
    pub output: Option<PathBuf>,
    /// Workspace id, `personal` or a team handle (needed when the slug exists in several)
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct SlugArgs {
    pub slug: String,
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct LifecycleArgs {
    pub slug: String,
    pub revision_id: String,
    /// A note kept with the revision and in the audit log
    #[arg(long)]
    pub note: Option<String>,
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct RejectArgs {
    pub slug: String,
    pub revision_id: String,
    /// Why it is sent back (required)
    #[arg(long)]
    pub note: String,
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct ArchiveArgs {
    pub slug: String,
    /// Why (kept in the audit log)
    #[arg(long)]
    pub reason: Option<String>,
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

pub async fn search(a: SearchArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let limit = a.limit.map(|n| n.to_string());
    let url = api.url(
        &["skills"],
        &[
            ("query", Some(&a.query)),
            ("limit", limit.as_deref()),
            ("workspace", a.workspace.as_deref()),
        ],
    )?;
    print_result(a.conn.json, api.get(url).await?, |value| {
        let ToolResult::Descriptors(found) = decode(value, "search result")? else {
            return Err(not_answered_with("descriptors"));
        };
        if found.skills.is_empty() {
            println!("no published skill matches `{}`", a.query);
            return Ok(());
        }
        let headers = ["SLUG", "NAME", "WORKSPACE", "SCORE", "DESCRIPTION"];
        let table = table_of(headers, &found.skills, |s| {
            [
                s.slug.clone(),
                excerpt(&s.name, 40),
                s.workspace.clone(),
                format!("{:.3}", s.score),
                excerpt(&s.description, 60),
            ]
        });
        println!("{table}");
        Ok(())
    })
}

pub async fn recall(a: RecallArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let ws = a.workspace.as_deref();
    let Some(resource) = a.resource.as_deref() else {
        let url = api.url(
            &["skills", &a.slug],
            &[("workspace", ws), ("revision_id", a.revision.as_deref())],
        )?;
        return print_result(a.conn.json, api.get(url).await?, print_root);
    };
    let path: Vec<&str> = resource.split('/').collect();
    let Some(revision) = a.revision.as_deref() else {
        // The server decides (and refuses with REVISION_PIN_REQUIRED).
        let mut segments = vec!["skills", a.slug.as_str(), "resources"];
        segments.extend(&path);
        let url = api.url(&segments, &[("workspace", ws)])?;
        return print_result(a.conn.json, api.get(url).await?, print_resource);
    };
    let mut segments = vec![
        "skills",
        a.slug.as_str(),
        "revisions",
        revision,
        "resources",
    ];
    segments.extend(&path);
    match &a.output {
        None => {
            let url = api.url(&segments, &[("workspace", ws)])?;
            print_result(a.conn.json, api.get(url).await?, print_resource)
        }
        Some(out) => {
            let url = api.url(&segments, &[("workspace", ws), ("raw", Some("true"))])?;
            let (bytes, etag) = api.get_bytes(url).await?;
            let hash = xmemo_core::content_hash(&bytes);
            if let Some(expected) = etag
                .as_deref()
                .map(|e| e.trim_matches('"').trim_start_matches("sha256:"))
                && expected != hash
            {
                return Err(fail(Failure::unexpected(format!(
                    "the downloaded bytes hash to {hash}, not {expected} as the server announced; nothing written"
                ))));
            }
            write_output(out, &bytes)?;
            let shown = if out == Path::new("-") {
                "stdout".to_string()
            } else {
                out.display().to_string()
            };
            if a.conn.json && out != Path::new("-") {
                print_json(&json!({
                    "written": shown,
                    "revision_id": revision,
                    "logical_path": resource,
                    "size": bytes.len(),
                    "content_hash": hash,
                }));
            } else {
                eprintln!(
                    "wrote {} to {shown} (sha256 {})",
                    size(bytes.len() as u64),
                    short_hash(&hash)
                );
            }
            Ok(())
        }
    }
}

fn write_output(out: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let result = if out == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes).and_then(|()| stdout.flush())
    } else {
        std::fs::write(out, bytes)
    };
    result.map_err(|e| {
        fail(Failure::input(format!(
            "cannot write {}: {e}",
            out.display()
        )))
    })
}

fn print_root(value: Value) -> anyhow::Result<()> {
    let ToolResult::Root(root) = decode(value, "recall result")? else {
        return Err(not_answered_with("a skill root"));
    };
    println!("{} ({}) in {}", root.name, root.slug, root.workspace);
    println!("{}", root.description);
    println!();
    println!("revision  {}  {}", root.revision_number, root.revision_id);
    println!("status    {}", root.status);
    println!("hash      {}", root.canonical_hash);
    if !root.metadata.is_empty() {
        println!("metadata  {}", Value::Object(root.metadata.clone()));
    }
    println!();
    println!("{}", root.instruction_body.trim_end());
    println!();
    if root.resources.is_empty() {
        println!("resources: none");
        return Ok(());
    }
    println!("resources ({}):", root.resources.len());
    let headers = ["PATH", "TYPE", "SIZE", "MEDIA TYPE", "SHA256"];
    let table = table_of(headers, &root.resources, |r| {
        [
            r.logical_path.clone(),
            r.component_type.to_string(),
            size(r.size),
            r.media_type.clone(),
            short_hash(&r.content_hash),
        ]
    });
    println!("{table}");
    println!();
    println!(
        "read one: xmemo recall {} --revision {} --resource PATH [-o FILE]",
        root.slug, root.revision_id
    );
    Ok(())
}

fn print_resource(value: Value) -> anyhow::Result<()> {
    let ToolResult::Resource(r) = decode(value, "resource")? else {
        return Err(not_answered_with("a resource"));
    };
    match r.encoding {
        ContentEncoding::Utf8 => {
            print!("{}", r.content);
            if !r.content.ends_with('\n') {
                println!();
            }
        }
        ContentEncoding::Base64 => println!(
            "`{}` is binary ({}, {}, sha256 {}); write it to a file with -o FILE",
            r.logical_path,
            size(r.size),
            r.media_type,
            short_hash(&r.content_hash)
        ),
    }
    Ok(())
}

pub async fn revisions(a: SlugArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let url = api.url(
        &["skills", &a.slug, "revisions"],
        &[("workspace", a.workspace.as_deref())],
    )?;
    print_result(a.conn.json, api.get_all(url, "revisions").await?, |value| {
        let list: Vec<RevisionSummary> = decode_field(&value, "revisions", "revision list")?;
        if list.is_empty() {
            println!("{} has no revisions", a.slug);
            return Ok(());
        }
        let headers = [
            "#",
            "REVISION",
            "STATUS",
            "CREATED",
            "HASH",
            "SAVED VIA",
            "NOTE",
        ];
        println!("{}", table_of(headers, &list, revision_row));
        Ok(())
    })
}

fn revision_row(r: &RevisionSummary) -> [String; 7] {
    let who = &r.attribution;
    [
        r.revision_number.to_string(),
        r.revision_id.clone(),
        r.status.to_string(),
        r.created_at.clone(),
        short_hash(&r.canonical_hash),
        or_dash(
            who.agent_instance_id
                .as_deref()
                .or(who.agent_id.as_deref())
                .or(who.client_profile.as_deref()),
        ),
        or_dash(r.review_note.as_deref()),
    ]
}

fn action_segment(action: LifecycleAction) -> &'static str {
    match action {
        LifecycleAction::Approve => "approve",
        LifecycleAction::Reject => "reject",
        LifecycleAction::Deprecate => "deprecate",
        _ => "publish",
    }
}

pub async fn lifecycle(a: LifecycleArgs, action: LifecycleAction) -> anyhow::Result<()> {
    change_status(
        &a.conn,
        &a.slug,
        &a.revision_id,
        a.workspace.as_deref(),
        a.note,
        action,
    )
    .await
}

pub async fn reject(a: RejectArgs) -> anyhow::Result<()> {
    let action = LifecycleAction::Reject;
    change_status(
        &a.conn,
        &a.slug,
        &a.revision_id,
        a.workspace.as_deref(),
        Some(a.note),
        action,
    )
    .await
}

async fn change_status(
    conn: &Conn,
    slug: &str,
    revision_id: &str,
    workspace: Option<&str>,
    note: Option<String>,
    action: LifecycleAction,
) -> anyhow::Result<()> {
    let api = Api::new(conn)?;
    let url = api.url(
        &[
            "skills",
            slug,
            "revisions",
            revision_id,
            action_segment(action),
        ],
        &[("workspace", workspace)],
    )?;
    let body = note.map(|n| json!({ "note": n }));
    let value = api.send(Method::POST, url, body.as_ref()).await?;
    print_result(conn.json, value, |value| {
        let r: RevisionSummary = decode_field(&value, "revision", "revision")?;
        print_status_change(slug, &r);
        Ok(())
    })
}

fn print_status_change(slug: &str, r: &RevisionSummary) {
    let hint = match r.status {
        RevisionStatus::Proposed => format!(
            " — waiting for a team owner or admin: xmemo approve {slug} {}",
            r.revision_id
        ),
        RevisionStatus::Draft => r
            .review_note
            .as_deref()
            .map(|n| format!(" (review note: {n})"))
            .unwrap_or_default(),
        _ => String::new(),
    };
    println!(
        "{slug} revision {} ({}) is now {}{hint}",
        r.revision_number, r.revision_id, r.status
    );
}

pub async fn archive(a: ArchiveArgs) -> anyhow::Result<()> {
    set_archived(a, true).await
}

pub async fn restore(a: ArchiveArgs) -> anyhow::Result<()> {
    set_archived(a, false).await
}

async fn set_archived(a: ArchiveArgs, archived: bool) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let verb = if archived { "archive" } else { "restore" };
    let url = api.url(
        &["skills", &a.slug, verb],
        &[("workspace", a.workspace.as_deref())],
    )?;
    let body = a.reason.map(|r| json!({ "reason": r }));
    let value = api.send(Method::POST, url, body.as_ref()).await?;
    print_result(a.conn.json, value, |value| {
        let skill: SkillView = decode_field(&value, "skill", "skill")?;
        if archived {
            println!(
                "archived {} in {}: it no longer appears in search or recall; pinned reads keep working",
                skill.slug, skill.workspace
            );
        } else {
            println!(
                "restored {} in {}: it is {} again",
                skill.slug, skill.workspace, skill.asset_status
            );
        }
        Ok(())
    })
}
