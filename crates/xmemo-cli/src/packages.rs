//! Skill packages from the command line: `xmemo import PATH|URL`, `xmemo export SLUG`,
//! `xmemo diff SLUG FROM TO`, over the REST API (`XMEMO_URL`, `XMEMO_KEY`).
//!
//! `import` sends a `.zip` or a `SKILL.md` as is, zips a skill directory in memory
//! ([`skilldir::zip`], the same bytes `xmemo save --dir` reads), and hands `https://` URLs
//! to the server's repository import (all through `POST /imports`: the upload as the body,
//! the URL as JSON). A directory that is not itself a skill folder but holds some is
//! imported folder by folder, one request each, with the slugs of
//! `xmemo_core::package::batch::plan_slugs` (see [`import_directory`]).

use crate::client::http::{Api, Failure, decode, fail};
use crate::client::skilldir::{self, BODY_LIMIT, too_large};
use crate::client::text::{short_hash, size};
use crate::client::{Conn, print_failure_as_json};
use crate::output::{print_json, print_result};
use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Value, json};
use std::fmt;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use xmemo_core::diff::{ComponentSummary, TextDiff, TextDiffStatus, WordOpKind};
use xmemo_core::package::batch;
use xmemo_server::service::{
    BatchImported, BatchItem, BatchSummary, ImportOutcome, Imported, ItemRevision,
};

/// How a text the server's diff budget did not reach is shown.
const NOT_COMPARED: &str = "not compared (the diff's time budget ran out first)";
use xmemo_server::service::SkillDiff;

#[derive(Subcommand, Debug)]
pub enum PackageCommand {
    /// Import skills from a .zip, a SKILL.md, a directory, or a GitHub / ClawHub URL
    ///
    /// A directory that holds SKILL.md is one skill. Any other directory is searched for
    /// skill folders (folders holding a SKILL.md, in any case; one inside another belongs to
    /// it), and each is imported as its own skill, one request each: its slug is its
    /// folder's name, and when several folders ask for the same one, each gets its parent
    /// folders in front (`alice/weather` → `alice-weather`), then `-2`, `-3`. A progress bar
    /// shows on a terminal (not with --json); a table of imported / unchanged / duplicate /
    /// repaired / refused (by reason) ends the run. Running it again writes nothing new.
    /// At most 10,000 skill folders and 1 GiB per run, checked before anything is sent.
    ///
    /// Files that needed a repair to be read (no frontmatter, YAML that strict parsers
    /// refuse, a missing name or description…) are imported with warnings saying what was
    /// done; content another skill of the workspace already has is reported as a duplicate
    /// and written only with --allow-duplicates.
    ///
    /// Exit status: 0 when nothing was refused, 3 when some skills were refused (the others
    /// are imported), 1 when the command failed.
    Import(ImportArgs),
    /// Download a revision as a Source Capsule ZIP (lossless, deterministic)
    Export(ExportArgs),
    /// Word-level diff between two revisions of a skill
    Diff(DiffArgs),
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A .zip file, a SKILL.md file, a skill directory, or an https:// URL
    /// (https://github.com/OWNER/REPO[/tree/REF/PATH], https://clawhub.ai/OWNER/SKILL)
    pub source: String,
    /// Workspace id, `personal` (default) or a team handle
    #[arg(long)]
    pub workspace: Option<String>,
    /// The skill's slug (default: the capsule's, else the frontmatter name, else the folder)
    #[arg(long)]
    pub slug: Option<String>,
    /// Publish at once (in a team workspace: propose for approval)
    #[arg(long)]
    pub publish: bool,
    /// Refuse with CONFLICT unless this is still the skill's latest revision
    #[arg(long)]
    pub expected_revision: Option<String>,
    /// Also write content that another skill of the workspace already has (else reported
    /// as a duplicate, `same_content_as`, and not written)
    #[arg(long)]
    pub allow_duplicates: bool,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    pub slug: String,
    /// The revision to export (default: the published one, else the latest)
    #[arg(long)]
    pub revision: Option<String>,
    /// Where to write the ZIP (`-` for stdout; default: ./<slug>-r<N>.zip)
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Workspace id, `personal` or a team handle (needed when the slug exists in several)
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    pub slug: String,
    /// The older revision: a revision id, or a revision number (`1`, `r1`)
    pub from: String,
    /// The newer revision: a revision id, or a revision number
    pub to: String,
    /// Workspace id, `personal` or a team handle (needed when the slug exists in several)
    #[arg(long)]
    pub workspace: Option<String>,
    /// Colours: auto (when stdout is a terminal and NO_COLOR is unset), always, never.
    /// Without colours, deletions show as [-…-] and insertions as {+…+}
    #[arg(long, value_enum, default_value_t = ColorMode::Auto)]
    pub color: ColorMode,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorMode {
    Auto,
    Always,
    Never,
}

impl PackageCommand {
    fn conn(&self) -> &Conn {
        match self {
            Self::Import(a) => &a.conn,
            Self::Export(a) => &a.conn,
            Self::Diff(a) => &a.conn,
        }
    }
}

pub async fn run(cmd: PackageCommand) -> anyhow::Result<()> {
    let json = cmd.conn().json;
    let result = match cmd {
        PackageCommand::Import(a) => import(a).await,
        PackageCommand::Export(a) => export(a).await,
        PackageCommand::Diff(a) => diff(a).await,
    };
    // Refusals inside an import were printed with its result; only the exit status is left.
    if let Err(e) = &result
        && e.is::<SomeRefused>()
    {
        return result;
    }
    print_failure_as_json(json, result)
}

/// An import that went through but refused some of its skills: exit status 3.
#[derive(Debug)]
pub struct SomeRefused(pub usize);

impl SomeRefused {
    pub const EXIT_STATUS: u8 = 3;
}

impl fmt::Display for SomeRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} skill{} refused (the others were imported)",
            self.0,
            if self.0 == 1 { " was" } else { "s were" }
        )
    }
}

