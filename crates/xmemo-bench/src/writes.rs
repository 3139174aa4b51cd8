//! Write-path phases (issue #14 targets 4, 6, 7, 8; figures in docs/bench-writes.md): durable
//! saves at N clients, sandbox overhead over bare `python3`, cold start and idle memory, and
//! `skills/list` over a large catalog; and (issue #23) failed sign-ins under bursts: the
//! server's memory and the password checks admitted. `--write-phases saves,sandbox,startup,skills-list` runs
//! them instead of the read benchmark; each starts its own server(s).
//!
//! This module only dispatches: the phases import what they share from `crate::write_phase`,
//! never from here.

use crate::write_phase::{Common, WriteArgs};
use anyhow::{Result, bail};

pub async fn run(args: &WriteArgs, common: &Common<'_>) -> Result<()> {
    let mut lines = Vec::new();
    for phase in &args.phases {
        let out = match phase.as_str() {
            "saves" => crate::saves::run(args, common).await?,
            "sandbox" => crate::sandbox::run(args, common).await?,
            "startup" => crate::startup::run(args, common).await?,
            "skills-list" => crate::skills_list::run(args, common).await?,
            "signin" => crate::signin::run(args, common).await?,
            "neighbours" => crate::neighbours::run(args, common).await?,
            other => bail!(
                "unknown write phase `{other}` (saves, sandbox, startup, skills-list, signin, neighbours)"
            ),
        };
        eprintln!("{out}");
        lines.push(out);
    }
    println!("\nxmemo-bench --write-phases {}", args.phases.join(","));
    for l in lines {
        println!("{l}");
    }
    Ok(())
}
