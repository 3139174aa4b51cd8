//! Execute (SPEC §5): run one declared `script` component of one pinned revision in the
//! sandbox, with `input_args` as JSON on stdin.
//!
//! Rules, in order: `memory:write` scope; `revision_id` required (`REVISION_PIN_REQUIRED`);
//! arguments valid; the skill resolves for the caller (archived skills included: pinned runs
//! keep working); the revision belongs to it; `draft`/`proposed` revisions run only for roles
//! that may write in the workspace, `published`/`deprecated` ones for every member;
//! `script_path` is declared (else `NOT_FOUND`) and of type `script` (else
//! `VALIDATION_ERROR`). The engine gets every component of the revision, read-only.
//!
//! Audit: every execution that ran appends exactly one `skill.execute` entry (also for
//! `runtime_error`, `timeout`, `oom`, `system_error`). A run refused by the engine after the
//! access checks passed (sandbox unavailable, busy, ...) ran nothing; it appends one
//! `skill.execute_refused` entry instead, so refusals are visible without ever looking like
//! an execution. The same holds for runs refused because the account or the server already
//! runs as many executions as allowed (`exec_slots.rs`). If the `skill.execute` entry cannot be written the result is withheld
//! (`SERVICE_UNAVAILABLE`): no output leaves the server unaudited.

use super::Service;
use super::exec_slots::SlotRefusal;
use super::types::*;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use crate::metrics::{Metrics, Refusal};
use crate::throttle::retry_after_secs;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use xmemo_core::limits::{
    EXECUTE_INPUT_ARGS_MAX_BYTES as INPUT_ARGS_MAX_BYTES, EXECUTE_TIMEOUT_DEFAULT_SECONDS,
    EXECUTE_TIMEOUT_MAX_SECONDS, EXECUTE_TIMEOUT_MIN_SECONDS,
};
use xmemo_core::{ComponentType, RevisionStatus, Role, Scope};
use xmemo_sandbox::{
    ExecutionLimits, Isolation, RunOutcome, RunRequest, RunStatus, SandboxEngine, SandboxError,
    SandboxFile, SandboxState,
};
use xmemo_store::{AuditDraft, Revision, Skill, Workspace};

/// Audit action of an execution that ran.
pub const AUDIT_EXECUTE: &str = "skill.execute";
/// Audit action of an execution refused after its access checks (nothing ran).
pub const AUDIT_EXECUTE_REFUSED: &str = "skill.execute_refused";
/// Longest probe reason quoted to clients.
const PUBLIC_REASON_MAX_CHARS: usize = 300;

/// What an execution is about, for results, audit and logs.
struct Target<'a> {
    principal: &'a Principal,
    skill: &'a Skill,
    workspace: &'a Workspace,
    revision: &'a Revision,
    script_path: &'a str,
    script_hash: &'a str,
    input_bytes: usize,
    timeout_seconds: i64,
}

impl Service {
    /// This service with a sandbox engine; without one every execution is refused with
    /// `SANDBOX_UNAVAILABLE` ("no sandbox configured").
    pub fn with_sandbox(mut self, engine: SandboxEngine) -> Self {
        self.sandbox = Some(engine);
        self
    }

    /// The engine's cached probe result, or `None` when no sandbox is configured.
    pub fn sandbox_state(&self) -> Option<SandboxState> {
        self.sandbox.as_ref().map(SandboxEngine::state)
    }

    /// Probes bubblewrap again and caches the answer (`None`: no sandbox configured).
    pub async fn reprobe_sandbox(&self) -> Option<SandboxState> {
        match &self.sandbox {
            Some(engine) => Some(engine.reprobe().await),
            None => None,
        }
    }

    /// Executions holding a slot now (being prepared or running).
    pub fn running_executions(&self) -> usize {
        self.executions.running()
    }

