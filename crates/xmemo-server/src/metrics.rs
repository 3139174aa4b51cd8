//! Process-local counters rendered in the Prometheus text format (`/metrics`).
//!
//! Plain atomics: no registry, no labels beyond the fixed ones below. Each server node counts
//! its own executions; a Prometheus server scraping several nodes sums them.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// The execution statuses of SPEC §5, in the order they are rendered.
pub const EXECUTION_STATUSES: [&str; 5] =
    ["success", "runtime_error", "timeout", "oom", "system_error"];

/// Why an execution was refused after its access checks passed (nothing ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No sandbox configured, or bubblewrap failed its probe and the fallback is off.
    SandboxUnavailable,
    /// Every sandbox uid slot was taken.
    Busy,
    /// The engine refused the request (limits, paths).
    InvalidRequest,
    /// Preparing the run failed on the host.
    HostError,
    /// The account already ran as many executions as it may at once (RATE_LIMITED).
    AccountLimit,
    /// The server already ran as many executions as it allows at once.
    ServerLimit,
}

impl Refusal {
    pub const ALL: [Refusal; 6] = [
        Refusal::SandboxUnavailable,
        Refusal::Busy,
        Refusal::InvalidRequest,
        Refusal::HostError,
        Refusal::AccountLimit,
        Refusal::ServerLimit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::SandboxUnavailable => "sandbox_unavailable",
            Refusal::Busy => "busy",
            Refusal::InvalidRequest => "invalid_request",
            Refusal::HostError => "host_error",
            Refusal::AccountLimit => "account_limit",
            Refusal::ServerLimit => "server_limit",
        }
    }
}

/// Counters held by the [`crate::Service`] (shared by its clones).
#[derive(Debug, Default)]
pub struct Metrics {
    executions_by_status: [AtomicU64; 5],
    executions_unsafe_local: AtomicU64,
    executions_unavailable: AtomicU64,
    refusals: [AtomicU64; Refusal::ALL.len()],
    execution_duration_ms_sum: AtomicU64,
    stdout_truncated: AtomicU64,
    stderr_truncated: AtomicU64,
    audit_failures: AtomicU64,
    /// MCP tool calls by the path that answered them: `[direct, rmcp]`.
    mcp_tool_calls: [AtomicU64; 2],
    /// HTTP responses by status class: `[1xx/other, 2xx, 3xx, 4xx, 5xx]`.
    http_responses: [AtomicU64; 5],
}

/// The status classes of `xmemo_http_responses_total`, by index.
const STATUS_CLASSES: [&str; 5] = ["other", "2xx", "3xx", "4xx", "5xx"];

/// Which path answered an MCP tool call (see `mcp::direct`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpPath {
    /// Answered by xmemo from the already parsed request, without rmcp.
    Direct,
    /// Dispatched by rmcp to the handler.
    Rmcp,
}