impl std::error::Error for SomeRefused {}

// ---------------------------------------------------------------------------------------
// import
// ---------------------------------------------------------------------------------------

async fn import(a: ImportArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let intent = a.publish.then_some("publish");
    let duplicates = a.allow_duplicates.then_some("true");
    let source = a.source.trim();
    let value = if source.starts_with("https://") || source.starts_with("http://") {
        let url = api.url(&["imports"], &[])?;
        let body = json!({
            "url": source,
            "workspace": a.workspace,
            "slug": a.slug,
            "intent": intent,
            "expected_revision_id": a.expected_revision,
            "allow_duplicates": a.allow_duplicates,
        });
        api.send(Method::POST, url, Some(&body)).await?
    } else {
        let path = Path::new(source);
        if path.is_dir()
            && let Some(folders) = skill_folders_below(path)?
        {
            return import_directory(&api, &a, path, folders).await;
        }
        let (content_type, bytes, file_name) = package_bytes(path)?;
        let url = api.url(
            &["imports"],
            &[
                ("workspace", a.workspace.as_deref()),
                ("slug", a.slug.as_deref()),
                ("intent", intent),
                ("expected_revision_id", a.expected_revision.as_deref()),
                ("filename", file_name.as_deref()),
                ("allow_duplicates", duplicates),
            ],
        )?;
        api.send_bytes(Method::POST, url, content_type, bytes)
            .await?
    };
    if value["kind"] == "imported_batch" {
        let batch: BatchImported = decode(value["data"].clone(), "import result")?;
        return finish_batch(a.conn.json, &value, &batch);
    }
    print_result(a.conn.json, value, |value| {
        let imported: Imported = decode(value["data"].clone(), "import result")?;
        print_imported(&imported);
        Ok(())
    })
}

/// The skill folders of a directory, and every file under it with its size.
type Below = (Vec<String>, Vec<(String, u64)>);

/// The skill folders under `dir` when it is not a skill folder itself (`None`: import it
/// as one skill, as before).
fn skill_folders_below(dir: &Path) -> anyhow::Result<Option<Below>> {
    let listing = skilldir::listing(dir)?;
    let folders = batch::skill_folders(listing.iter().map(|(p, _)| p.as_str()));
    if folders.is_empty() || folders.iter().any(String::is_empty) {
        return Ok(None);
    }
    Ok(Some((folders, listing)))
}

