//! The account's own data (SPEC §7): one export ZIP, and deletion.
//!
//! The export holds everything the account can write: every revision of every skill in its
//! writable workspaces as Source Capsules, the memories of those workspaces with their
//! history, its workspaces and memberships, and its API keys' metadata (never a secret). It
//! is streamed entry by entry (nothing larger than one capsule is held), and deterministic:
//! the same data gives the same bytes (fixed entry order and timestamps).

use super::Service;
use super::access::Access;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use xmemo_core::{Role, Scope, WorkspaceKind};
use xmemo_store::{AccountDeletion, AuditDraft};

/// Top folder of every export entry.
const ROOT: &str = "xmemo-export";
/// Memories read per store call while exporting.
const MEMORY_PAGE: u32 = 200;

/// A `Write` whose bytes are taken out after each ZIP entry and sent down the response.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("export buffer poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink {
    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }
}

type Zip = zip::ZipWriter<zip::write::StreamWriter<Sink>>;

/// One export in progress: entries go into the ZIP, their bytes out to the client.
struct Export {
    zip: Zip,
    sink: Sink,
    tx: mpsc::Sender<std::io::Result<Vec<u8>>>,
}

impl Export {
    /// Stored entries (capsules are ZIPs already), fixed timestamp: same data, same bytes.
    fn options(compress: bool) -> zip::write::SimpleFileOptions {
        let method = if compress {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        };
        zip::write::SimpleFileOptions::default()
            .compression_method(method)
            .last_modified_time(zip::DateTime::default())
            .unix_permissions(0o644)
    }

    async fn entry(&mut self, name: &str, bytes: &[u8], compress: bool) -> ServiceResult<()> {
        let failed = |e: String| ServiceError::Internal(format!("export entry {name}: {e}"));
        self.zip
            .start_file(format!("{ROOT}/{name}"), Self::options(compress))
            .map_err(|e| failed(e.to_string()))?;
        self.zip
            .write_all(bytes)
            .map_err(|e| failed(e.to_string()))?;
        self.send().await
    }

    async fn send(&mut self) -> ServiceResult<()> {
        let chunk = self.sink.take();
        if chunk.is_empty() {
            return Ok(());
        }
        self.tx
            .send(Ok(chunk))
            .await
            .map_err(|_| ServiceError::Internal("the export download was abandoned".into()))
    }

    async fn finish(mut self) -> ServiceResult<()> {
        let zip = std::mem::replace(&mut self.zip, zip::ZipWriter::new_stream(Sink::default()));
        zip.finish()
            .map_err(|e| ServiceError::Internal(format!("export: {e}")))?;
        self.send().await
    }
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}