impl McpPath {
    fn index(self) -> usize {
        match self {
            McpPath::Direct => 0,
            McpPath::Rmcp => 1,
        }
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// One finished execution (`status` is one of [`EXECUTION_STATUSES`]).
    pub fn record_execution(
        &self,
        status: &str,
        unsafe_local: bool,
        duration_ms: u64,
        stdout_truncated: bool,
        stderr_truncated: bool,
    ) {
        if let Some(i) = EXECUTION_STATUSES.iter().position(|s| *s == status) {
            self.executions_by_status[i].fetch_add(1, Ordering::Relaxed);
        }
        if unsafe_local {
            self.executions_unsafe_local.fetch_add(1, Ordering::Relaxed);
        }
        self.execution_duration_ms_sum
            .fetch_add(duration_ms, Ordering::Relaxed);
        if stdout_truncated {
            self.stdout_truncated.fetch_add(1, Ordering::Relaxed);
        }
        if stderr_truncated {
            self.stderr_truncated.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An execution refused before anything ran.
    pub fn record_refusal(&self, refusal: Refusal) {
        if refusal == Refusal::SandboxUnavailable {
            self.executions_unavailable.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(i) = Refusal::ALL.iter().position(|r| *r == refusal) {
            self.refusals[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An audit entry could not be written (the execution's result was withheld).
    pub fn record_audit_failure(&self) {
        self.audit_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// One MCP tool call answered by `path`.
    pub fn record_mcp_tool_call(&self, path: McpPath) {
        self.mcp_tool_calls[path.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// One HTTP response with this status (every route but hyper's own answers to
    /// unparsable request heads).
    pub fn record_http_response(&self, status: u16) {
        let class = match status {
            200..=299 => 1,
            300..=399 => 2,
            400..=499 => 3,
            500..=599 => 4,
            _ => 0,
        };
        self.http_responses[class].fetch_add(1, Ordering::Relaxed);
    }

    /// MCP tool calls answered by `path`.
    pub fn mcp_tool_calls(&self, path: McpPath) -> u64 {
        self.mcp_tool_calls[path.index()].load(Ordering::Relaxed)
    }

    /// Finished executions with this status.
    pub fn executions(&self, status: &str) -> u64 {
        EXECUTION_STATUSES
            .iter()
            .position(|s| *s == status)
            .map_or(0, |i| self.executions_by_status[i].load(Ordering::Relaxed))
    }

    /// Executions refused because the sandbox is unavailable.
    pub fn executions_unavailable(&self) -> u64 {
        self.executions_unavailable.load(Ordering::Relaxed)
    }

    /// Executions that ran as plain local processes.
    pub fn executions_unsafe_local(&self) -> u64 {
        self.executions_unsafe_local.load(Ordering::Relaxed)
    }

    /// The counters in the Prometheus text exposition format (version 0.0.4).
    pub fn render_prometheus(&self) -> String {
        let mut out = String::new();
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        header(
            &mut out,
            "xmemo_http_responses_total",
            "counter",
            "HTTP responses, by status class.",
        );
        for (i, class) in STATUS_CLASSES.iter().enumerate() {
            let _ = writeln!(
                out,
                "xmemo_http_responses_total{{class=\"{class}\"}} {}",
                load(&self.http_responses[i])
            );
        }
        header(
            &mut out,
            "xmemo_executions_total",
            "counter",
            "Script executions that ran, by final status.",
        );
        for (i, status) in EXECUTION_STATUSES.iter().enumerate() {
            let _ = writeln!(
                out,
                "xmemo_executions_total{{status=\"{status}\"}} {}",
                load(&self.executions_by_status[i])
            );
        }
        single(
            &mut out,
            "xmemo_executions_unavailable_total",
            "counter",
            "Executions refused with SANDBOX_UNAVAILABLE (nothing ran).",
            load(&self.executions_unavailable),
        );
        header(
            &mut out,
            "xmemo_executions_refused_total",
            "counter",
            "Executions refused after their access checks, by reason (nothing ran).",
        );
        for (i, refusal) in Refusal::ALL.iter().enumerate() {
            let _ = writeln!(
                out,
                "xmemo_executions_refused_total{{reason=\"{}\"}} {}",
                refusal.as_str(),
                load(&self.refusals[i])
            );
        }
        single(
            &mut out,
            "xmemo_executions_unsafe_local_total",
            "counter",
            "Executions that ran as plain local processes (unsafe fallback).",
            load(&self.executions_unsafe_local),
        );
        single(
            &mut out,
            "xmemo_execution_duration_milliseconds_sum",
            "counter",
            "Total wall-clock time of finished executions, milliseconds.",
            load(&self.execution_duration_ms_sum),
        );
        header(
            &mut out,
            "xmemo_execution_output_truncated_total",
            "counter",
            "Executions whose output stream exceeded its cap.",
        );
        let _ = writeln!(
            out,
            "xmemo_execution_output_truncated_total{{stream=\"stdout\"}} {}",
            load(&self.stdout_truncated)
        );
        let _ = writeln!(
            out,
            "xmemo_execution_output_truncated_total{{stream=\"stderr\"}} {}",
            load(&self.stderr_truncated)
        );
        single(
            &mut out,
            "xmemo_execution_audit_failures_total",
            "counter",
            "Executions whose audit entry could not be written (result withheld).",
            load(&self.audit_failures),
        );
        header(
            &mut out,
            "xmemo_mcp_tool_calls_total",
            "counter",
            "MCP tool calls, by the path that answered them (direct: without rmcp).",
        );
        for (path, name) in [(McpPath::Direct, "direct"), (McpPath::Rmcp, "rmcp")] {
            let _ = writeln!(
                out,
                "xmemo_mcp_tool_calls_total{{path=\"{name}\"}} {}",
                self.mcp_tool_calls(path)
            );
        }
        out
    }
}

/// A gauge line block, for facts the metrics do not own (e.g. the sandbox state).
pub fn render_gauge(out: &mut String, name: &str, help: &str, value: u64) {
    single(out, name, "gauge", help, value);
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn single(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    header(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_renders() {
        let m = Metrics::new();
        m.record_execution("success", false, 12, false, false);
        m.record_execution("timeout", true, 1000, true, false);
        m.record_execution("bogus", false, 1, false, true);
        m.record_refusal(Refusal::SandboxUnavailable);
        m.record_refusal(Refusal::Busy);
        m.record_mcp_tool_call(McpPath::Direct);
        m.record_mcp_tool_call(McpPath::Direct);
        m.record_mcp_tool_call(McpPath::Rmcp);
        assert_eq!(m.executions("success"), 1);
        assert_eq!(m.executions("timeout"), 1);
        assert_eq!(m.executions_unavailable(), 1);
        assert_eq!(m.executions_unsafe_local(), 1);
        let text = m.render_prometheus();
        assert!(text.contains("xmemo_executions_total{status=\"success\"} 1\n"));
        assert!(text.contains("xmemo_executions_total{status=\"oom\"} 0\n"));
        assert!(text.contains("xmemo_executions_unavailable_total 1\n"));
        assert!(text.contains("xmemo_executions_refused_total{reason=\"busy\"} 1\n"));
        assert!(text.contains("xmemo_execution_duration_milliseconds_sum 1013\n"));
        assert!(text.contains("xmemo_execution_output_truncated_total{stream=\"stdout\"} 1\n"));
        assert!(text.contains("xmemo_execution_output_truncated_total{stream=\"stderr\"} 1\n"));
        assert!(text.contains("xmemo_mcp_tool_calls_total{path=\"direct\"} 2\n"));
        assert!(text.contains("xmemo_mcp_tool_calls_total{path=\"rmcp\"} 1\n"));
        // Every sample line belongs to a declared metric.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            assert!(text.contains(&format!("# TYPE {name} ")), "{line}");
        }
    }
}
