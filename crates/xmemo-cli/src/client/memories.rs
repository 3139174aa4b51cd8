//! Memories from the command line (SPEC §9): `xmemo remember`, `xmemo memories` (recall and
//! list), `xmemo memory show|history|update|forget|restore ID`.

use super::Conn;
use super::http::{Api, decode, not_answered_with, required};
use super::text::{excerpt, or_dash, table_of};
use crate::output::print_result;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};
use xmemo_core::MemoryKind;
use xmemo_server::service::memories::{EmptyRecallHint, MemoryHitView, MemoryView};
use xmemo_server::service::types::ToolResult;

#[derive(Args, Debug)]
pub struct RememberArgs {
    /// What to remember
    pub content: String,
    /// preference, fact, decision, todo, progress or note
    #[arg(long, default_value = "note")]
    pub kind: MemoryKind,
    #[arg(long)]
    pub title: Option<String>,
    /// A tag (repeat for several)
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// The project it applies to (a slug, e.g. the repository name)
    #[arg(long)]
    pub project: Option<String>,
    /// RFC 3339 instant after which it is no longer recalled
    #[arg(long)]
    pub expires_at: Option<String>,
    /// `personal` (default) or a team handle
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct MemoriesArgs {
    /// Words to search for (without: the most recent memories)
    pub query: Option<String>,
    #[arg(long)]
    pub kind: Option<MemoryKind>,
    /// Only memories with this tag (repeat: all of them)
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    #[arg(long)]
    pub project: Option<String>,
    /// Only memories saved by this agent instance (XMEMO_AGENT_INSTANCE_ID)
    #[arg(long = "instance")]
    pub agent_instance_id: Option<String>,
    /// Changed at or after this RFC 3339 instant
    #[arg(long)]
    pub since: Option<String>,
    /// Changed at or before this RFC 3339 instant
    #[arg(long)]
    pub until: Option<String>,
    /// Also forgotten memories
    #[arg(long)]
    pub forgotten: bool,
    /// How many (1–50, default 10)
    #[arg(long)]
    pub limit: Option<i64>,
    /// Whole contents instead of excerpts
    #[arg(long)]
    pub full: bool,
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct MemoryArgs {
    #[command(subcommand)]
    pub action: MemoryAction,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand, Debug)]
pub enum MemoryAction {
    /// One memory in full
    Show { memory_id: String },
    /// Every version of a memory
    History { memory_id: String },
    /// Write the next version (fields left out keep their value)
    Update {
        memory_id: String,
        /// The version you read (see `show`); a stale one changes nothing
        #[arg(long)]
        expected_version: i64,
        #[arg(long)]
        content: Option<String>,
        #[arg(long)]
        title: Option<String>,
        /// The new tags (repeat; replaces the old ones)
        #[arg(long = "tag")]
        tags: Option<Vec<String>>,
        #[arg(long)]
        kind: Option<MemoryKind>,
    },
    /// Forget a memory (it can be restored)
    Forget {
        memory_id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Restore a forgotten memory
    Restore { memory_id: String },
}

fn memory_of(value: Value) -> anyhow::Result<MemoryView> {
    match decode(value, "memory")? {
        ToolResult::Memory(m) => Ok(*m),
        ToolResult::Remembered(r) => Ok(r.memory),
        _ => Err(not_answered_with("a memory")),
    }
}

fn print_memory(m: &MemoryView) {
    println!(
        "{} ({}, version {}, {})",
        m.memory_id, m.kind, m.version, m.status
    );
    if let Some(title) = &m.title {
        println!("title:     {title}");
    }
    println!("workspace: {}", m.workspace);
    if let Some(project) = &m.project {
        println!("project:   {project}");
    }
    if !m.tags.is_empty() {
        println!("tags:      {}", m.tags.join(", "));
    }
    let who = &m.saved_by;
    println!(
        "saved by:  {} (agent {}, instance {})",
        or_dash(who.account.as_deref()),
        or_dash(who.agent_id.as_deref()),
        or_dash(who.agent_instance_id.as_deref())
    );
    if let Some(e) = &m.expires_at {
        println!("expires:   {e}");
    }
    if let Some(r) = &m.forgotten_reason {
        println!("forgotten: {r}");
    }
    println!("updated:   {}\n\n{}", m.updated_at, m.content);
}

pub async fn remember(a: RememberArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let mut body = json!({"kind": a.kind, "content": a.content});
    for (field, value) in [
        ("title", a.title),
        ("project", a.project),
        ("expires_at", a.expires_at),
        ("workspace", a.workspace),
    ] {
        if let Some(v) = value {
            body[field] = json!(v);
        }
    }
    if !a.tags.is_empty() {
        body["tags"] = json!(a.tags);
    }
    let url = api.url(&["memories"], &[])?;
    let value = required(api.call(Method::POST, url, Some(&body)).await?)?;
    print_result(a.conn.json, value, |value| {
        let created = value["data"]["created"].as_bool().unwrap_or(false);
        let m = memory_of(value)?;
        if created {
            println!("remembered {} ({})", m.memory_id, m.kind);
        } else {
            println!(
                "already remembered as {} (nothing new written)",
                m.memory_id
            );
        }
        Ok(())
    })
}

pub async fn memories(a: MemoriesArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let kind = a.kind.map(|k| k.as_str().to_string());
    let tags = (!a.tags.is_empty()).then(|| a.tags.join(","));
    let limit = a.limit.map(|n| n.to_string());
    let url = api.url(
        &["memories"],
        &[
            ("query", a.query.as_deref()),
            ("kind", kind.as_deref()),
            ("tags", tags.as_deref()),
            ("project", a.project.as_deref()),
            ("agent_instance_id", a.agent_instance_id.as_deref()),
            ("since", a.since.as_deref()),
            ("until", a.until.as_deref()),
            ("include_forgotten", a.forgotten.then_some("true")),
            ("limit", limit.as_deref()),
            ("full", a.full.then_some("true")),
            ("workspace", a.workspace.as_deref()),
        ],
    )?;
    let full = a.full;
    print_result(a.conn.json, api.get(url).await?, |value| {
        let ToolResult::Memories(found) = decode(value, "recall result")? else {
            return Err(not_answered_with("memories"));
        };
        print_hits(&found.memories, full);
        if let Some(hint) = &found.hint {
            print_hint(hint);
        }
        Ok(())
    })
}

fn print_hits(memories: &[MemoryHitView], full: bool) {
    if memories.is_empty() {
        println!("no memory matches");
    } else if full {
        for m in memories {
            println!(
                "── {} ({}, v{})\n{}\n",
                m.memory_id, m.kind, m.version, m.content
            );
        }
    } else {
        let headers = ["ID", "KIND", "WORKSPACE", "BY", "TITLE", "CONTENT"];
        println!("{}", table_of(headers, memories, hit_row));
    }
}

/// Where an empty recall looked and what to check next.
fn print_hint(hint: &EmptyRecallHint) {
    println!("searched:   {}", hint.workspaces.join(", "));
    if !hint.filters.is_empty() {
        println!("filters:    {}", hint.filters.join("; "));
    }
    println!(
        "recallable: {} (what a recall there with no query or filter finds)",
        hint.recallable
    );
    println!("next:       {}", hint.next);
}

fn hit_row(m: &MemoryHitView) -> [String; 6] {
    [
        m.memory_id.clone(),
        m.kind.to_string(),
        m.workspace.clone(),
        or_dash(m.saved_by.account.as_deref()),
        excerpt(m.title.as_deref().unwrap_or(""), 30),
        excerpt(&m.content, 60),
    ]
}

pub async fn memory(a: MemoryArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let (method, segments, body): (Method, Vec<String>, Option<Value>) = match a.action {
        MemoryAction::Show { memory_id } => (Method::GET, vec![memory_id], None),
        MemoryAction::History { memory_id } => {
            (Method::GET, vec![memory_id, "history".into()], None)
        }
        MemoryAction::Update {
            memory_id,
            expected_version,
            content,
            title,
            tags,
            kind,
        } => {
            let mut body = json!({"expected_version": expected_version});
            if let Some(v) = content {
                body["content"] = json!(v);
            }
            if let Some(v) = title {
                body["title"] = json!(v);
            }
            if let Some(v) = tags {
                body["tags"] = json!(v);
            }
            if let Some(v) = kind {
                body["kind"] = json!(v);
            }
            (Method::PATCH, vec![memory_id], Some(body))
        }
        MemoryAction::Forget { memory_id, reason } => (
            Method::POST,
            vec![memory_id, "forget".into()],
            Some(json!({"reason": reason})),
        ),
        MemoryAction::Restore { memory_id } => (
            Method::POST,
            vec![memory_id, "restore".into()],
            Some(json!({})),
        ),
    };
    let mut path: Vec<&str> = vec!["memories"];
    path.extend(segments.iter().map(String::as_str));
    let history = segments.last().is_some_and(|s| s == "history");
    let url = api.url(&path, &[])?;
    let value = required(api.call(method, url, body.as_ref()).await?)?;
    print_result(a.conn.json, value, |value| {
        if history {
            print_history(value)
        } else {
            print_memory(&memory_of(value)?);
            Ok(())
        }
    })
}

fn print_history(value: Value) -> anyhow::Result<()> {
    let ToolResult::MemoryHistory(h) = decode(value, "memory history")? else {
        return Err(not_answered_with("a history"));
    };
    for v in &h.versions {
        println!(
            "── version {} ({}) by {} at {}\n{}\n",
            v.version, v.kind, v.saved_by.account_id, v.created_at, v.content
        );
    }
    Ok(())
}