impl Service {
    /// The account export as a stream of ZIP bytes. Checks run before the first byte, so a
    /// refusal is an ordinary error; a failure midway ends the stream early (logged).
    pub async fn export_account(
        &self,
        principal: &Principal,
    ) -> ServiceResult<mpsc::Receiver<std::io::Result<Vec<u8>>>> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let (tx, rx) = mpsc::channel(8);
        let service = self.clone();
        let principal = principal.clone();
        tokio::spawn(async move {
            let sink = Sink::default();
            let export = Export {
                zip: zip::ZipWriter::new_stream(sink.clone()),
                sink,
                tx: tx.clone(),
            };
            if let Err(e) = service.write_export(&principal, &access, export).await {
                tracing::error!(error = %e, account = %principal.account.account_id, "account export failed");
                let _ = tx
                    .send(Err(std::io::Error::other("the export failed; try again")))
                    .await;
            }
        });
        Ok(rx)
    }

    async fn write_export(
        &self,
        principal: &Principal,
        access: &Access,
        mut export: Export,
    ) -> ServiceResult<()> {
        let account = &principal.account;
        let keys = self.store.list_api_keys(&account.account_id).await?;
        let mut memberships: Vec<_> = access.memberships.iter().collect();
        memberships.sort_by(|a, b| {
            (
                a.workspace.kind != WorkspaceKind::Personal,
                &a.workspace.handle,
            )
                .cmp(&(
                    b.workspace.kind != WorkspaceKind::Personal,
                    &b.workspace.handle,
                ))
        });
        let manifest = json!({
            "format": "xmemo-account-export",
            "format_version": 1,
            "account": {
                "account_id": account.account_id,
                "handle": account.handle,
                "display_name": account.display_name,
                "is_admin": account.is_admin,
                "created_at": account.created_at,
            },
            "workspaces": memberships.iter().map(|m| json!({
                "workspace_id": m.workspace.workspace_id,
                "handle": m.workspace.handle,
                "name": m.workspace.name,
                "kind": m.workspace.kind,
                "role": m.role,
                "created_at": m.workspace.created_at,
            })).collect::<Vec<_>>(),
            "api_keys": keys,
            "contents": "skills/<workspace>/<slug>/r<revision>.zip: every revision as a Source Capsule; memories.jsonl: one memory with its versions per line",
        });
        export
            .entry("account.json", &pretty(&manifest), true)
            .await?;

        let writable: Vec<&_> = memberships
            .iter()
            .copied()
            .filter(|m| m.role.can_write())
            .collect();
        for m in &writable {
            let ws = &m.workspace;
            let mut skills = self
                .store
                .list_skills(std::slice::from_ref(&ws.workspace_id))
                .await?;
            skills.sort_by(|a, b| a.slug.cmp(&b.slug));
            for skill in skills {
                for revision in self.store.list_revisions(&skill.skill_id).await? {
                    let capsule = self
                        .capsule_of(&skill.slug, &skill.skill_id, &revision)
                        .await?;
                    let name = format!(
                        "skills/{}/{}/r{:06}.zip",
                        ws.handle, skill.slug, revision.revision_number
                    );
                    export.entry(&name, &capsule.bytes, false).await?;
                }
            }
        }

        export
            .zip
            .start_file(format!("{ROOT}/memories.jsonl"), Export::options(true))
            .map_err(|e| ServiceError::Internal(format!("export memories: {e}")))?;
        let ids: Vec<String> = writable
            .iter()
            .map(|m| m.workspace.workspace_id.clone())
            .collect();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .store
                .memory_page(&ids, after.as_deref(), MEMORY_PAGE)
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.memory_id.clone());
            let page_ids: Vec<String> = page.iter().map(|m| m.memory_id.clone()).collect();
            let versions = self.store.memory_history(&page_ids).await?;
            for memory in page {
                let own: Vec<_> = versions
                    .iter()
                    .filter(|v| v.memory_id == memory.memory_id)
                    .collect();
                let line = json!({
                    "workspace": access.handle(&memory.workspace_id),
                    "memory": memory,
                    "versions": own,
                });
                let mut bytes = serde_json::to_vec(&line)
                    .map_err(|e| ServiceError::Internal(format!("export memory: {e}")))?;
                bytes.push(b'\n');
                export
                    .zip
                    .write_all(&bytes)
                    .map_err(|e| ServiceError::Internal(format!("export memory: {e}")))?;
            }
            export.send().await?;
        }
        export.finish().await
    }

    /// Deletes the caller's account after `confirm` repeats its handle. Teams it alone owns
    /// must be handed over or deleted first (CONFLICT listing them); the last server
    /// administrator cannot delete itself.
    pub async fn delete_account(
        &self,
        principal: &Principal,
        confirm: &str,
    ) -> ServiceResult<AccountDeletion> {
        principal.require(Scope::Write)?;
        let account = &principal.account;
        if confirm != account.handle {
            return Err(ServiceError::validation(
                "type the account's handle in `confirm` to delete it",
                "confirm",
            ));
        }
        let access = self.access(principal).await?;
        let mut sole_owner = Vec::new();
        for m in &access.memberships {
            if m.workspace.kind != WorkspaceKind::Team || m.role != Role::Owner {
                continue;
            }
            let owners = self
                .store
                .list_members(&m.workspace.workspace_id)
                .await?
                .into_iter()
                .filter(|member| member.role == Role::Owner)
                .count();
            if owners <= 1 {
                sole_owner.push(m.workspace.handle.clone());
            }
        }
        if !sole_owner.is_empty() {
            sole_owner.sort();
            return Err(ServiceError::ConflictWith(
                format!(
                    "the account is the only owner of {}: hand them over to another owner or delete them first",
                    sole_owner.join(", ")
                ),
                json!({"teams": sole_owner}),
            ));
        }
        if account.is_admin {
            let admins = self
                .store
                .list_accounts()
                .await?
                .into_iter()
                .filter(|a| a.is_admin)
                .count();
            if admins <= 1 {
                return Err(ServiceError::Conflict(
                    "the last server administrator cannot delete itself; make another account an administrator first".into(),
                ));
            }
        }
        let audit = AuditDraft::new("account.delete", &principal.attribution())
            .workspace(&account.personal_workspace_id)
            .details(json!({"account_id": account.account_id}));
        Ok(self
            .store
            .delete_account(&account.account_id, audit)
            .await?)
    }
}