    /// The process-local counters.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Prometheus text for `/metrics`: the counters plus the sandbox state as gauges.
    pub fn render_metrics(&self) -> String {
        let mut out = self.metrics.render_prometheus();
        let state = self.sandbox_state();
        crate::metrics::render_gauge(
            &mut out,
            "xmemo_sandbox_available",
            "1 when bubblewrap passed its namespace probe.",
            u64::from(state.as_ref().is_some_and(|s| s.available)),
        );
        crate::metrics::render_gauge(
            &mut out,
            "xmemo_sandbox_runnable",
            "1 when executions are accepted (isolated, or the unsafe fallback is enabled).",
            u64::from(state.as_ref().is_some_and(|s| s.runnable)),
        );
        crate::metrics::render_gauge(
            &mut out,
            "xmemo_sandbox_unsafe_local",
            "1 when executions run as plain local processes (unsafe fallback in use).",
            u64::from(state.as_ref().is_some_and(|s| !s.available && s.runnable)),
        );
        crate::metrics::render_gauge(
            &mut out,
            "xmemo_executions_running",
            "Script executions holding a slot now (preparing or running).",
            self.running_executions() as u64,
        );
        if let Some(lane) = &self.semantic {
            lane.render_metrics(&mut out);
        }
        self.render_search_metrics(&mut out);
        out
    }

    /// `execute_cloud_skill`.
    pub async fn execute(
        &self,
        principal: &Principal,
        req: ExecuteRequest,
    ) -> ServiceResult<ExecutionResult> {
        principal.require(Scope::Write)?;
        let Some(revision_id) = req
            .revision_id
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
        else {
            return Err(ServiceError::RevisionPinRequired(
                "executions need the revision_id returned by a Level 1 recall, so the script cannot change under a running workflow".into(),
            ));
        };
        let timeout_seconds = req
            .timeout_seconds
            .unwrap_or(EXECUTE_TIMEOUT_DEFAULT_SECONDS);
        let (min, max) = (EXECUTE_TIMEOUT_MIN_SECONDS, EXECUTE_TIMEOUT_MAX_SECONDS);
        if !(min..=max).contains(&timeout_seconds) {
            return Err(ServiceError::Validation(
                format!("timeout_seconds must be between {min} and {max}"),
                Some(json!({"field": "timeout_seconds", "min": min, "max": max})),
            ));
        }
        // In range: checked above.
        let timeout = Duration::from_secs(timeout_seconds.unsigned_abs());
        let stdin = input_bytes(req.input_args)?;
        if req.script_path.is_empty() {
            return Err(ServiceError::validation(
                "script_path must name a script component of the revision",
                "script_path",
            ));
        }

        let access = self.access(principal).await?;
        let (skill, workspace, role) = self
            .resolve_skill(&access, &req.slug, req.workspace.as_deref())
            .await?;
        let revision = self.revision_of(&skill, revision_id).await?;
        may_run(&revision, role)?;
        let manifest = revision
            .components
            .iter()
            .find(|c| c.logical_path == req.script_path)
            .ok_or_else(|| {
                ServiceError::NotFound(format!(
                    "script `{}` is not declared in revision `{}`",
                    req.script_path, revision.revision_id
                ))
            })?;
        if manifest.component_type != ComponentType::Script {
            return Err(ServiceError::Validation(
                format!(
                    "script_path `{}` is a `{}` component; only components of type `script` run",
                    req.script_path, manifest.component_type
                ),
                Some(json!({"field": "script_path", "type": manifest.component_type})),
            ));
        }
        if !self.allow_malicious_scripts {
            let report = self.revision_safety(&revision).await?;
            if report.verdict == xmemo_safety::Verdict::Malicious {
                return Err(super::safety::blocked(
                    "Running a script of",
                    &revision.revision_id,
                    &report,
                    "An operator can allow it with `allow_malicious_scripts` (docs/safety.md).",
                ));
            }
        }
        let target = Target {
            principal,
            skill: &skill,
            workspace: &workspace,
            revision: &revision,
            script_path: &manifest.logical_path,
            script_hash: &manifest.content_hash,
            input_bytes: stdin.len(),
            timeout_seconds,
        };

        let Some(engine) = &self.sandbox else {
            let error = SandboxError::Unavailable {
                reason: "no sandbox configured".into(),
            };
            return Err(self.refuse(&target, error).await);
        };
        // Held until this future ends, whichever way: the run and its preparation count.
        let _slot = match self
            .executions
            .acquire(&principal.account.account_id, timeout)
        {
            Ok(slot) => slot,
            Err(refusal) => return Err(self.refuse_at_capacity(&target, refusal).await),
        };
        let mut files = Vec::with_capacity(revision.components.len());
        for component in &revision.components {
            let (_, bytes) = self
                .store
                .component_bytes(&revision.revision_id, &component.logical_path)
                .await?
                .ok_or_else(|| {
                    ServiceError::Internal(format!(
                        "component `{}` of revision `{}` has no stored bytes",
                        component.logical_path, revision.revision_id
                    ))
                })?;
            files.push(SandboxFile {
                path: component.logical_path.clone(),
                bytes,
            });
        }
        let request = RunRequest {
            files,
            entry: manifest.logical_path.clone(),
            stdin,
            limits: ExecutionLimits {
                timeout,
                ..ExecutionLimits::default()
            },
        };
        let started_at = xmemo_store::now();
        match engine.run(request).await {
            Ok(outcome) => self.finish(&target, outcome, started_at).await,
            Err(error) => Err(self.refuse(&target, error).await),
        }
    }

