//! What every write-path phase (`saves`, `sandbox`, `startup`, `skills_list`) is given — its
//! arguments and the main ones, with the server it starts — and how it states a figure against
//! its target. `writes` dispatches to the phases; both import this module.

use crate::server::{Server, StartOptions};
use anyhow::Result;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug, Clone)]
pub struct WriteArgs {
    /// Run these write-path phases instead of the read benchmark: saves, sandbox, startup,
    /// skills-list, signin, neighbours (comma-separated)
    #[arg(long = "write-phases", value_delimiter = ',')]
    pub phases: Vec<String>,
    /// saves: how many new skills to save (with --seed-concurrency clients)
    #[arg(long, default_value_t = 5000)]
    pub saves_count: usize,
    /// sandbox / startup: timed runs
    #[arg(long, default_value_t = 30)]
    pub runs: usize,
    /// startup: an existing SQLite data dir to cold-start on (e.g. one kept with --keep-data);
    /// without it one is seeded with --startup-skills skills and kept
    #[arg(long)]
    pub startup_data_dir: Option<PathBuf>,
    /// startup: skills to seed when no --startup-data-dir is given
    #[arg(long, default_value_t = 10000)]
    pub startup_skills: usize,
    /// skills-list: skills in the catalog
    #[arg(long, default_value_t = 10000)]
    pub list_skills: usize,
    /// skills-list: also run the MCP Inspector CLI, given as the command that starts it
    /// (e.g. `node ~/.cache/inspector/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js`)
    #[arg(long)]
    pub inspector: Option<String>,
    /// signin: bursts of concurrent failed sign-ins
    #[arg(long, default_value_t = 10)]
    pub signin_bursts: usize,
    /// signin: failed sign-ins per burst, all at once from one address
    #[arg(long, default_value_t = 16)]
    pub signin_burst_size: usize,
    /// signin: seconds between the starts of two bursts
    #[arg(long, default_value_t = 3.5)]
    pub signin_burst_gap_secs: f64,
    /// neighbours: memories of the reader account
    #[arg(long, default_value_t = 10000)]
    pub neighbours_memories: usize,
    /// neighbours: concurrent clients of the reader
    #[arg(long, default_value_t = 4)]
    pub neighbours_clients: usize,
    /// neighbours: measured seconds of each phase (idle and the full rate alternate in 5 s windows)
    #[arg(long, default_value_t = 30)]
    pub neighbours_secs: u64,
    /// neighbours: 16 KiB memories the writer's account holds before the restart (0: no restart)
    #[arg(long, default_value_t = 11000)]
    pub neighbours_restart_memories: usize,
}

/// What every phase needs from the main arguments.
pub struct Common<'a> {
    pub bin: &'a Path,
    pub database_url: Option<&'a str>,
    pub admin_key_file: Option<&'a Path>,
    pub data_parent: Option<&'a Path>,
    pub keep_data: bool,
    pub seed_concurrency: usize,
    pub corpus_seed: u64,
    pub vocabulary: usize,
}

impl Common<'_> {
    pub fn start(&self, keep: bool) -> Result<Server> {
        Server::start(&StartOptions {
            bin: self.bin,
            database_url: self.database_url,
            admin_key_file: self.admin_key_file,
            keep_data: self.keep_data || keep,
            data_parent: self.data_parent,
            budgets: crate::server::Budgets::WritesUnbounded,
        })
    }
}

/// Median and 90th percentile (nearest rank) of durations in ms.
pub fn median_p90(mut v: Vec<f64>) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    };
    (pct(0.5), pct(0.9))
}

pub fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}