/// `xmemo import DIR` of a directory of skill folders: each folder zipped and sent as its
/// own import, in folder order, with the slug the plan gives it. The server judges each
/// one; refusals (VALIDATION_ERROR, PAYLOAD_TOO_LARGE, CONFLICT) are recorded and the run
/// goes on, anything else (the server down, the key refused, no such workspace) stops it.
async fn import_directory(
    api: &Api,
    a: &ImportArgs,
    dir: &Path,
    (folders, listing): Below,
) -> anyhow::Result<()> {
    for (flag, given) in [
        ("--slug", a.slug.is_some()),
        ("--expected-revision", a.expected_revision.is_some()),
    ] {
        if given {
            return Err(fail(Failure::input(format!(
                "{flag} is for one skill, and `{}` holds {} skill folders (their slugs come \
                 from their folders)",
                dir.display(),
                folders.len()
            ))));
        }
    }
    let inside = |path: &str| {
        folders
            .iter()
            .any(|f| path.starts_with(f.as_str()) && path.as_bytes().get(f.len()) == Some(&b'/'))
    };
    let bytes: u64 = listing
        .iter()
        .filter(|(p, _)| inside(p))
        .map(|(_, n)| n)
        .sum();
    let ignored_files = listing.iter().filter(|(p, _)| !inside(p)).count();
    if folders.len() > batch::MAX_SKILLS_PER_DIRECTORY || bytes > batch::MAX_DIRECTORY_BYTES {
        return Err(fail(Failure::local(
            "PAYLOAD_TOO_LARGE",
            format!(
                "`{}` holds {} skill folders and {bytes} bytes; one run imports at most {} \
                 and {} bytes: import its subfolders one at a time",
                dir.display(),
                folders.len(),
                batch::MAX_SKILLS_PER_DIRECTORY,
                batch::MAX_DIRECTORY_BYTES
            ),
        )));
    }
    // Only the folders are needed from here on; a listing of many files is let go.
    drop(listing);
    let plan = batch::plan_slugs(&folders);
    drop(folders);
    let progress = if a.conn.json || !std::io::stderr().is_terminal() {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(plan.len() as u64)
    };
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:32} {pos}/{len} skills  {wide_msg}")
    {
        progress.set_style(style);
    }
    let intent = a.publish.then_some("publish");
    let duplicates = a.allow_duplicates.then_some("true");
    // What is printed at the end, and only that: every row for --json, else the rows of the
    // table (refused, duplicate, repaired), without the revision the table does not show.
    let mut summary = BatchSummary::default();
    let mut results = Vec::new();
    let mut workspace = a.workspace.clone().unwrap_or_else(|| "personal".into());
    for item in plan {
        progress.set_message(item.folder.clone());
        let file_name = format!("{}/", item.folder);
        let sent = match zip_off_the_runtime(dir.join(&item.folder)).await {
            Ok(zipped) => {
                let url = api.url(
                    &["imports"],
                    &[
                        ("workspace", a.workspace.as_deref()),
                        ("slug", Some(item.slug.as_str())),
                        ("intent", intent),
                        ("filename", Some(file_name.as_str())),
                        ("allow_duplicates", duplicates),
                    ],
                )?;
                send_waiting_for_the_write_rate(api, url, zipped.bytes, &progress).await
            }
            Err(e) => Err(e),
        };
        let mut warnings: Vec<_> = item.note.into_iter().collect();
        let row = match sent {
            Ok(value) => {
                let imported: Imported = decode(value["data"].clone(), "import result")?;
                workspace = imported.saved.workspace.clone();
                warnings.extend(imported.warnings);
                BatchItem {
                    path: item.folder,
                    slug: item.slug,
                    outcome: imported.outcome,
                    warnings,
                    same_content_as: imported.same_content_as,
                    revision: Some(ItemRevision {
                        skill_id: imported.saved.skill_id,
                        revision_id: imported.saved.revision_id,
                        revision_number: imported.saved.revision_number,
                        status: imported.saved.status,
                        canonical_hash: imported.saved.canonical_hash,
                        components: imported.components,
                    }),
                    error: None,
                }
            }
            Err(e) => {
                let code = e.downcast_ref::<Failure>().map(|f| f.code().to_string());
                if !matches!(
                    code.as_deref(),
                    Some("VALIDATION_ERROR" | "PAYLOAD_TOO_LARGE" | "CONFLICT")
                ) {
                    progress.finish_and_clear();
                    return Err(e);
                }
                BatchItem {
                    path: item.folder,
                    slug: item.slug,
                    outcome: ImportOutcome::Refused,
                    warnings,
                    same_content_as: None,
                    revision: None,
                    error: Some(Failure::json_of(&e)["error"].clone()),
                }
            }
        };
        count_in(&mut summary, &row);
        if a.conn.json {
            results.push(row);
        } else if shown_in_table(&row) {
            results.push(BatchItem {
                revision: None,
                ..row
            });
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    let batch = BatchImported {
        workspace,
        summary,
        results,
        ignored_files,
        source: json!({ "kind": "directory", "path": dir.display().to_string() }),
    };
    let value = json!({ "kind": "imported_batch", "data": batch });
    finish_batch(a.conn.json, &value, &batch)
}

/// One skill folder zipped on a blocking thread. Besides keeping file reads and compression
/// off the async workers, this keeps the compressor's state (~370 KiB, allocated and freed
/// for every folder) out of the heap that holds the run's rows and the HTTP client's
/// buffers: there, small allocations made while a folder is sent took pieces of the freed
/// state, the next one no longer fit, and the process grew by ~310 KiB per folder (3,000
/// folders: 940 MiB).
async fn zip_off_the_runtime(folder: PathBuf) -> anyhow::Result<skilldir::Zipped> {
    tokio::task::spawn_blocking(move || skilldir::zip(&folder))
        .await
        .map_err(|e| anyhow::anyhow!("zipping a skill folder stopped: {e}"))?
}

/// Adds one item to a run's counts (counted by [`BatchSummary::of`], the one place).
fn count_in(total: &mut BatchSummary, item: &BatchItem) {
    let one = BatchSummary::of(std::slice::from_ref(item));
    total.skills += one.skills;
    total.imported += one.imported;
    total.unchanged += one.unchanged;
    total.duplicates += one.duplicates;
    total.repaired += one.repaired;
    total.refused += one.refused;
    for (reason, n) in one.refused_by_reason {
        *total.refused_by_reason.entry(reason).or_default() += n;
    }
    for (kind, n) in one.repairs_by_kind {
        *total.repairs_by_kind.entry(kind).or_default() += n;
    }
}

/// Whether the table ending a multi-skill import has a line for this item.
fn shown_in_table(item: &BatchItem) -> bool {
    matches!(
        item.outcome,
        ImportOutcome::Refused | ImportOutcome::Duplicate
    ) || !item.warnings.is_empty()
}

/// Prints a multi-skill result (JSON as is, or the table) and sets the exit status.
fn finish_batch(json: bool, value: &Value, batch: &BatchImported) -> anyhow::Result<()> {
    if json {
        print_json(value);
    } else {
        print!("{}", render_batch(batch));
    }
    match batch.summary.refused {
        0 => Ok(()),
        n => Err(SomeRefused(n).into()),
    }
}

/// The table ending a multi-skill import: counts, refusals by reason, repairs by kind, then
/// one line per skill that was refused, is a duplicate, or was repaired.
pub fn render_batch(batch: &BatchImported) -> String {
    let s = &batch.summary;
    let mut out = format!("{} skill folders into {}\n", s.skills, batch.workspace);
    for (label, n) in [
        ("imported", s.imported),
        ("unchanged", s.unchanged),
        ("duplicates", s.duplicates),
        ("repaired", s.repaired),
        ("refused", s.refused),
    ] {
        out.push_str(&format!("  {label:<12}{n:>6}\n"));
    }
    if !s.refused_by_reason.is_empty() {
        out.push_str("refused by reason\n");
        for (reason, n) in &s.refused_by_reason {
            out.push_str(&format!("  {reason:<28}{n:>6}\n"));
        }
    }
    if !s.repairs_by_kind.is_empty() {
        out.push_str("repairs by kind (skills)\n");
        for (kind, n) in &s.repairs_by_kind {
            out.push_str(&format!("  {kind:<28}{n:>6}\n"));
        }
    }
    if batch.ignored_files > 0 {
        out.push_str(&format!(
            "{} files outside any skill folder were not read\n",
            batch.ignored_files
        ));
    }
    for item in batch.results.iter().filter(|i| shown_in_table(i)) {
        let line = match item.outcome {
            ImportOutcome::Refused => {
                let error = item.error.as_ref();
                let code = error.and_then(|e| e["code"].as_str()).unwrap_or("?");
                let message = error.and_then(|e| e["message"].as_str()).unwrap_or("");
                format!("refused    {}: {code}: {message}", item.path)
            }
            ImportOutcome::Duplicate => format!(
                "duplicate  {} → same content as `{}`, not written (--allow-duplicates writes it)",
                item.path,
                item.same_content_as.as_deref().unwrap_or("?")
            ),
            _ => format!(
                "{:<10} {} as `{}`",
                item.outcome.as_str(),
                item.path,
                item.slug
            ),
        };
        out.push_str(&line);
        out.push('\n');
        for w in &item.warnings {
            out.push_str(&format!("    warning {w}\n"));
        }
    }
    out
}

fn print_imported(imported: &Imported) {
    let data = &imported.saved;
    match imported.outcome {
        ImportOutcome::Created => println!(
            "imported {} revision {} ({}) into {}",
            data.slug, data.revision_number, data.status, data.workspace
        ),
        ImportOutcome::Duplicate => println!(
            "duplicate: `{}` in {} already holds this content (revision {}); nothing written \
             (--allow-duplicates writes it as `{}`)",
            imported.same_content_as.as_deref().unwrap_or("?"),
            data.workspace,
            data.revision_number,
            data.slug
        ),
        _ => println!(
            "unchanged: {} revision {} ({}) in {} already holds this content",
            data.slug, data.revision_number, data.status, data.workspace
        ),
    }
    println!("revision    {}", data.revision_id);
    println!("hash        {}", data.canonical_hash);
    println!("components  {}", imported.components);
    println!("source      {}", describe_source(&imported.source));
    if let Some(other) = &imported.same_content_as
        && imported.outcome != ImportOutcome::Duplicate
    {
        println!("same content as `{other}`");
    }
    for w in &imported.warnings {
        println!("warning     {w}");
    }
    if data.status == xmemo_core::RevisionStatus::Draft
        && imported.outcome != ImportOutcome::Duplicate
    {
        println!(
            "publish it: xmemo publish {} {}",
            data.slug, data.revision_id
        );
    }
}

fn describe_source(source: &Value) -> String {
    let s = |k: &str| source[k].as_str().map(str::to_string);
    match source["kind"].as_str() {
        Some("github") => {
            let mut out = format!("github {}", s("repository").unwrap_or_default());
            if let Some(r) = s("ref") {
                out.push_str(&format!("@{r}"));
            }
            if let Some(p) = s("path") {
                out.push_str(&format!(" {p}"));
            }
            if let Some(c) = s("commit") {
                out.push_str(&format!(" (commit {})", short_hash(&c)));
            }
            out
        }
        Some("clawhub") => format!("clawhub {}", s("skill").unwrap_or_default()),
        Some(kind) => {
            let name = s("file_name").map(|n| format!(" {n}")).unwrap_or_default();
            format!("{kind}{name}")
        }
        None => "-".into(),
    }
}

/// The body to send for a local path: a ZIP as is, a SKILL.md as Markdown, a directory
/// zipped in memory. Returns the content type, the bytes and a file name for the record.
fn package_bytes(path: &Path) -> anyhow::Result<(&'static str, Vec<u8>, Option<String>)> {
    let meta = std::fs::metadata(path).map_err(|e| {
        fail(Failure::input(format!(
            "cannot read `{}`: {e} (give a .zip, a SKILL.md, a skill directory or an https:// URL)",
            path.display()
        )))
    })?;
    if meta.is_dir() {
        let zipped = skilldir::zip(path)?;
        return Ok((
            "application/zip",
            zipped.bytes,
            zipped.folder.map(|n| format!("{n}/")),
        ));
    }
    let name = path
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string));
    let Some(bytes) = skilldir::read_at_most(path, BODY_LIMIT as u64)? else {
        return Err(too_large(path));
    };
    let is_zip = bytes.starts_with(b"PK\x03\x04")
        || bytes.starts_with(b"PK\x05\x06")
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zip"));
    let content_type = if is_zip {
        "application/zip"
    } else {
        "text/markdown"
    };
    Ok((content_type, bytes, name))
}