    /// Audits, logs and counts one execution that ran; returns its result.
    async fn finish(
        &self,
        t: &Target<'_>,
        outcome: RunOutcome,
        started_at: String,
    ) -> ServiceResult<ExecutionResult> {
        let status = status_of(outcome.status);
        let isolation = isolation_of(outcome.isolation);
        let limits = serde_json::to_value(&outcome.limits).unwrap_or(Value::Null);
        let resources = serde_json::to_value(&outcome.resources).unwrap_or(Value::Null);
        let attribution = t.principal.attribution();

        self.metrics.record_execution(
            status.as_str(),
            isolation == ExecutionIsolation::UnsafeLocal,
            outcome.duration_ms,
            outcome.stdout_truncated,
            outcome.stderr_truncated,
        );
        tracing::info!(
            target: "xmemo::execute",
            execution_id = %outcome.execution_id,
            account_id = %attribution.account_id,
            credential_id = attribution.credential_id.as_deref().unwrap_or(""),
            client_profile = attribution.client_profile.as_deref().unwrap_or(""),
            agent_instance_id = attribution.agent_instance_id.as_deref().unwrap_or(""),
            workspace_id = %t.workspace.workspace_id,
            skill_id = %t.skill.skill_id,
            slug = %t.skill.slug,
            revision_id = %t.revision.revision_id,
            revision_status = %t.revision.status,
            script_path = %t.script_path,
            runtime = %outcome.runtime,
            status = status.as_str(),
            exit_code = outcome.exit_code,
            signal = outcome.signal,
            duration_ms = outcome.duration_ms,
            timeout_seconds = t.timeout_seconds,
            isolation = isolation.as_str(),
            memory_enforced_by = ?outcome.limits.memory_bytes.enforced_by,
            cpu_enforced_by = ?outcome.limits.cpu_millicores.enforced_by,
            processes_enforced_by = ?outcome.limits.max_processes.enforced_by,
            cpu_user_ms = outcome.resources.cpu_user_ms,
            cpu_system_ms = outcome.resources.cpu_system_ms,
            memory_peak_bytes = outcome.resources.memory_peak_bytes,
            max_rss_bytes = outcome.resources.max_rss_bytes,
            oom_kills = outcome.resources.oom_kills,
            pids_peak = outcome.resources.pids_peak,
            input_bytes = t.input_bytes,
            stdout_bytes = outcome.stdout_total_bytes,
            stderr_bytes = outcome.stderr_total_bytes,
            stdout_truncated = outcome.stdout_truncated,
            stderr_truncated = outcome.stderr_truncated,
            "skill script executed"
        );
        if isolation == ExecutionIsolation::UnsafeLocal {
            tracing::warn!(
                target: "xmemo::execute",
                execution_id = %outcome.execution_id,
                skill_id = %t.skill.skill_id,
                "skill script ran WITHOUT sandbox isolation (XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1); this must not serve multi-tenant production"
            );
        }

        let audit = AuditDraft::new(AUDIT_EXECUTE, &attribution)
            .workspace(&t.workspace.workspace_id)
            .skill(&t.skill.skill_id)
            .revision(&t.revision.revision_id)
            .details(json!({
                "execution_id": outcome.execution_id,
                "slug": t.skill.slug,
                "revision_id": t.revision.revision_id,
                "revision_number": t.revision.revision_number,
                "revision_status": t.revision.status,
                "script_path": t.script_path,
                "script_hash": t.script_hash,
                "runtime": outcome.runtime,
                "status": status,
                "exit_code": outcome.exit_code,
                "signal": outcome.signal,
                "started_at": started_at,
                "duration_ms": outcome.duration_ms,
                "timeout_seconds": t.timeout_seconds,
                "isolation": isolation,
                "limits": limits,
                "resources": resources,
                "input_bytes": t.input_bytes,
                "stdout_bytes": outcome.stdout_total_bytes,
                "stderr_bytes": outcome.stderr_total_bytes,
                "stdout_truncated": outcome.stdout_truncated,
                "stderr_truncated": outcome.stderr_truncated,
            }));
        if let Err(e) = self.store.append_audit(audit).await {
            self.metrics.record_audit_failure();
            tracing::error!(
                target: "xmemo::execute",
                execution_id = %outcome.execution_id,
                error = %e,
                "the execution's audit entry could not be written; its result is withheld"
            );
            return Err(ServiceError::Internal(format!(
                "audit append failed for {}: {e}",
                outcome.execution_id
            )));
        }

        Ok(ExecutionResult {
            execution_id: outcome.execution_id,
            status,
            exit_code: outcome.exit_code,
            output_data: outcome.output_data,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            stdout_truncated: outcome.stdout_truncated,
            stderr_truncated: outcome.stderr_truncated,
            duration_ms: outcome.duration_ms,
            limits,
            isolation,
            signal: outcome.signal,
            runtime: outcome.runtime,
            resources,
            stdout_total_bytes: outcome.stdout_total_bytes,
            stderr_total_bytes: outcome.stderr_total_bytes,
            skill_id: t.skill.skill_id.clone(),
            slug: t.skill.slug.clone(),
            workspace: t.workspace.handle.clone(),
            revision_id: t.revision.revision_id.clone(),
            revision_number: t.revision.revision_number,
            revision_status: t.revision.status,
            script_path: t.script_path.to_string(),
        })
    }

