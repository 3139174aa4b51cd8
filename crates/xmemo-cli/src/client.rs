//! Client commands that drive a running server over its REST API (`XMEMO_URL`, `XMEMO_KEY`).
//!
//! Submodules, one job each: [`http`] talks to the server and turns failures into one error
//! type, [`text`] formats text for people, [`skills`] / [`save`] / [`accounts`] are the
//! commands, and [`skilldir`] turns a skill directory into a package (for `save --dir` and
//! `import`). Whether a command answers in JSON or text is decided in [`crate::output`].

mod account;
mod accounts;
mod execute;
pub(crate) mod http;
mod memories;
mod oauth;
mod save;
pub(crate) mod skilldir;
mod skills;
pub(crate) mod text;

use clap::{Args, Subcommand};

pub use http::Failure;

/// Where the server is when neither `--url` nor `XMEMO_URL` says.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8420";

/// Connection and output options every client command takes.
#[derive(Args, Debug, Clone)]
pub struct Conn {
    /// Server base URL
    #[arg(long, env = "XMEMO_URL", default_value = DEFAULT_URL, global = true)]
    pub url: String,
    /// API key (prefer the XMEMO_KEY environment variable: flags show up in process lists)
    #[arg(long, env = "XMEMO_KEY", hide_env_values = true, global = true)]
    pub key: Option<String>,
    /// Print the server's JSON instead of text (errors too, as {"error": …})
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Level 0: find published skills by text
    Search(skills::SearchArgs),
    /// Run a declared script of a pinned revision in the server's sandbox
    Execute(execute::ExecuteArgs),
    /// Level 1: a skill's instructions and resource list; with --revision and --resource,
    /// Level 2: one resource of that pinned revision
    Recall(skills::RecallArgs),
    /// Save a new revision of a skill from flags or from a skill directory (--dir)
    Save(save::SaveArgs),
    /// List the revisions of a skill
    Revisions(skills::SlugArgs),
    /// Publish a revision (in a team workspace: propose it for approval)
    Publish(skills::LifecycleArgs),
    /// Approve a proposed revision (team owners and admins)
    Approve(skills::LifecycleArgs),
    /// Deprecate a revision (it stays recallable when pinned)
    Deprecate(skills::LifecycleArgs),
    /// Send a proposed revision back to draft with a review note
    Reject(skills::RejectArgs),
    /// Archive a skill: it leaves search and recall; pinned reads keep working
    Archive(skills::ArchiveArgs),
    /// Make an archived skill active again
    Restore(skills::ArchiveArgs),
    /// Your workspaces, team members and the invitations you send
    Workspaces(accounts::WorkspacesArgs),
    /// Invitations to teams, waiting for your answer: list, accept, decline
    Invitations(accounts::InvitationsArgs),
    /// Your API keys
    Keys(accounts::KeysArgs),
    /// Who the current key belongs to, its scopes and workspaces
    Whoami(accounts::WhoamiArgs),
    /// Remember a preference, fact, decision, TODO, progress note or note
    Remember(memories::RememberArgs),
    /// Recall memories by text and filters (the most recent without a query)
    Memories(memories::MemoriesArgs),
    /// One memory: show, history, update, forget, restore
    Memory(memories::MemoryArgs),
    /// Your account: export everything, or delete it
    Account(account::AccountArgs),
    /// OAuth clients you let in: `xmemo oauth grants [list|revoke ID]`
    Oauth(oauth::OauthArgs),
}

impl ClientCommand {
    fn conn(&self) -> &Conn {
        match self {
            Self::Search(a) => &a.conn,
            Self::Recall(a) => &a.conn,
            Self::Save(a) => &a.conn,
            Self::Revisions(a) => &a.conn,
            Self::Publish(a) | Self::Approve(a) | Self::Deprecate(a) => &a.conn,
            Self::Reject(a) => &a.conn,
            Self::Archive(a) | Self::Restore(a) => &a.conn,
            Self::Workspaces(a) => &a.conn,
            Self::Invitations(a) => &a.conn,
            Self::Keys(a) => &a.conn,
            Self::Whoami(a) => &a.conn,
            Self::Execute(a) => &a.conn,
            Self::Remember(a) => &a.conn,
            Self::Memories(a) => &a.conn,
            Self::Memory(a) => &a.conn,
            Self::Account(a) => &a.conn,
            Self::Oauth(a) => &a.conn,
        }
    }
}

pub async fn run(cmd: ClientCommand) -> anyhow::Result<()> {
    let json = cmd.conn().json;
    print_failure_as_json(json, dispatch(cmd).await)
}

/// Under `json`, a failed command's error object is also printed on stdout, where scripts
/// read it; the caller still prints one line on stderr and exits 1.
pub(crate) fn print_failure_as_json(json: bool, result: anyhow::Result<()>) -> anyhow::Result<()> {
    if let Err(e) = &result
        && json
    {
        crate::output::print_json(&Failure::json_of(e));
    }
    result
}

async fn dispatch(cmd: ClientCommand) -> anyhow::Result<()> {
    use xmemo_core::LifecycleAction as A;
    match cmd {
        ClientCommand::Search(a) => skills::search(a).await,
        ClientCommand::Recall(a) => skills::recall(a).await,
        ClientCommand::Save(a) => save::run(a).await,
        ClientCommand::Revisions(a) => skills::revisions(a).await,
        ClientCommand::Publish(a) => skills::lifecycle(a, A::Publish).await,
        ClientCommand::Approve(a) => skills::lifecycle(a, A::Approve).await,
        ClientCommand::Deprecate(a) => skills::lifecycle(a, A::Deprecate).await,
        ClientCommand::Reject(a) => skills::reject(a).await,
        ClientCommand::Archive(a) => skills::archive(a).await,
        ClientCommand::Restore(a) => skills::restore(a).await,
        ClientCommand::Workspaces(a) => accounts::workspaces(a).await,
        ClientCommand::Invitations(a) => accounts::invitations(a).await,
        ClientCommand::Keys(a) => accounts::keys(a).await,
        ClientCommand::Whoami(a) => accounts::whoami(a).await,
        ClientCommand::Execute(a) => execute::execute(a).await,
        ClientCommand::Remember(a) => memories::remember(a).await,
        ClientCommand::Memories(a) => memories::memories(a).await,
        ClientCommand::Memory(a) => memories::memory(a).await,
        ClientCommand::Account(a) => account::account(a).await,
        ClientCommand::Oauth(a) => oauth::oauth(a).await,
    }
}
