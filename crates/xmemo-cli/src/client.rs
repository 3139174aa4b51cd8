//! Client commands against a running server (XMEMO_URL, XMEMO_KEY).

use clap::Subcommand;

#[derive(Subcommand)]
pub enum ClientCommand {
    /// Level 0: find published skills
    Search {
        query: String,
    },
}

pub async fn run(cmd: ClientCommand) -> anyhow::Result<()> {
    match cmd {
        ClientCommand::Search { query } => anyhow::bail!("not implemented: search {query}"),
    }
}
