//! The `xmemo` binary: `serve`, `admin …` (local operator commands on the database) and client
//! commands that drive a running server over its REST API.

mod admin;
mod admin_backup;
mod admin_db;
mod agent_instance;
mod client;
mod connect;
mod doctor;
mod mcp_bridge;
mod output;
mod packages;
mod password_input;
mod scan;
mod serve;
mod settings;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "xmemo",
    version,
    about = "Self-hostable memory server for AI agents (Cloud Skills)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (embedded SQLite in the data directory unless a database URL is given).
    // Boxed: its many settings make it several times larger than every other command.
    Serve(Box<settings::ServeArgs>),
    /// Operator commands that act directly on the server's database.
    Admin(admin::AdminArgs),
    /// MCP server on stdio that forwards to a remote xmemo over HTTP(S) (XMEMO_URL, XMEMO_KEY)
    Mcp(mcp_bridge::McpArgs),
    /// Print, or merge into a client's own configuration file (--write), the MCP entry that
    /// connects Claude Code, Cursor, Codex, VS Code, Gemini CLI, Copilot CLI or a headless runner
    Connect(connect::ConnectArgs),
    /// Check this machine's connection to a server: URL, XMEMO_KEY and its scopes, the MCP
    /// endpoint's tools, OAuth metadata, the agent instance id (each failure with its fix)
    Doctor(doctor::DoctorArgs),
    /// Scan skills offline for unsafe content (folders, SKILL.md files, ZIPs): text, JSON or
    /// SARIF; exit status by the worst verdict
    Scan(scan::ScanArgs),
    #[command(flatten)]
    Client(client::ClientCommand),
    #[command(flatten)]
    Packages(packages::PackageCommand),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return scan::parse_failure(&e),
    };
    let command = match cli.command {
        // Offline and synchronous: no runtime, and its own exit statuses.
        Command::Scan(args) => return scan::run(args),
        command => command,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match command {
            Command::Serve(args) => serve::run(*args).await,
            Command::Admin(args) => admin::run(args).await,
            Command::Mcp(args) => mcp_bridge::run(args).await,
            Command::Connect(args) => connect::run(args).await,
            Command::Doctor(args) => doctor::run(args).await,
            Command::Client(cmd) => client::run(cmd).await,
            Command::Packages(cmd) => packages::run(cmd).await,
            // Ran above, without the runtime.
            Command::Scan(_) => Ok(()),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<packages::SomeRefused>() => {
            eprintln!("{e}");
            ExitCode::from(packages::SomeRefused::EXIT_STATUS)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