    /// Maps an engine refusal (nothing ran) to the client error; audits, logs and counts it.
    async fn refuse(&self, t: &Target<'_>, error: SandboxError) -> ServiceError {
        let (refusal, service_error) = match &error {
            SandboxError::Unavailable { reason } => (
                Refusal::SandboxUnavailable,
                ServiceError::SandboxUnavailable(format!(
                    "script execution is unavailable on this server: {}; nothing ran (an operator can check with `xmemo admin doctor`)",
                    public_reason(reason)
                )),
            ),
            SandboxError::Busy(_) => (
                Refusal::Busy,
                ServiceError::Unavailable(
                    "every sandbox slot is busy; nothing ran, try again".into(),
                ),
            ),
            SandboxError::InvalidRequest(message) => (
                Refusal::InvalidRequest,
                ServiceError::Validation(
                    format!("the sandbox refused the request: {message}"),
                    None,
                ),
            ),
            SandboxError::Io(e) => (
                Refusal::HostError,
                ServiceError::Internal(format!("sandbox i/o error: {e}")),
            ),
        };
        self.refused(t, refusal, service_error, &error).await
    }

    /// Maps a full execution cap (nothing ran) to the client error; audits, logs and counts it.
    async fn refuse_at_capacity(&self, t: &Target<'_>, refusal: SlotRefusal) -> ServiceError {
        let (kind, service_error) = match refusal {
            SlotRefusal::Account { cap, retry_after } => {
                let secs = retry_after_secs(retry_after);
                (
                    Refusal::AccountLimit,
                    ServiceError::RateLimited {
                        message: format!(
                            "this account already runs {cap} executions, the most it may run at once; nothing ran, retry in {secs} s"
                        ),
                        retry_after_secs: secs,
                    },
                )
            }
            SlotRefusal::Server { cap, retry_after } => {
                let secs = retry_after_secs(retry_after);
                (
                    Refusal::ServerLimit,
                    ServiceError::AtCapacity {
                        message: format!(
                            "this server already runs {cap} executions, the most it runs at once; nothing ran, retry in {secs} s"
                        ),
                        retry_after_secs: secs,
                    },
                )
            }
        };
        let detail = service_error.to_string();
        self.refused(t, kind, service_error, &detail).await
    }