// ---------------------------------------------------------------------------------------
// export
// ---------------------------------------------------------------------------------------

async fn export(a: ExportArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let url = api.url(
        &["skills", &a.slug, "export"],
        &[
            ("revision_id", a.revision.as_deref()),
            ("workspace", a.workspace.as_deref()),
        ],
    )?;
    let (bytes, _) = api.get_bytes(url).await?;
    // The capsule describes itself; read it back for the summary (and as a check).
    let manifest = xmemo_core::package::read_zip(&bytes, &Default::default())
        .ok()
        .and_then(|p| p.capsule);
    let file_name = manifest
        .as_ref()
        .map(|m| format!("{}-r{}.zip", m.skill.slug, m.revision.revision_number))
        .unwrap_or_else(|| format!("{}.zip", a.slug));
    let output = a.output.unwrap_or_else(|| PathBuf::from(&file_name));
    if output.as_os_str() == "-" {
        std::io::stdout()
            .write_all(&bytes)
            .and_then(|()| std::io::stdout().flush())
            .map_err(|e| fail(Failure::input(format!("cannot write to stdout: {e}"))))?;
        // stdout holds the ZIP; the summary goes to stderr.
        eprintln!("exported {} bytes", bytes.len());
        return Ok(());
    }
    std::fs::write(&output, &bytes).map_err(|e| {
        fail(Failure::input(format!(
            "cannot write `{}`: {e}",
            output.display()
        )))
    })?;
    let summary = json!({
        "file": output.display().to_string(),
        "bytes": bytes.len(),
        "slug": manifest.as_ref().map(|m| m.skill.slug.clone()),
        "revision_id": manifest.as_ref().map(|m| m.revision.revision_id.clone()),
        "revision_number": manifest.as_ref().map(|m| m.revision.revision_number),
        "status": manifest.as_ref().and_then(|m| m.revision.status),
        "canonical_hash": manifest.as_ref().map(|m| m.canonical_hash.clone()),
    });
    print_result(a.conn.json, summary, |_| {
        println!("wrote {} ({} bytes)", output.display(), bytes.len());
        if let Some(m) = &manifest {
            println!(
                "revision  {} (r{}, {})",
                m.revision.revision_id,
                m.revision.revision_number,
                m.revision
                    .status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into())
            );
            println!("hash      {}", m.canonical_hash);
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// diff
// ---------------------------------------------------------------------------------------

async fn diff(a: DiffArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let mut numbers = None;
    let mut resolve = async |arg: &str| -> anyhow::Result<String> {
        let trimmed = arg.trim();
        let digits = trimmed
            .strip_prefix('r')
            .or_else(|| trimmed.strip_prefix('#'))
            .unwrap_or(trimmed);
        let Ok(number) = digits.parse::<i64>() else {
            return Ok(trimmed.to_string());
        };
        if numbers.is_none() {
            let url = api.url(
                &["skills", &a.slug, "revisions"],
                &[("workspace", a.workspace.as_deref())],
            )?;
            let list = api.get_all(url, "revisions").await?;
            let map: Vec<(i64, String)> = list["revisions"]
                .as_array()
                .map(|revs| {
                    revs.iter()
                        .filter_map(|r| {
                            Some((
                                r["revision_number"].as_i64()?,
                                r["revision_id"].as_str()?.to_string(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            numbers = Some(map);
        }
        numbers
            .as_ref()
            .and_then(|m| m.iter().find(|(n, _)| *n == number))
            .map(|(_, id)| id.clone())
            .ok_or_else(|| {
                fail(Failure::local(
                    "NOT_FOUND",
                    format!("skill `{}` has no revision number {number}", a.slug),
                ))
            })
    };
    let from = resolve(&a.from).await?;
    let to = resolve(&a.to).await?;
    let url = api.url(
        &["skills", &a.slug, "diff"],
        &[
            ("from", Some(from.as_str())),
            ("to", Some(to.as_str())),
            ("workspace", a.workspace.as_deref()),
        ],
    )?;
    let color = match a.color {
        ColorMode::Always => true,
        ColorMode::Never => false,
        ColorMode::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    print_result(a.conn.json, api.get(url).await?, |value| {
        let diff: SkillDiff = decode(value, "diff")?;
        print!("{}", render(&diff, &Style { color }));
        Ok(())
    })
}

/// How insertions and deletions are marked.
pub struct Style {
    pub color: bool,
}

impl Style {
    fn insert(&self, text: &str) -> String {
        if self.color {
            paint(text, "\x1b[32m")
        } else {
            format!("{{+{text}+}}")
        }
    }

    fn delete(&self, text: &str) -> String {
        if self.color {
            paint(text, "\x1b[31;9m")
        } else {
            format!("[-{text}-]")
        }
    }

    fn dim(&self, text: &str) -> String {
        if self.color {
            paint(text, "\x1b[2m")
        } else {
            text.to_string()
        }
    }

    fn bold(&self, text: &str) -> String {
        if self.color {
            paint(text, "\x1b[1m")
        } else {
            text.to_string()
        }
    }
}

/// ANSI style per line, so a colour never runs past a line break.
fn paint(text: &str, code: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some("") => "\n".to_string(),
            Some(body) => format!("{code}{body}\x1b[0m\n"),
            None => format!("{code}{line}\x1b[0m"),
        })
        .collect()
}

/// Unchanged lines kept around each change.
const CONTEXT_LINES: usize = 2;

/// A word diff as text: unchanged runs folded to a few lines of context.
fn render_text(d: &TextDiff, style: &Style) -> String {
    let mut out = String::new();
    let last = d.ops.len().saturating_sub(1);
    for (i, op) in d.ops.iter().enumerate() {
        match op.op {
            WordOpKind::Insert => out.push_str(&style.insert(&op.text)),
            WordOpKind::Delete => out.push_str(&style.delete(&op.text)),
            WordOpKind::Equal => out.push_str(&fold(&op.text, i == 0, i == last, style)),
        }
    }
    out
}

fn fold(text: &str, first: bool, last: bool, style: &Style) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let head = if first { 0 } else { 1 + CONTEXT_LINES };
    let tail = if last { 0 } else { 1 + CONTEXT_LINES };
    if lines.len() <= head + tail + 1 {
        return text.to_string();
    }
    let hidden = lines.len() - head - tail;
    let mut out: String = lines[..head].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&style.dim(&format!("⋮ {hidden} unchanged lines\n")));
    out.push_str(&lines[lines.len() - tail..].concat());
    out
}

fn indent(text: &str, by: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        out.push_str(by);
        out.push_str(line);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `+ references/a.md (reference, 1.2 KiB)`: an added (`+`) or removed (`-`) component.
fn component_line(sign: char, c: &ComponentSummary) -> String {
    format!(
        "{sign} {} ({}, {})",
        c.logical_path,
        c.component_type,
        size(c.size)
    )
}

/// The whole diff as terminal text.
pub fn render(d: &SkillDiff, style: &Style) -> String {
    let mut out = String::new();
    let side = |s: &xmemo_server::service::DiffSide| {
        format!("r{} {} ({})", s.revision_number, s.revision_id, s.status)
    };
    out.push_str(&style.bold(&format!(
        "diff {} in {}: {} → {}\n",
        d.slug,
        d.workspace,
        side(&d.from),
        side(&d.to)
    )));
    let diff = &d.diff;
    if diff.identical {
        out.push_str("identical content (same canonical_hash)\n");
        return out;
    }
    if let Some(c) = &diff.name {
        out.push_str(&format!(
            "name: {} → {}\n",
            style.delete(&c.old),
            style.insert(&c.new)
        ));
    }
    if let Some(c) = &diff.description {
        out.push_str(&format!(
            "description: {} → {}\n",
            style.delete(&c.old),
            style.insert(&c.new)
        ));
    }
    if !diff.metadata.is_empty() {
        out.push_str("metadata:\n");
        for m in &diff.metadata {
            let value = |v: &Option<Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_default();
            let line = match m.change {
                xmemo_core::diff::MetadataChangeKind::Added => {
                    format!("  + {} = {}\n", m.key, style.insert(&value(&m.new)))
                }
                xmemo_core::diff::MetadataChangeKind::Removed => {
                    format!("  - {} = {}\n", m.key, style.delete(&value(&m.old)))
                }
                xmemo_core::diff::MetadataChangeKind::Changed => format!(
                    "  ~ {}: {} → {}\n",
                    m.key,
                    style.delete(&value(&m.old)),
                    style.insert(&value(&m.new))
                ),
            };
            out.push_str(&line);
        }
    }
    let body = &diff.instruction_body;
    if body.status == TextDiffStatus::NotCompared {
        out.push_str(&format!("instruction body: changed, {NOT_COMPARED}\n"));
    } else if body.changed {
        out.push_str(&format!(
            "instruction body (+{} −{} words):\n",
            body.words_inserted, body.words_deleted
        ));
        out.push_str(&indent(&render_text(body, style), "  "));
    } else {
        out.push_str("instruction body: unchanged\n");
    }
    let c = &diff.components;
    out.push_str(&format!(
        "components: {} added, {} removed, {} modified, {} unchanged\n",
        c.added.len(),
        c.removed.len(),
        c.modified.len(),
        c.unchanged.len()
    ));
    for a in &c.added {
        out.push_str(&format!("  {}\n", style.insert(&component_line('+', a))));
    }
    for r in &c.removed {
        out.push_str(&format!("  {}\n", style.delete(&component_line('-', r))));
    }
    for m in &c.modified {
        let mut line = format!("  ~ {} ({})", m.logical_path, m.new.component_type);
        if m.type_changed {
            line.push_str(&format!(
                ": type {} → {}",
                m.old.component_type, m.new.component_type
            ));
        }
        match &m.text_diff {
            Some(t) if t.status == TextDiffStatus::NotCompared => {
                line.push_str(&format!(": changed, {NOT_COMPARED}\n"));
                out.push_str(&line);
            }
            Some(t) => {
                line.push_str(&format!(
                    ": +{} −{} words\n",
                    t.words_inserted, t.words_deleted
                ));
                out.push_str(&line);
                out.push_str(&indent(&render_text(t, style), "      "));
            }
            None if m.content_changed => {
                line.push_str(&format!(
                    ": binary {} sha256 {}… → {} sha256 {}…\n",
                    size(m.old.size),
                    short_hash(&m.old.content_hash),
                    size(m.new.size),
                    short_hash(&m.new.content_hash),
                ));
                out.push_str(&line);
            }
            None => {
                line.push('\n');
                out.push_str(&line);
            }
        }
    }
    if !diff.complete {
        out.push_str(&style.dim(&format!(
            "note: the diff reached its time budget before comparing {} of the changed texts\n",
            diff.not_compared.len()
        )));
    } else if diff.timed_out {
        out.push_str(&style.dim(
            "note: the diff reached its time budget; some changes are shown coarser than minimal\n",
        ));
    }
    out
}

/// How many times one folder's upload waits for the account's write rate before the run
/// stops (a server allowing fewer writes than this many waits cover is misconfigured).
const MAX_RATE_WAITS_PER_FOLDER: u32 = 5;

/// Sends one folder of a batch import. A large folder tree can hold more skills than the
/// server's per-account write rate allows in a minute; the batch then waits the time the
/// server names (`Retry-After`) and sends the same folder again instead of failing the run.
async fn send_waiting_for_the_write_rate(
    api: &Api,
    url: reqwest::Url,
    zipped: Vec<u8>,
    progress: &indicatif::ProgressBar,
) -> anyhow::Result<Value> {
    let mut waits = 0;
    loop {
        let sent = api
            .send_bytes(Method::POST, url.clone(), "application/zip", zipped.clone())
            .await;
        let wait = match &sent {
            Err(e) => e
                .downcast_ref::<Failure>()
                .and_then(Failure::rate_limited_wait),
            Ok(_) => None,
        };
        match wait {
            Some(wait) if waits < MAX_RATE_WAITS_PER_FOLDER => {
                waits += 1;
                progress.set_message(format!(
                    "waiting {} s for the server's write rate",
                    wait.as_secs()
                ));
                tokio::time::sleep(wait).await;
            }
            _ => return sent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xmemo_core::diff::WordOp;

    fn text(ops: &[(WordOpKind, &str)]) -> TextDiff {
        TextDiff {
            changed: true,
            timed_out: false,
            status: TextDiffStatus::Complete,
            ops: ops
                .iter()
                .map(|(op, t)| WordOp {
                    op: *op,
                    text: t.to_string(),
                })
                .collect(),
            words_inserted: 0,
            words_deleted: 0,
        }
    }

    #[test]
    fn plain_and_coloured_markers() {
        use WordOpKind::*;
        let d = text(&[
            (Equal, "Deploy the "),
            (Delete, "app"),
            (Insert, "service"),
            (Equal, " now"),
        ]);
        assert_eq!(
            render_text(&d, &Style { color: false }),
            "Deploy the [-app-]{+service+} now"
        );
        assert_eq!(
            render_text(&d, &Style { color: true }),
            "Deploy the \x1b[31;9mapp\x1b[0m\x1b[32mservice\x1b[0m now"
        );
        // Colours stop at line ends.
        assert_eq!(
            paint("a\nb", "\x1b[32m"),
            "\x1b[32ma\x1b[0m\n\x1b[32mb\x1b[0m"
        );
    }

    #[test]
    fn texts_the_budget_did_not_reach_are_named() {
        use xmemo_core::{ComponentInput, ComponentType, RevisionContent};
        let content = |body: &str, doc: &[u8]| RevisionContent {
            name: "Deploy".into(),
            description: "How".into(),
            instruction_body: body.into(),
            metadata: Default::default(),
            components: vec![ComponentInput {
                logical_path: "references/a.md".into(),
                component_type: ComponentType::Reference,
                content: doc.to_vec(),
            }],
        };
        let side = |n: i64| xmemo_server::service::DiffSide {
            revision_id: format!("rev_{n}"),
            revision_number: n,
            status: xmemo_core::RevisionStatus::Draft,
            canonical_hash: "0".repeat(64),
            created_at: "2026-01-01T00:00:00.000Z".into(),
        };
        let diff = xmemo_core::diff::diff_revisions(
            &content("old body", b"old words"),
            &content("new body", b"new words"),
            std::time::Duration::ZERO,
        );
        let d = SkillDiff {
            skill_id: "skill_1".into(),
            slug: "deploy".into(),
            workspace: "personal".into(),
            from: side(1),
            to: side(2),
            diff,
        };
        let out = render(&d, &Style { color: false });
        assert!(
            out.contains(&format!("instruction body: changed, {NOT_COMPARED}")),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "~ references/a.md (reference): changed, {NOT_COMPARED}"
            )),
            "{out}"
        );
        assert!(
            out.contains("before comparing 2 of the changed texts"),
            "{out}"
        );
    }

    #[test]
    fn long_unchanged_runs_are_folded() {
        use WordOpKind::*;
        let many: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let d = text(&[(Equal, &many), (Insert, "new"), (Equal, &many)]);
        let out = render_text(&d, &Style { color: false });
        assert!(
            out.starts_with("⋮ 17 unchanged lines\nline 18\nline 19\nline 20\n{+new+}"),
            "{out}"
        );
        assert!(
            out.contains("{+new+}line 1\nline 2\nline 3\n⋮ 17 unchanged lines\n"),
            "{out}"
        );
        assert!(!out.contains("line 10\n"), "{out}");
    }
}
