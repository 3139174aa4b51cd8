//! `xmemo save`: a new revision from flags, or from a skill directory with `--dir`.

use super::Conn;
use super::http::{Api, Failure, decode, fail, not_answered_with};
use super::skilldir;
use crate::output::print_result;
use clap::Args;
use reqwest::Method;
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use xmemo_core::{ComponentInput, ComponentType, RevisionStatus};
use xmemo_server::service::types::ToolResult;

#[derive(Args, Debug)]
pub struct SaveArgs {
    /// The skill's slug (lowercase words joined by hyphens); with --dir it defaults to the
    /// slug `xmemo import DIR` would use: the capsule's, else the frontmatter name, else the
    /// directory name
    #[arg(required_unless_present = "dir")]
    pub slug: Option<String>,
    /// Read SKILL.md and the files around it from this skill directory, by the same package
    /// rules as `xmemo import DIR` (so both save the same content and canonical_hash)
    #[arg(long, conflicts_with_all = ["body", "body_file", "component"])]
    pub dir: Option<PathBuf>,
    /// Display name (required on the first save); with --dir it replaces the frontmatter
    /// name, so the revision then differs from an import of the directory
    #[arg(long)]
    pub name: Option<String>,
    /// What the skill is for (required on the first save); with --dir it replaces the
    /// frontmatter description, so the revision then differs from an import of the directory
    #[arg(long)]
    pub description: Option<String>,
    /// The Markdown instructions
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the instructions from this file (`-` for stdin)
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// A file to attach, as TYPE:PATH=FILE (TYPE: reference, example, template, document,
    /// artifact or script; PATH: its logical path in the skill); repeatable
    #[arg(long = "component", value_name = "TYPE:PATH=FILE")]
    pub component: Vec<String>,
    /// Extra metadata as a JSON object (license, compatibility, allowed-tools, …); with --dir
    /// its keys are added to (and replace) the frontmatter's
    #[arg(long)]
    pub metadata: Option<String>,
    /// Publish at once (in a team workspace: propose for approval)
    #[arg(long)]
    pub publish: bool,
    /// Workspace id, `personal` (default) or a team handle
    #[arg(long)]
    pub workspace: Option<String>,
    /// Refuse with CONFLICT unless this is still the skill's latest revision
    #[arg(long)]
    pub expected_revision: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

pub async fn run(a: SaveArgs) -> anyhow::Result<()> {
    let request = build_request(&a)?;
    let api = Api::new(&a.conn)?;
    let url = api.url(&["skills"], &[])?;
    let value = api.send(Method::POST, url, Some(&request)).await?;
    print_result(a.conn.json, value, print_saved)
}

fn print_saved(value: Value) -> anyhow::Result<()> {
    let ToolResult::Saved(s) = decode(value, "save result")? else {
        return Err(not_answered_with("a saved revision"));
    };
    if s.created {
        println!(
            "created {} revision {} ({}) in {}",
            s.slug, s.revision_number, s.status, s.workspace
        );
    } else {
        println!(
            "unchanged: {} revision {} ({}) in {} already holds this content",
            s.slug, s.revision_number, s.status, s.workspace
        );
    }
    println!("revision  {}", s.revision_id);
    println!("status    {}", s.status);
    println!("hash      {}", s.canonical_hash);
    if s.status == RevisionStatus::Draft {
        println!("publish it: xmemo publish {} {}", s.slug, s.revision_id);
    }
    Ok(())
}

/// The `POST /api/v1/skills` body.
fn build_request(a: &SaveArgs) -> anyhow::Result<Value> {
    let (slug, name, description, body, mut metadata, components) = match &a.dir {
        Some(dir) => {
            // The content an import of this directory would save (see `skilldir`).
            let package = skilldir::read(dir)?;
            // Read the way an import reads it, repairs included: say what was repaired.
            for w in &package.repairs {
                eprintln!("warning: {w}");
            }
            let slug = match &a.slug {
                Some(s) => s.clone(),
                None => package.suggested_slug().ok_or_else(|| {
                    fail(Failure::input(format!(
                        "cannot derive a slug from the frontmatter name `{}` or the directory name; \
                         pass one: xmemo save --dir {} my-skill",
                        package.content.name,
                        dir.display()
                    )))
                })?,
            };
            let content = package.content;
            (
                slug,
                Some(a.name.clone().unwrap_or(content.name)),
                Some(a.description.clone().unwrap_or(content.description)),
                content.instruction_body,
                content.metadata,
                content.components,
            )
        }
        None => {
            let slug = a
                .slug
                .clone()
                .ok_or_else(|| fail(Failure::input("give the skill's SLUG (or --dir DIR)")))?;
            let body = match (&a.body, &a.body_file) {
                (Some(b), _) => b.clone(),
                (None, Some(path)) => read_body(path)?,
                (None, None) => {
                    return Err(fail(Failure::input(
                        "give the instructions with --body TEXT or --body-file FILE (or save a skill directory with --dir DIR)",
                    )));
                }
            };
            let components = a
                .component
                .iter()
                .map(|spec| parse_component(spec))
                .collect::<anyhow::Result<Vec<_>>>()?;
            (
                slug,
                a.name.clone(),
                a.description.clone(),
                body,
                Map::new(),
                components,
            )
        }
    };
    if let Some(text) = &a.metadata {
        let extra: Map<String, Value> = serde_json::from_str(text).map_err(|e| {
            fail(Failure::input(format!(
                "--metadata must be a JSON object: {e}"
            )))
        })?;
        metadata.extend(extra);
    }
    let mut request = json!({
        "slug": slug,
        "instruction_body": body,
        "components": components.iter().map(skilldir::component_json).collect::<Vec<_>>(),
        "intent": if a.publish { "publish" } else { "draft" },
    });
    let optional = [
        ("name", name.map(Value::String)),
        ("description", description.map(Value::String)),
        (
            "metadata",
            (!metadata.is_empty()).then_some(Value::Object(metadata)),
        ),
        ("workspace", a.workspace.clone().map(Value::String)),
        (
            "expected_revision_id",
            a.expected_revision.clone().map(Value::String),
        ),
    ];
    if let Some(obj) = request.as_object_mut() {
        for (key, value) in optional {
            if let Some(v) = value {
                obj.insert(key.into(), v);
            }
        }
    }
    Ok(request)
}

fn read_body(path: &Path) -> anyhow::Result<String> {
    let mut text = String::new();
    let result = if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    result.map_err(|e| {
        fail(Failure::input(format!(
            "cannot read the instructions from {}: {e}",
            path.display()
        )))
    })?;
    Ok(text)
}

/// `TYPE:PATH=FILE`.
fn parse_component(spec: &str) -> anyhow::Result<ComponentInput> {
    let bad = |why: &str| {
        fail(Failure::input(format!(
            "--component `{spec}`: {why} (expected TYPE:PATH=FILE, e.g. script:scripts/run.py=./run.py)"
        )))
    };
    let (kind, rest) = spec
        .split_once(':')
        .ok_or_else(|| bad("no `:` after the type"))?;
    let (logical_path, file) = rest
        .split_once('=')
        .ok_or_else(|| bad("no `=` before the file"))?;
    let component_type: ComponentType = kind.trim().parse().map_err(|e: String| bad(&e))?;
    if logical_path.is_empty() || file.is_empty() {
        return Err(bad("the path and the file must not be empty"));
    }
    let bytes = std::fs::read(file)
        .map_err(|e| fail(Failure::input(format!("cannot read {file}: {e}"))))?;
    Ok(ComponentInput {
        logical_path: logical_path.to_string(),
        component_type,
        content: bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_specs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run.py");
        std::fs::write(&file, "print(1)").unwrap();
        let spec = format!("script:scripts/run.py={}", file.display());
        let c = parse_component(&spec).unwrap();
        assert_eq!(c.logical_path, "scripts/run.py");
        assert_eq!(c.component_type, ComponentType::Script);
        assert_eq!(c.content, b"print(1)");
        assert!(parse_component("script").is_err());
        assert!(parse_component("script:x").is_err());
        assert!(parse_component("bogus:x=y").is_err());
    }
}