    /// Counts, logs and audits a refusal (nothing ran); returns the client error.
    async fn refused(
        &self,
        t: &Target<'_>,
        refusal: Refusal,
        service_error: ServiceError,
        error: &(dyn std::fmt::Display + Sync),
    ) -> ServiceError {
        self.metrics.record_refusal(refusal);
        tracing::warn!(
            target: "xmemo::execute",
            account_id = %t.principal.account.account_id,
            skill_id = %t.skill.skill_id,
            revision_id = %t.revision.revision_id,
            script_path = %t.script_path,
            refusal = refusal.as_str(),
            error = %error,
            "skill execution refused; nothing ran"
        );
        let audit = AuditDraft::new(AUDIT_EXECUTE_REFUSED, &t.principal.attribution())
            .workspace(&t.workspace.workspace_id)
            .skill(&t.skill.skill_id)
            .revision(&t.revision.revision_id)
            .details(json!({
                "slug": t.skill.slug,
                "revision_id": t.revision.revision_id,
                "script_path": t.script_path,
                "refusal": refusal.as_str(),
                "error_code": service_error.code().as_str(),
                "timeout_seconds": t.timeout_seconds,
                "input_bytes": t.input_bytes,
            }));
        if let Err(e) = self.store.append_audit(audit).await {
            self.metrics.record_audit_failure();
            tracing::error!(target: "xmemo::execute", error = %e, "could not audit a refused execution");
        }
        service_error
    }
}

/// `input_args` as the JSON bytes given on stdin: absent or `null` → `{}`; other non-objects
/// are refused.
fn input_bytes(input_args: Option<Value>) -> ServiceResult<Vec<u8>> {
    let args = match input_args {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Err(ServiceError::validation(
                "input_args must be a JSON object",
                "input_args",
            ));
        }
    };
    let bytes = serde_json::to_vec(&args).map_err(|e| {
        ServiceError::validation(
            format!("input_args cannot be serialized: {e}"),
            "input_args",
        )
    })?;
    if bytes.len() > INPUT_ARGS_MAX_BYTES {
        return Err(ServiceError::TooLarge(
            format!("input_args is larger than {INPUT_ARGS_MAX_BYTES} bytes"),
            Some(json!({
                "field": "input_args",
                "limit": INPUT_ARGS_MAX_BYTES,
                "actual": bytes.len(),
            })),
        ));
    }
    Ok(bytes)
}

/// Published and deprecated revisions run for every member; draft and proposed ones only for
/// roles that may write in the workspace.
fn may_run(revision: &Revision, role: Role) -> ServiceResult<()> {
    match revision.status {
        RevisionStatus::Published | RevisionStatus::Deprecated => Ok(()),
        RevisionStatus::Draft | RevisionStatus::Proposed if role.can_write() => Ok(()),
        RevisionStatus::Draft | RevisionStatus::Proposed => {
            Err(ServiceError::PermissionDenied(format!(
                "revision `{}` is {}; only workspace writers may run unpublished revisions (your role is `{role}`)",
                revision.revision_id, revision.status
            )))
        }
    }
}

fn status_of(status: RunStatus) -> ExecutionStatus {
    match status {
        RunStatus::Success => ExecutionStatus::Success,
        RunStatus::RuntimeError => ExecutionStatus::RuntimeError,
        RunStatus::Timeout => ExecutionStatus::Timeout,
        RunStatus::Oom => ExecutionStatus::Oom,
        RunStatus::SystemError => ExecutionStatus::SystemError,
    }
}

fn isolation_of(isolation: Isolation) -> ExecutionIsolation {
    match isolation {
        Isolation::Bubblewrap => ExecutionIsolation::Bubblewrap,
        Isolation::UnsafeLocal => ExecutionIsolation::UnsafeLocal,
    }
}

/// The probe's reason as clients may see it: absolute paths become `<path>` (the full reason
/// is in the server log), control characters are dropped, the length is bounded.
pub(crate) fn public_reason(reason: &str) -> String {
    const DELIMITERS: &[char] = &['`', '\'', '"', '(', ')', '[', ']', ',', ';', '='];
    let mut out = String::with_capacity(reason.len());
    let mut chars = reason.chars().peekable();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        let starts_token = previous.is_none_or(|p| p.is_whitespace() || DELIMITERS.contains(&p));
        if c == '/' && starts_token {
            while chars
                .peek()
                .is_some_and(|n| !n.is_whitespace() && !DELIMITERS.contains(n))
            {
                chars.next();
            }
            out.push_str("<path>");
            previous = Some('>');
            continue;
        }
        if !c.is_control() {
            out.push(c);
        } else if c == '\n' {
            out.push(' ');
        }
        previous = Some(c);
    }
    let trimmed = out.trim();
    if trimmed.chars().count() > PUBLIC_REASON_MAX_CHARS {
        let mut short: String = trimmed.chars().take(PUBLIC_REASON_MAX_CHARS).collect();
        short.push('…');
        short
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_lose_host_paths() {
        assert_eq!(
            public_reason("bwrap not found at /nonexistent/bwrap (install bubblewrap)"),
            "bwrap not found at <path> (install bubblewrap)"
        );
        assert_eq!(
            public_reason("`/usr/bin/bwrap --version` failed to run: denied"),
            "`<path> --version` failed to run: denied"
        );
        assert_eq!(
            public_reason("bwrap not found on PATH (install bubblewrap)"),
            "bwrap not found on PATH (install bubblewrap)"
        );
        assert_eq!(
            public_reason("no sandbox configured"),
            "no sandbox configured"
        );
        assert_eq!(public_reason("a\nb\u{7}c"), "a bc");
        assert!(public_reason(&"x".repeat(1000)).chars().count() <= PUBLIC_REASON_MAX_CHARS + 1);
        assert_eq!(public_reason("cpu 1/2 used"), "cpu 1/2 used");
    }

    #[test]
    fn input_args_shapes() {
        assert_eq!(input_bytes(None).ok(), Some(b"{}".to_vec()));
        assert_eq!(input_bytes(Some(Value::Null)).ok(), Some(b"{}".to_vec()));
        assert_eq!(
            input_bytes(Some(json!({"a": 1}))).ok(),
            Some(br#"{"a":1}"#.to_vec())
        );
        for bad in [json!([1]), json!("x"), json!(3), json!(true)] {
            assert!(matches!(
                input_bytes(Some(bad)),
                Err(ServiceError::Validation(..))
            ));
        }
        let big = json!({"k": "x".repeat(INPUT_ARGS_MAX_BYTES)});
        assert!(matches!(
            input_bytes(Some(big)),
            Err(ServiceError::TooLarge(..))
        ));
    }
}
