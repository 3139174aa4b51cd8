//! Storage conformance suite: every case below is written once against `dyn Store` and runs
//! unchanged on both backends, each run on a fresh database of its own:
//!
//! - `sqlite::<case>`: a database file in a new temporary directory;
//! - `postgres::<case>`: `CREATE DATABASE xmemo_t_<random>` on the server named by
//!   `XMEMO_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`), dropped
//!   `WITH (FORCE)` by a guard when the test ends, passes or panics. PostgreSQL cases talk to
//!   two independent pools ("nodes") of that database, so the concurrency cases also prove the
//!   guarantees hold across nodes. When the server cannot be reached the PostgreSQL cases fail
//!   (they skip, loudly, only with `XMEMO_TEST_ALLOW_SKIP=1`).

use serde_json::{Map, Value, json};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, Connection};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use xmemo_core::{
    AssetStatus, ComponentType, InvitationStatus, RevisionStatus, Role, WorkspaceKind,
};
use xmemo_store::postgres::{PgPoolSettings, PostgresStore};
use xmemo_store::sqlite::SqliteStore;
use xmemo_store::*;
use xmemo_testkit::{PgDropGuard, postgres_admin, postgres_fresh_database};

type DynStore = Arc<dyn Store>;

// ---------------------------------------------------------------------------------------------
// Fresh databases
// ---------------------------------------------------------------------------------------------

enum Raw {
    Sqlite(PathBuf),
    Postgres(Box<PgConnectOptions>),
}

/// One fresh database and the stores ("nodes") that serve it.
pub struct TestDb {
    nodes: Vec<DynStore>,
    raw: Raw,
    _guard: Guard,
}

#[allow(dead_code)]
enum Guard {
    Sqlite(tempfile::TempDir),
    Postgres(Box<PgDropGuard>),
}

impl TestDb {
    fn store(&self) -> DynStore {
        self.nodes[0].clone()
    }

    /// Node `i` (round robin): two pools on PostgreSQL, the one store on SQLite.
    fn node(&self, i: usize) -> DynStore {
        self.nodes[i % self.nodes.len()].clone()
    }

    /// Another node on the same database: PostgreSQL's second pool, or on SQLite a second
    /// store opened on the same file (another process, such as `xmemo admin`, would be one).
    async fn other_node(&self) -> DynStore {
        match &self.raw {
            Raw::Sqlite(path) => Arc::new(SqliteStore::open(path).await.unwrap()),
            Raw::Postgres(_) => self.node(1),
        }
    }

    /// A node of its own on the same database (a new store: its own pools and indexes).
    async fn fresh_node(&self) -> DynStore {
        match &self.raw {
            Raw::Sqlite(path) => Arc::new(SqliteStore::open(path).await.unwrap()),
            Raw::Postgres(options) => Arc::new(
                PostgresStore::connect_with((**options).clone(), test_pool_settings())
                    .await
                    .unwrap(),
            ),
        }
    }

    /// Runs one statement outside the store, as an operator or an attacker with SQL access
    /// would. Returns the error text on failure.
    async fn raw_execute(&self, sql: &str) -> Result<u64, String> {
        match &self.raw {
            Raw::Sqlite(path) => {
                let c = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
                c.busy_timeout(std::time::Duration::from_secs(10))
                    .map_err(|e| e.to_string())?;
                c.execute(sql, [])
                    .map(|n| n as u64)
                    .map_err(|e| e.to_string())
            }
            Raw::Postgres(options) => {
                let mut c = PgConnection::connect_with(options)
                    .await
                    .map_err(|e| e.to_string())?;
                sqlx::query(AssertSqlSafe(sql.to_string()))
                    .execute(&mut c)
                    .await
                    .map(|r| r.rows_affected())
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// The writer held from outside the store until dropped: SQLite's write lock, or
/// PostgreSQL's audit-chain lock (every save takes it before its commit).
enum HeldWriter {
    Sqlite(rusqlite::Connection),
    Postgres(PgConnection),
}

impl TestDb {
    async fn hold_writer(&self) -> HeldWriter {
        match &self.raw {
            Raw::Sqlite(path) => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.execute_batch("BEGIN IMMEDIATE").unwrap();
                HeldWriter::Sqlite(c)
            }
            Raw::Postgres(options) => {
                let mut c = PgConnection::connect_with(options).await.unwrap();
                // The key of `pg_advisory_xact_lock` in the audit append (postgres/mod.rs);
                // a session lock on it excludes the transaction locks of other sessions.
                sqlx::query("SELECT pg_advisory_lock(8677703577704751477)")
                    .execute(&mut c)
                    .await
                    .unwrap();
                HeldWriter::Postgres(c)
            }
        }
    }
}

impl HeldWriter {
    async fn release(self) {
        match self {
            HeldWriter::Sqlite(c) => c.execute_batch("ROLLBACK").unwrap(),
            HeldWriter::Postgres(mut c) => {
                sqlx::query("SELECT pg_advisory_unlock(8677703577704751477)")
                    .execute(&mut c)
                    .await
                    .unwrap();
            }
        }
    }
}

/// Waits (yielding) until `done` holds; panics after a long bound, so a broken queue fails the
/// test instead of hanging it.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..5_000 {
        if done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    panic!("gave up waiting: {what}");
}

async fn sqlite_db() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("xmemo.db");
    let store = SqliteStore::open(&path).await.unwrap();
    TestDb {
        nodes: vec![Arc::new(store)],
        raw: Raw::Sqlite(path),
        _guard: Guard::Sqlite(dir),
    }
}

fn test_pool_settings() -> PgPoolSettings {
    PgPoolSettings {
        max_connections: 6,
        application_name: "xmemo-conformance".into(),
        ..Default::default()
    }
}

async fn postgres_db() -> Option<TestDb> {
    let (options, guard) = postgres_fresh_database().await?;
    let a = PostgresStore::connect_with(options.clone(), test_pool_settings())
        .await
        .unwrap();
    a.migrate().await.unwrap();
    let b = PostgresStore::connect_with(options.clone(), test_pool_settings())
        .await
        .unwrap();
    // A second node starting on a migrated database finds nothing to do.
    b.migrate().await.unwrap();
    assert!(b.schema_is_current().await.unwrap());
    Some(TestDb {
        nodes: vec![Arc::new(a), Arc::new(b)],
        raw: Raw::Postgres(Box::new(options)),
        _guard: Guard::Postgres(Box::new(guard)),
    })
}

/// Instantiates every case for both backends.
macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let db = super::sqlite_db().await;
                    super::all_cases::$case(&db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(db) = super::postgres_db().await else { return };
                    super::all_cases::$case(&db).await;
                }
            )*
        }
    };
}

conformance!(
    accounts_and_personal_workspaces,
    teams_and_members,
    api_keys,
    save_creates_then_appends,
    identical_hash_creates_nothing,
    content_holders_find_a_hash_in_one_workspace,
    stale_expected_revision_conflicts_and_writes_nothing,
    components_are_content_addressed,
    concurrent_saves_are_gap_free,
    concurrent_saves_of_many_new_slugs,
    group_commit_answers_each_save_its_own_result,
    saves_queued_behind_a_busy_writer_share_one_commit,
    clients_saving_in_a_loop_share_commits,
    a_batch_publishing_one_skill_twice_indexes_it_once,
    a_save_answers_the_skill_as_stored,
    publish_deprecates_previous_and_status_is_compare_and_set,
    concurrent_publishes_leave_one_published,
    database_enforces_one_published_revision,
    archive_leaves_search_and_restore_returns,
    search_rules,
    search_puts_skills_holding_every_word_first,
    search_of_words_many_skills_hold,
    search_survives_query_syntax,
    search_sees_every_nodes_writes_at_once,
    audit_chain_verifies_and_filters,
    concurrent_audit_appends_stay_linear,
    audit_log_is_append_only,
    table_counts_use_common_names,
    revision_source_round_trips,
    revision_safety_is_stored_hidden_from_search_and_replaced_by_a_rescan,
    memories_remember_and_identical_content,
    memories_update_keeps_history_and_is_compare_and_set,
    memories_forget_and_restore,
    memories_recall_ranks_and_filters,
    memories_concurrent_updates_one_wins,
    account_deletion_leaves_nothing_behind,
    invitations_reach_only_their_account,
    accepting_is_atomic,
    decline_and_revoke_close_an_invitation_once,
    teams_keep_an_owner,
    concurrent_owner_removals_keep_one,
    every_listing_pages_by_keyset,
    a_skill_page_holds_no_repeats_when_rows_arrive_meanwhile,
    passwords_replace_and_end_sessions,
    sessions_rotate_extend_and_end,
    oauth_clients_round_trip,
    oauth_codes_are_single_use,
    oauth_refresh_tokens_rotate_once,
    oauth_grants_list_and_revoke,
    oauth_rows_go_with_the_account,
    passwords_travel_with_a_snapshot,
    credential_cache_follows_every_write_at_once,
    api_key_last_use_is_coalesced,
    pending_proposals_and_latest_statuses,
    deleting_a_sole_owner_is_refused_in_its_transaction,
    two_owners_deleting_themselves_at_once_keep_one,
    ownerless_teams_are_found_and_repaired,
    quotas_hold_in_the_writing_transaction,
    invitation_bounds_hold_in_the_inviting_transaction,
    unused_oauth_clients_expire_at_the_next_registration,
    signin_addresses_and_unlocks,
    node_quotas_keep_each_nodes_newest_start,
    a_node_that_lagged_past_the_pruned_log_rebuilds,
    pruning_keeps_the_newest_entries_and_what_a_live_model_needs,
    writes_are_indexed_by_their_writer_and_other_nodes_by_their_follower,
    a_search_waits_briefly_for_the_first_build_then_is_told_to_come_back,
    stored_vectors_rank_until_their_text_changes_and_every_node_reuses_them,
    scores_run_from_0_to_1_and_mean_the_same_for_every_query_and_lane,
    other_languages_words_and_compound_tails_are_found,
    recall_filters_apply_inside_both_lanes,
    a_memory_is_embedded_with_the_start_of_the_one_before_it_in_its_scope,
);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn actor(account_id: &str) -> Attribution {
    Attribution {
        account_id: account_id.to_string(),
        credential_id: Some("key_test".into()),
        client_profile: Some("cursor-plugin".into()),
        agent_id: Some("agent-x".into()),
        agent_instance_id: Some("instance-1".into()),
    }
}

async fn account(store: &DynStore, handle: &str) -> Account {
    store
        .create_account(
            NewAccount {
                handle: handle.into(),
                display_name: format!("{handle} display"),
                is_admin: false,
            },
            AuditDraft::new("account.create", &Attribution::default()),
        )
        .await
        .unwrap()
}

/// Makes `who` a member of `team` the only way there is: an invitation it accepts.
async fn join(store: &DynStore, team: &Workspace, by: &Account, who: &Account, role: Role) {
    let invitation = store
        .create_invitation(
            NewInvitation {
                workspace_id: team.workspace_id.clone(),
                invitee: who.handle.clone(),
                account_id: Some(who.account_id.clone()),
                role,
                invited_by: by.account_id.clone(),
                bounds: Default::default(),
            },
            AuditDraft::new("invitation.create", &actor(&by.account_id)),
        )
        .await
        .unwrap();
    store
        .answer_invitation(
            &invitation.invitation_id,
            &who.account_id,
            InvitationAnswer::Accept,
            AuditDraft::new("invitation.accept", &actor(&who.account_id)),
        )
        .await
        .unwrap();
}

async fn team(store: &DynStore, handle: &str, owner: &Account) -> Workspace {
    store
        .create_team(
            NewTeam {
                handle: handle.into(),
                name: format!("{handle} team"),
                owner_account_id: owner.account_id.clone(),
            },
            AuditDraft::new("workspace.create", &actor(&owner.account_id)),
        )
        .await
        .unwrap()
}

fn component(path: &str, kind: ComponentType, content: &[u8]) -> NewComponent {
    NewComponent {
        manifest: ComponentManifest {
            logical_path: path.into(),
            component_type: kind,
            content_hash: xmemo_core::content_hash(content),
            size: content.len() as u64,
            media_type: xmemo_core::media::media_type_for(path, content),
        },
        content: content.to_vec(),
    }
}

struct Draft {
    name: String,
    description: String,
    body: String,
    metadata: Map<String, Value>,
    components: Vec<NewComponent>,
    status: RevisionStatus,
    expected: Option<String>,
    source: Option<Value>,
    safety: Option<Value>,
}

fn draft(body: &str) -> Draft {
    Draft {
        name: "Deploy to production".into(),
        description: "Steps to ship a release safely".into(),
        body: body.into(),
        metadata: Map::new(),
        components: vec![],
        status: RevisionStatus::Draft,
        expected: None,
        source: None,
        safety: None,
    }
}

impl Draft {
    fn named(mut self, name: &str, description: &str) -> Self {
        self.name = name.into();
        self.description = description.into();
        self
    }
    fn status(mut self, status: RevisionStatus) -> Self {
        self.status = status;
        self
    }
    fn components(mut self, components: Vec<NewComponent>) -> Self {
        self.components = components;
        self
    }
    fn metadata(mut self, metadata: Value) -> Self {
        if let Value::Object(m) = metadata {
            self.metadata = m;
        }
        self
    }
    fn source(mut self, source: Value) -> Self {
        self.source = Some(source);
        self
    }
    fn safety(mut self, report: Value) -> Self {
        self.safety = Some(report);
        self
    }
    fn expect(mut self, revision_id: Option<&str>) -> Self {
        self.expected = revision_id.map(str::to_string);
        self
    }
    fn to_save(&self, workspace_id: &str, slug: &str, who: &Attribution) -> SaveRevision {
        let manifests: Vec<ComponentManifest> =
            self.components.iter().map(|c| c.manifest.clone()).collect();
        let canonical_hash = xmemo_core::canonical_hash(
            &self.name,
            &self.description,
            &self.metadata,
            &self.body,
            &hashed_components(&manifests),
        );
        SaveRevision {
            workspace_id: workspace_id.into(),
            slug: slug.into(),
            expected_revision_id: self.expected.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            instruction_body: self.body.clone(),
            metadata: self.metadata.clone(),
            canonical_hash,
            status: self.status,
            components: self.components.clone(),
            attribution: who.clone(),
            source: self.source.clone(),
            safety: self.safety.clone(),
            quota: None,
        }
    }
}

async fn save(store: &DynStore, owner: &Account, slug: &str, d: Draft) -> SaveOutcome {
    store
        .save_revision(d.to_save(
            &owner.personal_workspace_id,
            slug,
            &actor(&owner.account_id),
        ))
        .await
        .unwrap()
}

fn status_change(
    revision_id: &str,
    from: RevisionStatus,
    to: RevisionStatus,
    who: &Account,
) -> StatusChange {
    StatusChange {
        revision_id: revision_id.into(),
        from,
        to,
        review_note: None,
        audit: AuditDraft::new(&format!("revision.{to}"), &actor(&who.account_id))
            .revision(revision_id),
    }
}

async fn search(store: &DynStore, text: &str, workspaces: &[&str]) -> Vec<Descriptor> {
    store
        .search(&SearchQuery {
            text: text.into(),
            workspace_ids: workspaces.iter().map(|s| s.to_string()).collect(),
            limit: 10,
            semantic: None,
            include_malicious: false,
        })
        .await
        .unwrap_or_else(|e| panic!("search {text:?} failed: {e}"))
}

fn slugs(hits: &[Descriptor]) -> Vec<&str> {
    hits.iter().map(|d| d.slug.as_str()).collect()
}

fn published_count(revisions: &[Revision]) -> usize {
    revisions
        .iter()
        .filter(|r| r.status == RevisionStatus::Published)
        .count()
}

fn conflict<T: std::fmt::Debug>(result: StoreResult<T>) -> String {
    match result {
        Err(StoreError::Conflict(m)) => m,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

const TABLE_NAMES: &[&str] = &[
    "account_passwords",
    "accounts",
    "api_keys",
    "audit_log",
    "blobs",
    "invitations",
    "level0",
    "memberships",
    "memories",
    "memory_tags",
    "memory_versions",
    "oauth_clients",
    "oauth_codes",
    "oauth_grants",
    "oauth_tokens",
    "revision_components",
    "revisions",
    "skills",
    "web_sessions",
    "workspaces",
];

fn memory_content(
    kind: xmemo_core::MemoryKind,
    content: &str,
) -> xmemo_core::memory::MemoryContent {
    xmemo_core::memory::MemoryContent {
        kind,
        content: content.into(),
        title: None,
        tags: vec![],
        project: None,
    }
}

fn new_memory(ws: &str, who: &Attribution, c: xmemo_core::memory::MemoryContent) -> NewMemory {
    NewMemory {
        memory_id: xmemo_core::new_id("mem"),
        workspace_id: ws.to_string(),
        content_hash: xmemo_core::memory::memory_content_hash(&c.content),
        content: c,
        expires_at: None,
        attribution: who.clone(),
        quota: None,
    }
}

async fn remember(store: &DynStore, new: NewMemory) -> RememberOutcome {
    let audit = AuditDraft::new("memory.remember", &new.attribution)
        .workspace(&new.workspace_id)
        .details(json!({"memory_id": new.memory_id}));
    store.remember(new, audit).await.unwrap()
}

fn memory_query(workspaces: &[&str]) -> MemoryQuery {
    MemoryQuery {
        workspace_ids: workspaces.iter().map(|w| w.to_string()).collect(),
        now: now(),
        limit: 50,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------

mod cases {
    use super::*;

    pub async fn accounts_and_personal_workspaces(db: &TestDb) {
        let store = db.store();
        assert_eq!(store.count_accounts().await.unwrap(), 0);
        let alice = account(&store, "alice").await;
        assert!(alice.account_id.starts_with("acct_"));
        assert_eq!(alice.handle, "alice");
        assert_eq!(
            store.get_account(&alice.account_id).await.unwrap(),
            Some(alice.clone())
        );
        assert_eq!(
            store.find_account_by_handle("alice").await.unwrap(),
            Some(alice.clone())
        );
        assert_eq!(store.find_account_by_handle("nobody").await.unwrap(), None);
        assert_eq!(store.get_account("acct_missing").await.unwrap(), None);

        let ws = store
            .get_workspace(&alice.personal_workspace_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ws.kind, WorkspaceKind::Personal);
        assert_eq!(ws.handle, "personal");
        let memberships = store.memberships(&alice.account_id).await.unwrap();
        assert_eq!(memberships.len(), 1);
        assert_eq!(memberships[0].workspace, ws);
        assert_eq!(memberships[0].role, Role::Owner);
        let members = store.list_members(&ws.workspace_id).await.unwrap();
        assert_eq!(members.len(), 1);
        assert_eq!(members[0].account_id, alice.account_id);
        assert_eq!(members[0].role, Role::Owner);

        // Two personal workspaces share the handle `personal` without conflict.
        let bob = account(&store, "bob").await;
        assert_ne!(bob.personal_workspace_id, alice.personal_workspace_id);
        assert_eq!(store.count_accounts().await.unwrap(), 2);
        let handles: Vec<String> = store
            .list_accounts()
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.handle)
            .collect();
        assert_eq!(handles, ["alice", "bob"]);

        let before = store.table_counts().await.unwrap();
        let duplicate = store
            .create_account(
                NewAccount {
                    handle: "alice".into(),
                    display_name: "Another Alice".into(),
                    is_admin: true,
                },
                AuditDraft::new("account.create", &Attribution::default()),
            )
            .await;
        conflict(duplicate);
        assert_eq!(
            store.table_counts().await.unwrap(),
            before,
            "a failed create wrote rows"
        );
    }

    pub async fn teams_and_members(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let team = store
            .create_team(
                NewTeam {
                    handle: "ops".into(),
                    name: "Operations".into(),
                    owner_account_id: alice.account_id.clone(),
                },
                AuditDraft::new("team.create", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        assert_eq!(team.kind, WorkspaceKind::Team);
        assert_eq!(
            store.find_team_by_handle("ops").await.unwrap(),
            Some(team.clone())
        );
        assert_eq!(store.find_team_by_handle("personal").await.unwrap(), None);
        assert_eq!(
            store.get_workspace(&team.workspace_id).await.unwrap(),
            Some(team.clone())
        );

        let before = store.table_counts().await.unwrap();
        let dup = store
            .create_team(
                NewTeam {
                    handle: "ops".into(),
                    name: "Other ops".into(),
                    owner_account_id: bob.account_id.clone(),
                },
                AuditDraft::new("team.create", &actor(&bob.account_id)),
            )
            .await;
        assert!(conflict(dup).contains("ops"));
        assert_eq!(store.table_counts().await.unwrap(), before);

        let who = actor(&alice.account_id);
        // Nobody becomes a member by a role change: only an accepted invitation adds one.
        let before = store.table_counts().await.unwrap();
        let not_member = store
            .set_member_role(
                &team.workspace_id,
                &bob.account_id,
                Role::Member,
                AuditDraft::new("member.role", &who).workspace(&team.workspace_id),
            )
            .await;
        assert!(
            matches!(not_member, Err(StoreError::NotFound(_))),
            "{not_member:?}"
        );
        assert_eq!(store.table_counts().await.unwrap(), before);
        join(&store, &team, &alice, &bob, Role::Member).await;
        let members = store.list_members(&team.workspace_id).await.unwrap();
        let roles: Vec<(&str, Role)> = members
            .iter()
            .map(|m| (m.handle.as_str(), m.role))
            .collect();
        assert_eq!(roles, [("alice", Role::Owner), ("bob", Role::Member)]);

        store
            .set_member_role(
                &team.workspace_id,
                &bob.account_id,
                Role::Admin,
                AuditDraft::new("member.role", &who).workspace(&team.workspace_id),
            )
            .await
            .unwrap();
        let bob_ms = store.memberships(&bob.account_id).await.unwrap();
        let kinds: Vec<(WorkspaceKind, &str, Role)> = bob_ms
            .iter()
            .map(|m| (m.workspace.kind, m.workspace.handle.as_str(), m.role))
            .collect();
        assert_eq!(
            kinds,
            [
                (WorkspaceKind::Personal, "personal", Role::Owner),
                (WorkspaceKind::Team, "ops", Role::Admin)
            ]
        );

        let removed = store
            .remove_member(
                &team.workspace_id,
                &bob.account_id,
                AuditDraft::new("member.remove", &who).workspace(&team.workspace_id),
            )
            .await
            .unwrap();
        assert!(removed);
        let audit_before = store.table_counts().await.unwrap()["audit_log"];
        let again = store
            .remove_member(
                &team.workspace_id,
                &bob.account_id,
                AuditDraft::new("member.remove", &who).workspace(&team.workspace_id),
            )
            .await
            .unwrap();
        assert!(!again);
        assert_eq!(
            store.table_counts().await.unwrap()["audit_log"],
            audit_before,
            "a no-op removal is not audited"
        );
        assert_eq!(store.memberships(&bob.account_id).await.unwrap().len(), 1);
    }

    pub async fn api_key_last_use_is_coalesced(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let key = store
            .create_api_key(
                NewApiKey {
                    account_id: alice.account_id.clone(),
                    name: "laptop".into(),
                    prefix: "xm_abcd".into(),
                    key_hash: "d".repeat(64),
                    scopes: vec!["memory:read".into()],
                    profile: "ordinary-full".into(),
                    expires_at: None,
                },
                AuditDraft::new("key.create", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        assert_eq!(key.last_used_at, None, "a new key was never used");
        let t1 = "2026-01-01T10:00:00.000Z";
        assert!(
            store
                .touch_api_key(&key.key_id, t1, "2026-01-01T09:59:00.000Z")
                .await
                .unwrap()
        );
        // Within the interval: the stored use is recent enough, nothing is written.
        assert!(
            !store
                .touch_api_key(
                    &key.key_id,
                    "2026-01-01T10:00:30.000Z",
                    "2025-12-31T00:00:00.000Z"
                )
                .await
                .unwrap()
        );
        let found = store
            .find_api_key_by_hash(&"d".repeat(64))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.last_used_at.as_deref(), Some(t1));
        let t2 = "2026-01-01T10:05:00.000Z";
        assert!(
            store
                .touch_api_key(&key.key_id, t2, "2026-01-01T10:04:00.000Z")
                .await
                .unwrap()
        );
        let listed = store.list_api_keys(&alice.account_id).await.unwrap();
        assert_eq!(listed[0].last_used_at.as_deref(), Some(t2));
        assert!(
            !store.touch_api_key("key_missing", t2, t2).await.unwrap(),
            "an unknown key changes nothing"
        );
    }

    pub async fn pending_proposals_and_latest_statuses(db: &TestDb) {
        let store = db.store();
        let owner = account(&store, "owner").await;
        let bob = account(&store, "bob").await;
        let t = team(&store, "ops", &owner).await;
        join(&store, &t, &owner, &bob, Role::Member).await;
        let who = actor(&bob.account_id);
        let proposed = store
            .save_revision(draft("first").status(RevisionStatus::Proposed).to_save(
                &t.workspace_id,
                "deploy",
                &who,
            ))
            .await
            .unwrap();
        let drafted = store
            .save_revision(draft("other").to_save(&t.workspace_id, "other", &who))
            .await
            .unwrap();
        // A personal draft is no proposal of the team.
        save(
            &store,
            &owner,
            "mine",
            draft("x").status(RevisionStatus::Proposed),
        )
        .await;

        let team_ids = [t.workspace_id.clone()];
        let pending = store.pending_proposals(&team_ids, 10).await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].slug, "deploy");
        assert_eq!(pending[0].revision_id, proposed.revision.revision_id);
        assert_eq!(pending[0].revision_number, 1);
        assert_eq!(pending[0].account_id, bob.account_id);
        assert_eq!(pending[0].workspace_id, t.workspace_id);
        assert!(
            store
                .pending_proposals(&team_ids, 0)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(store.pending_proposals(&[], 10).await.unwrap().is_empty());

        let ids = vec![
            proposed.skill.skill_id.clone(),
            drafted.skill.skill_id.clone(),
            "skill_missing".to_string(),
        ];
        let statuses = store.latest_statuses(&ids).await.unwrap();
        assert_eq!(statuses.len(), 2);
        assert_eq!(statuses[&proposed.skill.skill_id], RevisionStatus::Proposed);
        assert_eq!(statuses[&drafted.skill.skill_id], RevisionStatus::Draft);

        // Approving ends the wait; the latest status follows.
        store
            .change_revision_status(status_change(
                &proposed.revision.revision_id,
                RevisionStatus::Proposed,
                RevisionStatus::Published,
                &owner,
            ))
            .await
            .unwrap();
        assert!(
            store
                .pending_proposals(&team_ids, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let statuses = store.latest_statuses(&ids).await.unwrap();
        assert_eq!(
            statuses[&proposed.skill.skill_id],
            RevisionStatus::Published
        );

        // An archived skill's proposal waits for nobody.
        let again = store
            .save_revision(draft("second").status(RevisionStatus::Proposed).to_save(
                &t.workspace_id,
                "deploy",
                &who,
            ))
            .await
            .unwrap();
        assert_eq!(
            store.pending_proposals(&team_ids, 10).await.unwrap().len(),
            1
        );
        store
            .set_asset_status(
                &again.skill.skill_id,
                AssetStatus::Archived,
                AuditDraft::new("skill.archive", &actor(&owner.account_id)),
            )
            .await
            .unwrap();
        assert!(
            store
                .pending_proposals(&team_ids, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }

    /// The store caches keys, accounts and memberships for the credential lookup of every
    /// request; each write through the store is seen by the very next read, and a repeated
    /// lookup runs no statement.
    pub async fn credential_cache_follows_every_write_at_once(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let key = store
            .create_api_key(
                NewApiKey {
                    account_id: bob.account_id.clone(),
                    name: "laptop".into(),
                    prefix: "xm_abcd".into(),
                    key_hash: "d".repeat(64),
                    scopes: vec!["memory:read".into()],
                    profile: "ordinary-full".into(),
                    expires_at: None,
                },
                AuditDraft::new("key.create", &actor(&bob.account_id)),
            )
            .await
            .unwrap();
        let lookup = |store: DynStore| async move {
            let k = store.find_api_key_by_hash(&"d".repeat(64)).await.unwrap();
            let a = match &k {
                Some(k) => store.account_of_credential(&k.account_id).await.unwrap(),
                None => None,
            };
            let m = match &a {
                Some(a) => store.memberships(&a.account_id).await.unwrap(),
                None => vec![],
            };
            (k, a, m)
        };
        let (k, a, m) = lookup(store.clone()).await;
        assert_eq!(k.as_ref(), Some(&key));
        assert_eq!(a.as_ref(), Some(&bob));
        assert_eq!(m.len(), 1, "the personal workspace");
        let before = store.statements_run();
        let again = lookup(store.clone()).await;
        assert_eq!(again, (k, a, m));
        assert_eq!(
            store.statements_run(),
            before,
            "a repeated credential lookup is answered from the cache"
        );

        // A membership appears, changes role and goes, each seen at once.
        let ws = team(&store, "ops", &alice).await;
        join(&store, &ws, &alice, &bob, Role::Viewer).await;
        let role_in = |m: &[Membership]| {
            m.iter()
                .find(|m| m.workspace.workspace_id == ws.workspace_id)
                .map(|m| m.role)
        };
        assert_eq!(role_in(&lookup(store.clone()).await.2), Some(Role::Viewer));
        store
            .set_member_role(
                &ws.workspace_id,
                &bob.account_id,
                Role::Member,
                AuditDraft::new("member.role", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        assert_eq!(role_in(&lookup(store.clone()).await.2), Some(Role::Member));
        assert!(
            store
                .remove_member(
                    &ws.workspace_id,
                    &bob.account_id,
                    AuditDraft::new("member.remove", &actor(&alice.account_id)),
                )
                .await
                .unwrap()
        );
        assert_eq!(role_in(&lookup(store.clone()).await.2), None);

        // A revoked key reads revoked at once; a deleted account is gone at once.
        assert!(
            store
                .revoke_api_key(
                    &bob.account_id,
                    &key.key_id,
                    AuditDraft::new("key.revoke", &actor(&bob.account_id)),
                )
                .await
                .unwrap()
        );
        let (k, _, _) = lookup(store.clone()).await;
        assert!(k.is_some_and(|k| k.revoked_at.is_some()));
        store
            .delete_account(
                &bob.account_id,
                AuditDraft::new("account.delete", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        assert_eq!(lookup(store.clone()).await, (None, None, vec![]));
        assert_eq!(store.get_account(&bob.account_id).await.unwrap(), None);
    }

    pub async fn api_keys(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let new_key = |name: &str, hash: &str| NewApiKey {
            account_id: alice.account_id.clone(),
            name: name.into(),
            prefix: "xm_abcd".into(),
            key_hash: hash.into(),
            scopes: vec!["memory:read".into(), "memory:write".into()],
            profile: "ordinary-full".into(),
            expires_at: Some("2099-01-01T00:00:00.000Z".into()),
        };
        let who = actor(&alice.account_id);
        let k1 = store
            .create_api_key(
                new_key("laptop", &"a".repeat(64)),
                AuditDraft::new("key.create", &who),
            )
            .await
            .unwrap();
        let k2 = store
            .create_api_key(
                new_key("ci", &"b".repeat(64)),
                AuditDraft::new("key.create", &who),
            )
            .await
            .unwrap();
        assert!(k1.key_id.starts_with("key_"));
        let found = store
            .find_api_key_by_hash(&"a".repeat(64))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, k1);
        assert_eq!(found.key_hash, "a".repeat(64));
        assert_eq!(found.scopes, ["memory:read", "memory:write"]);
        assert_eq!(
            found.expires_at.as_deref(),
            Some("2099-01-01T00:00:00.000Z")
        );
        assert_eq!(
            store.find_api_key_by_hash(&"c".repeat(64)).await.unwrap(),
            None
        );
        assert_eq!(
            store.list_api_keys(&alice.account_id).await.unwrap(),
            [k1.clone(), k2.clone()]
        );
        assert!(
            store
                .list_api_keys(&bob.account_id)
                .await
                .unwrap()
                .is_empty()
        );

        let dup = store
            .create_api_key(
                new_key("dup", &"a".repeat(64)),
                AuditDraft::new("key.create", &who),
            )
            .await;
        conflict(dup);

        // Another account cannot revoke it.
        assert!(
            !store
                .revoke_api_key(
                    &bob.account_id,
                    &k1.key_id,
                    AuditDraft::new("key.revoke", &who)
                )
                .await
                .unwrap()
        );
        assert!(
            store
                .revoke_api_key(
                    &alice.account_id,
                    &k1.key_id,
                    AuditDraft::new("key.revoke", &who)
                )
                .await
                .unwrap()
        );
        assert!(
            !store
                .revoke_api_key(
                    &alice.account_id,
                    &k1.key_id,
                    AuditDraft::new("key.revoke", &who)
                )
                .await
                .unwrap()
        );
        let revoked = store
            .find_api_key_by_hash(&"a".repeat(64))
            .await
            .unwrap()
            .unwrap();
        assert!(revoked.revoked_at.is_some());
        let live = store
            .find_api_key_by_hash(&"b".repeat(64))
            .await
            .unwrap()
            .unwrap();
        assert!(live.revoked_at.is_none());
    }

    pub async fn save_creates_then_appends(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let metadata = json!({"license": "MIT", "metadata": {"team": "ops", "version": 2}, "allowed-tools": ["bash"]});
        let first = save(
            &store,
            &alice,
            "deploy",
            draft("Step one.").metadata(metadata.clone()),
        )
        .await;
        assert!(first.created);
        assert!(first.skill.skill_id.starts_with("skill_"));
        assert!(first.revision.revision_id.starts_with("rev_"));
        assert_eq!(first.revision.revision_number, 1);
        assert_eq!(first.skill.latest_revision_number, 1);
        assert_eq!(first.skill.asset_status, AssetStatus::Active);
        assert_eq!(first.skill.published_revision_id, None);
        assert_eq!(first.revision.status, RevisionStatus::Draft);
        assert_eq!(Value::Object(first.revision.metadata.clone()), metadata);
        assert_eq!(first.revision.attribution, actor(&alice.account_id));
        assert_eq!(
            first.revision.created_at.len(),
            "2024-01-01T00:00:00.000Z".len()
        );
        assert!(first.revision.created_at.ends_with('Z'));

        let second = save(
            &store,
            &alice,
            "deploy",
            draft("Step one. Step two.").named("Deploy v2", "Now with two steps"),
        )
        .await;
        assert!(second.created);
        assert_eq!(second.skill.skill_id, first.skill.skill_id);
        assert_eq!(second.revision.revision_number, 2);
        assert_eq!(second.skill.latest_revision_number, 2);
        assert_eq!(second.skill.name, "Deploy v2");
        assert_eq!(second.skill.description, "Now with two steps");

        let latest = store
            .latest_revision(&first.skill.skill_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(latest, second.revision);
        let got = store
            .get_revision(&first.revision.revision_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            got, first.revision,
            "a revision reads back exactly as it was returned"
        );
        assert_eq!(
            store
                .published_revision(&first.skill.skill_id)
                .await
                .unwrap(),
            None
        );
        assert_eq!(store.get_revision("rev_missing").await.unwrap(), None);

        let skill = store
            .get_skill(&first.skill.skill_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(skill, second.skill);
        let found = store
            .find_skills_by_slug(std::slice::from_ref(&ws), "deploy")
            .await
            .unwrap();
        assert_eq!(found, std::slice::from_ref(&skill));
        assert!(
            store
                .find_skills_by_slug(&[], "deploy")
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .find_skills_by_slug(std::slice::from_ref(&ws), "other")
                .await
                .unwrap()
                .is_empty()
        );

        save(&store, &alice, "another", draft("x")).await;
        save(&store, &alice, "a-first", draft("y")).await;
        let listed: Vec<String> = store
            .list_skills(std::slice::from_ref(&ws))
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.slug)
            .collect();
        assert_eq!(
            listed,
            ["a-first", "another", "deploy"],
            "bytewise slug order"
        );

        let revisions = store.list_revisions(&first.skill.skill_id).await.unwrap();
        assert_eq!(revisions, [first.revision.clone(), second.revision.clone()]);
    }

    pub async fn identical_hash_creates_nothing(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let d = || {
            draft("Same body").components(vec![component(
                "references/a.md",
                ComponentType::Reference,
                b"# A",
            )])
        };
        let first = save(&store, &alice, "same", d()).await;
        let before = store.table_counts().await.unwrap();
        let again = save(&store, &alice, "same", d()).await;
        assert!(!again.created);
        assert_eq!(again.revision, first.revision);
        assert_eq!(again.skill.latest_revision_number, 1);
        assert_eq!(
            store.table_counts().await.unwrap(),
            before,
            "a dedupe wrote rows"
        );

        // Only the latest revision counts: going back to an older content is a new revision.
        let second = save(&store, &alice, "same", draft("Other body")).await;
        assert!(second.created);
        let back = save(&store, &alice, "same", d()).await;
        assert!(back.created);
        assert_eq!(back.revision.revision_number, 3);
    }

    /// #24: the revisions of a workspace with a given canonical_hash, by slug then newest
    /// first, with whether each is its skill's latest; other workspaces' are not seen.
    pub async fn content_holders_find_a_hash_in_one_workspace(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let same = save(&store, &alice, "weather", draft("Same")).await;
        let hash = same.revision.canonical_hash.clone();
        save(&store, &alice, "weather", draft("Changed")).await;
        let copy = save(&store, &alice, "a-copy", draft("Same")).await;
        save(&store, &bob, "weather", draft("Same")).await;
        let ws = &alice.personal_workspace_id;
        let holders = store.content_holders(ws, &hash, 10).await.unwrap();
        let got: Vec<(&str, i64, bool)> = holders
            .iter()
            .map(|h| (h.slug.as_str(), h.revision_number, h.latest))
            .collect();
        assert_eq!(got, [("a-copy", 1, true), ("weather", 1, false)]);
        assert_eq!(holders[0].revision_id, copy.revision.revision_id);
        assert_eq!(holders[0].skill_id, copy.skill.skill_id);
        assert_eq!(holders[1].status, same.revision.status);
        assert_eq!(store.content_holders(ws, &hash, 1).await.unwrap().len(), 1);
        assert!(
            store
                .content_holders(ws, &"0".repeat(64), 10)
                .await
                .unwrap()
                .is_empty()
        );
    }

    pub async fn stale_expected_revision_conflicts_and_writes_nothing(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let who = actor(&alice.account_id);
        let ws = alice.personal_workspace_id.clone();

        let before = store.table_counts().await.unwrap();
        let missing = store
            .save_revision(
                draft("x")
                    .expect(Some("rev_nope"))
                    .to_save(&ws, "new-one", &who),
            )
            .await;
        conflict(missing);
        assert_eq!(store.table_counts().await.unwrap(), before);

        let r1 = save(&store, &alice, "cas", draft("v1")).await;
        let r2 = save(
            &store,
            &alice,
            "cas",
            draft("v2").expect(Some(&r1.revision.revision_id)),
        )
        .await;
        assert_eq!(r2.revision.revision_number, 2);

        let before = store.table_counts().await.unwrap();
        let stale = store
            .save_revision(
                draft("v3")
                    .components(vec![component(
                        "scripts/x.py",
                        ComponentType::Script,
                        b"print(1)",
                    )])
                    .status(RevisionStatus::Published)
                    .expect(Some(&r1.revision.revision_id))
                    .to_save(&ws, "cas", &who),
            )
            .await;
        let message = conflict(stale);
        assert!(message.contains(&r1.revision.revision_id), "{message}");
        assert_eq!(
            store.table_counts().await.unwrap(),
            before,
            "a stale save wrote rows"
        );
        let skill = store.get_skill(&r1.skill.skill_id).await.unwrap().unwrap();
        assert_eq!(skill.latest_revision_number, 2);
        assert_eq!(skill.updated_at, r2.skill.updated_at);

        // Identical content with a stale expectation is still a conflict.
        let stale_same = store
            .save_revision(
                draft("v2")
                    .expect(Some(&r1.revision.revision_id))
                    .to_save(&ws, "cas", &who),
            )
            .await;
        conflict(stale_same);
    }

    pub async fn components_are_content_addressed(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let binary: Vec<u8> = (0..=255u8).chain([0xff, 0xfe, 0x00, 0xc3, 0x28]).collect();
        let shared = b"print('shared')\n".to_vec();
        let r1 = save(
            &store,
            &alice,
            "bundle",
            draft("uses files").components(vec![
                component("scripts/run.py", ComponentType::Script, &shared),
                component("assets/logo.bin", ComponentType::Artifact, &binary),
                component(
                    "references/Guide.md",
                    ComponentType::Reference,
                    "é ✓ 漢字".as_bytes(),
                ),
            ]),
        )
        .await;
        let paths: Vec<&str> = r1
            .revision
            .components
            .iter()
            .map(|c| c.logical_path.as_str())
            .collect();
        assert_eq!(
            paths,
            ["assets/logo.bin", "references/Guide.md", "scripts/run.py"]
        );
        assert_eq!(store.table_counts().await.unwrap()["blobs"], 3);

        let r2 = save(
            &store,
            &alice,
            "bundle",
            draft("uses files, v2").components(vec![
                component("scripts/run.py", ComponentType::Script, &shared),
                component("scripts/copy.py", ComponentType::Script, &shared),
                component("templates/t.txt", ComponentType::Template, b"new"),
            ]),
        )
        .await;
        let counts = store.table_counts().await.unwrap();
        assert_eq!(counts["blobs"], 4, "shared bytes are stored once");
        assert_eq!(counts["revision_components"], 6);

        // Another skill and another account reuse the same blob.
        let bob = account(&store, "bob").await;
        save(
            &store,
            &bob,
            "bobs",
            draft("b").components(vec![component(
                "assets/logo.bin",
                ComponentType::Artifact,
                &binary,
            )]),
        )
        .await;
        assert_eq!(store.table_counts().await.unwrap()["blobs"], 4);

        let (manifest, bytes) = store
            .component_bytes(&r1.revision.revision_id, "assets/logo.bin")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(bytes, binary);
        assert_eq!(manifest.size, binary.len() as u64);
        assert_eq!(manifest.content_hash, xmemo_core::content_hash(&binary));
        assert_eq!(manifest.media_type, "application/octet-stream");
        assert_eq!(manifest.component_type, ComponentType::Artifact);
        let (_, text) = store
            .component_bytes(&r1.revision.revision_id, "references/Guide.md")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text, "é ✓ 漢字".as_bytes());
        let (_, copy) = store
            .component_bytes(&r2.revision.revision_id, "scripts/copy.py")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(copy, shared);
        // Pinned reads: a path of another revision is not part of this one.
        assert!(
            store
                .component_bytes(&r2.revision.revision_id, "assets/logo.bin")
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .component_bytes(&r1.revision.revision_id, "references/guide.md")
                .await
                .unwrap()
                .is_none(),
            "paths are matched exactly"
        );

        let revisions = store.list_revisions(&r1.skill.skill_id).await.unwrap();
        assert_eq!(revisions.len(), 2);
        assert_eq!(revisions[0].components, r1.revision.components);
        assert_eq!(revisions[1].components, r2.revision.components);
        let paths2: Vec<&str> = revisions[1]
            .components
            .iter()
            .map(|c| c.logical_path.as_str())
            .collect();
        assert_eq!(
            paths2,
            ["scripts/copy.py", "scripts/run.py", "templates/t.txt"]
        );
    }

    pub async fn concurrent_saves_are_gap_free(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let mut tasks = Vec::new();
        for i in 0..32 {
            let node = db.node(i);
            let save = draft(&format!("body {i}"))
                .components(vec![component(
                    "references/shared.md",
                    ComponentType::Reference,
                    b"same bytes everywhere",
                )])
                .to_save(
                    &alice.personal_workspace_id,
                    "hot",
                    &actor(&alice.account_id),
                );
            tasks.push(tokio::spawn(async move { node.save_revision(save).await }));
        }
        let mut numbers = Vec::new();
        for t in tasks {
            let outcome = t.await.unwrap().unwrap();
            assert!(outcome.created);
            numbers.push(outcome.revision.revision_number);
        }
        numbers.sort_unstable();
        assert_eq!(numbers, (1..=32).collect::<Vec<i64>>());
        let skills = store
            .find_skills_by_slug(std::slice::from_ref(&alice.personal_workspace_id), "hot")
            .await
            .unwrap();
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].latest_revision_number, 32);
        let revisions = store.list_revisions(&skills[0].skill_id).await.unwrap();
        let listed: Vec<i64> = revisions.iter().map(|r| r.revision_number).collect();
        assert_eq!(listed, (1..=32).collect::<Vec<i64>>());
        let counts = store.table_counts().await.unwrap();
        assert_eq!(counts["skills"], 1);
        assert_eq!(counts["blobs"], 1);
        assert_eq!(counts["revision_components"], 32);
    }

    pub async fn concurrent_saves_of_many_new_slugs(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        // Identical content saved concurrently: one revision per slug, the rest deduplicated.
        let mut tasks = Vec::new();
        for i in 0..24 {
            let node = db.node(i);
            let slug = format!("s{}", i % 4);
            let save = draft("identical").to_save(
                &alice.personal_workspace_id,
                &slug,
                &actor(&alice.account_id),
            );
            tasks.push(tokio::spawn(async move { node.save_revision(save).await }));
        }
        let mut created = 0;
        for t in tasks {
            let outcome = t.await.unwrap().unwrap();
            assert_eq!(outcome.revision.revision_number, 1);
            created += usize::from(outcome.created);
        }
        assert_eq!(created, 4);
        let counts = store.table_counts().await.unwrap();
        assert_eq!(counts["skills"], 4);
        assert_eq!(counts["revisions"], 4);
    }

    /// Concurrent saves share write transactions (group commit), yet each is answered with its
    /// own outcome: new skills are created, a stale `expected_revision_id` conflicts, of two
    /// saves expecting the same revision exactly one wins, and a save that fails inside the
    /// database half-way (two components with one path) leaves nothing behind — while the
    /// saves batched with it are all kept.
    pub async fn group_commit_answers_each_save_its_own_result(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let base = save(&store, &alice, "base", draft("base v1")).await;
        let r1 = base.revision.revision_id.clone();
        let before = store.save_transactions();
        let audit_before = store
            .list_audit(&AuditFilter::default())
            .await
            .unwrap()
            .len();

        enum Expect {
            Created(String),
            Stale,
            RaceOnR1,
            Broken(String),
        }
        let mut tasks = Vec::new();
        for i in 0..28 {
            let (save, expect) = match i {
                3 => (
                    draft("stale")
                        .expect(Some("rev_not_the_latest"))
                        .to_save(&ws, "base", &who),
                    Expect::Stale,
                ),
                7 | 19 => (
                    draft(&format!("base v2 from {i}"))
                        .expect(Some(&r1))
                        .to_save(&ws, "base", &who),
                    Expect::RaceOnR1,
                ),
                11 => (
                    draft("broken")
                        .components(vec![
                            component("scripts/a.sh", ComponentType::Script, b"one"),
                            component("scripts/a.sh", ComponentType::Script, b"two"),
                        ])
                        .to_save(&ws, "broken-one", &who),
                    Expect::Broken("broken-one".into()),
                ),
                _ => {
                    let slug = format!("group-{i}");
                    (
                        draft(&format!("body {i}")).to_save(&ws, &slug, &who),
                        Expect::Created(slug),
                    )
                }
            };
            let node = store.clone();
            tasks.push((
                expect,
                tokio::spawn(async move { node.save_revision(save).await }),
            ));
        }
        let mut created = 0;
        let mut race_won = Vec::new();
        for (expect, task) in tasks {
            let result = task.await.unwrap();
            match expect {
                Expect::Created(slug) => {
                    let outcome = result.unwrap_or_else(|e| panic!("{slug}: {e}"));
                    assert!(outcome.created);
                    assert_eq!(outcome.skill.slug, slug);
                    assert_eq!(outcome.revision.revision_number, 1);
                    let stored = store
                        .get_revision(&outcome.revision.revision_id)
                        .await
                        .unwrap()
                        .expect("an acknowledged save is readable");
                    assert_eq!(stored.instruction_body, outcome.revision.instruction_body);
                    created += 1;
                }
                Expect::Stale => {
                    conflict(result);
                }
                Expect::RaceOnR1 => match result {
                    Ok(outcome) => {
                        assert_eq!(outcome.revision.revision_number, 2);
                        race_won.push(outcome.revision.revision_id);
                    }
                    Err(StoreError::Conflict(_)) => {}
                    Err(e) => panic!("expected a win or a conflict, got {e}"),
                },
                Expect::Broken(slug) => {
                    assert!(result.is_err(), "two components with one path must fail");
                    let found = store
                        .find_skills_by_slug(std::slice::from_ref(&ws), &slug)
                        .await
                        .unwrap();
                    assert!(found.is_empty(), "a failed save leaves no skill behind");
                }
            }
        }
        assert_eq!(created, 24);
        assert_eq!(race_won.len(), 1, "exactly one save expecting r1 wins");
        let latest = store
            .latest_revision(&base.skill.skill_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(latest.revision_id, race_won[0]);
        let transactions = store.save_transactions() - before;
        assert!(
            transactions < 28,
            "28 concurrent saves should share commits, took {transactions} transactions"
        );
        // One audit entry per written save, and the chain still verifies.
        let audit = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(audit.len() - audit_before, 25);
        assert_eq!(verify_audit_chain(&audit), Ok(()));
        let counts = store.table_counts().await.unwrap();
        assert_eq!(counts["skills"], 25);
        assert_eq!(counts["revisions"], 26);
    }

    /// Saves that queue while a batch waits for the writer all go into the next transaction —
    /// one commit for all of them, not one each — and each is still answered with its own
    /// outcome. The writer is held from outside, so which save waits where is not left to
    /// timing: the first save's batch is stuck until the seven others are queued.
    pub async fn saves_queued_behind_a_busy_writer_share_one_commit(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let base = save(&store, &alice, "base", draft("base v1")).await;
        let audit_before = store
            .list_audit(&AuditFilter::default())
            .await
            .unwrap()
            .len();
        let before = store.save_transactions();

        let held = db.hold_writer().await;
        let first = {
            let node = store.clone();
            let save = draft("first").to_save(&ws, "first", &who);
            tokio::spawn(async move { node.save_revision(save).await })
        };
        until("the first save's batch to start", || {
            store.save_transactions() == before + 1 && store.queued_saves() == 0
        })
        .await;
        let mut queued = Vec::new();
        for i in 0..7 {
            let save = match i {
                2 => draft("stale")
                    .expect(Some("rev_not_the_latest"))
                    .to_save(&ws, "base", &who),
                4 => draft("broken")
                    .components(vec![
                        component("scripts/a.sh", ComponentType::Script, b"one"),
                        component("scripts/a.sh", ComponentType::Script, b"two"),
                    ])
                    .to_save(&ws, "broken", &who),
                5 => draft("base v2")
                    .expect(Some(&base.revision.revision_id))
                    .to_save(&ws, "base", &who),
                // One new skill published twice in the batch: its Level 0 row is written
                // once, from the second.
                0 | 6 => draft(&format!("twice {i}"))
                    .named(&format!("Zebrafinch {i}"), "Published twice in one batch")
                    .status(RevisionStatus::Published)
                    .to_save(&ws, "twice", &who),
                _ => draft(&format!("queued {i}")).to_save(&ws, &format!("queued-{i}"), &who),
            };
            let node = store.clone();
            queued.push((
                i,
                tokio::spawn(async move { node.save_revision(save).await }),
            ));
        }
        until("seven saves to queue", || store.queued_saves() == 7).await;
        assert_eq!(
            store.save_transactions(),
            before + 1,
            "nothing starts while the writer is held"
        );
        held.release().await;

        let first = first.await.unwrap().unwrap();
        assert!(first.created);
        for (i, task) in queued {
            let result = task.await.unwrap();
            match i {
                2 => {
                    conflict(result);
                }
                4 => assert!(result.is_err(), "two components with one path must fail"),
                5 => {
                    let outcome = result.unwrap();
                    assert!(outcome.created);
                    assert_eq!(outcome.revision.revision_number, 2);
                }
                0 | 6 => {
                    let outcome = result.unwrap();
                    assert!(outcome.created);
                    assert_eq!(outcome.skill.slug, "twice");
                }
                _ => {
                    let outcome = result.unwrap();
                    assert!(outcome.created);
                    assert_eq!(outcome.skill.slug, format!("queued-{i}"));
                    let stored = store
                        .get_revision(&outcome.revision.revision_id)
                        .await
                        .unwrap()
                        .expect("an acknowledged save is readable");
                    assert_eq!(stored.instruction_body, format!("queued {i}"));
                }
            }
        }
        assert_eq!(
            store.save_transactions() - before,
            2,
            "the seven queued saves share one transaction"
        );
        let found = store
            .find_skills_by_slug(std::slice::from_ref(&ws), "broken")
            .await
            .unwrap();
        assert!(found.is_empty(), "the failed save rolled back alone");
        let twice = store
            .find_skills_by_slug(std::slice::from_ref(&ws), "twice")
            .await
            .unwrap();
        assert_eq!(twice.len(), 1);
        assert_eq!(twice[0].latest_revision_number, 2);
        let hits = search(&store, "zebrafinch", &[&ws]).await;
        assert_eq!(slugs(&hits), ["twice"], "one Level 0 row");
        let published = store
            .published_revision(&twice[0].skill_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(hits[0].name, published.name, "from the published revision");
        let audit = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(
            audit.len() - audit_before,
            6,
            "the first, two new, twice twice, base v2"
        );
        assert_eq!(verify_audit_chain(&audit), Ok(()));
    }

    /// A batch whose saves all go through writes its Level 0 rows once, after the last save:
    /// a skill created and published twice in it gets one row, from its final published
    /// revision, and an existing skill's row is replaced.
    pub async fn a_batch_publishing_one_skill_twice_indexes_it_once(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let old = save(
            &store,
            &alice,
            "old",
            draft("old v1")
                .named("Wombat old", "Before the batch")
                .status(RevisionStatus::Published),
        )
        .await;
        let before = store.save_transactions();
        let held = db.hold_writer().await;
        let first = {
            let node = store.clone();
            let save = draft("first").to_save(&ws, "first", &who);
            tokio::spawn(async move { node.save_revision(save).await })
        };
        until("the first save's batch to start", || {
            store.save_transactions() == before + 1 && store.queued_saves() == 0
        })
        .await;
        let saves = [
            ("twice", "Zebrafinch one"),
            ("twice", "Zebrafinch two"),
            ("old", "Wombat new"),
        ];
        let mut queued = Vec::new();
        for (slug, name) in saves {
            let save = draft(name)
                .named(name, "Published in one batch")
                .status(RevisionStatus::Published)
                .to_save(&ws, slug, &who);
            let node = store.clone();
            queued.push(tokio::spawn(async move { node.save_revision(save).await }));
        }
        until("three saves to queue", || store.queued_saves() == 3).await;
        held.release().await;
        assert!(first.await.unwrap().unwrap().created);
        for task in queued {
            assert!(task.await.unwrap().unwrap().created);
        }
        assert_eq!(store.save_transactions() - before, 2);
        let hits = search(&store, "zebrafinch", &[&ws]).await;
        assert_eq!(slugs(&hits), ["twice"]);
        // The two were queued in no set order: the row is the one published last.
        let published = store
            .published_revision(&hits[0].skill_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(published.revision_number, 2);
        assert_eq!(hits[0].name, published.name);
        let hits = search(&store, "wombat", &[&ws]).await;
        assert_eq!(slugs(&hits), ["old"]);
        assert_eq!(hits[0].name, "Wombat new");
        assert_eq!(hits[0].skill_id, old.skill.skill_id);
        let counts = store.table_counts().await.unwrap();
        assert_eq!(counts["level0"], 2, "one Level 0 row a published skill");
    }

    /// Eight clients saving one after another (each waits for its answer, then saves again),
    /// as the benchmark's clients do, share commits all along, not only in a first burst.
    /// While a batch runs, every client it does not hold has queued (a client answered by the
    /// previous batch needs only to be woken to queue again), so two batches in a row hold
    /// about eight saves between them: at least two a transaction on average, far more in
    /// practice. A save that must wait its turn at a lock after it was answered (the first
    /// design) made every batch after the first hold one save.
    pub async fn clients_saving_in_a_loop_share_commits(db: &TestDb) {
        const CLIENTS: usize = 8;
        const ROUNDS: usize = 20;
        let store = db.store();
        let alice = account(&store, "alice").await;
        let before = store.save_transactions();
        let mut clients = Vec::new();
        for c in 0..CLIENTS {
            let node = store.clone();
            let ws = alice.personal_workspace_id.clone();
            let who = actor(&alice.account_id);
            clients.push(tokio::spawn(async move {
                for r in 0..ROUNDS {
                    let slug = format!("loop-{c}-{r}");
                    let save = draft(&slug).to_save(&ws, &slug, &who);
                    let outcome = node.save_revision(save).await.unwrap();
                    assert!(outcome.created);
                    assert_eq!(outcome.skill.slug, slug);
                }
            }));
        }
        for client in clients {
            client.await.unwrap();
        }
        let saves = (CLIENTS * ROUNDS) as u64;
        let transactions = store.save_transactions() - before;
        assert!(
            transactions <= saves / 2,
            "{saves} saves by {CLIENTS} looping clients took {transactions} transactions"
        );
        let counts = store.table_counts().await.unwrap();
        assert_eq!(counts["skills"], saves);
        let audit = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(verify_audit_chain(&audit), Ok(()));
    }

    /// What a save answers about its skill is what a read of the skill returns afterwards:
    /// a new skill, a draft on a skill with a published revision (which stays published) and
    /// a publish (which replaces it).
    pub async fn a_save_answers_the_skill_as_stored(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let stored = |id: String| {
            let store = store.clone();
            async move { store.get_skill(&id).await.unwrap().unwrap() }
        };
        let created = save(
            &store,
            &alice,
            "kept",
            draft("v1").status(RevisionStatus::Published),
        )
        .await;
        assert_eq!(created.skill, stored(created.skill.skill_id.clone()).await);
        assert_eq!(
            created.skill.published_revision_id.as_deref(),
            Some(created.revision.revision_id.as_str())
        );
        let drafted = save(
            &store,
            &alice,
            "kept",
            draft("v2").named("Renamed", "New words"),
        )
        .await;
        assert_eq!(drafted.skill, stored(drafted.skill.skill_id.clone()).await);
        assert_eq!(drafted.skill.latest_revision_number, 2);
        assert_eq!(drafted.skill.name, "Renamed");
        assert_eq!(
            drafted.skill.published_revision_id,
            created.skill.published_revision_id
        );
        let published = save(
            &store,
            &alice,
            "kept",
            draft("v3").status(RevisionStatus::Published),
        )
        .await;
        assert_eq!(
            published.skill,
            stored(published.skill.skill_id.clone()).await
        );
        assert_eq!(
            published.skill.published_revision_id.as_deref(),
            Some(published.revision.revision_id.as_str())
        );
        let unchanged = save(
            &store,
            &alice,
            "kept",
            draft("v3").status(RevisionStatus::Published),
        )
        .await;
        assert!(!unchanged.created);
        assert_eq!(unchanged.skill, published.skill);
    }

    pub async fn publish_deprecates_previous_and_status_is_compare_and_set(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let r1 = save(&store, &alice, "pub", draft("v1")).await;
        let published = store
            .change_revision_status(status_change(
                &r1.revision.revision_id,
                RevisionStatus::Draft,
                RevisionStatus::Published,
                &alice,
            ))
            .await
            .unwrap();
        assert_eq!(published.status, RevisionStatus::Published);
        let skill = store.get_skill(&r1.skill.skill_id).await.unwrap().unwrap();
        assert_eq!(
            skill.published_revision_id.as_deref(),
            Some(r1.revision.revision_id.as_str())
        );

        // Saving a published revision deprecates the previous one.
        let r2 = save(
            &store,
            &alice,
            "pub",
            draft("v2").status(RevisionStatus::Published),
        )
        .await;
        assert_eq!(r2.revision.status, RevisionStatus::Published);
        assert_eq!(
            r2.skill.published_revision_id.as_deref(),
            Some(r2.revision.revision_id.as_str())
        );
        let old = store
            .get_revision(&r1.revision.revision_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(old.status, RevisionStatus::Deprecated);
        assert_eq!(
            store
                .published_revision(&r1.skill.skill_id)
                .await
                .unwrap()
                .unwrap()
                .revision_id,
            r2.revision.revision_id
        );

        // Compare-and-set: the revision is no longer a draft.
        let before = store.table_counts().await.unwrap();
        let stale = store
            .change_revision_status(status_change(
                &r1.revision.revision_id,
                RevisionStatus::Draft,
                RevisionStatus::Published,
                &alice,
            ))
            .await;
        conflict(stale);
        let unknown = store
            .change_revision_status(status_change(
                "rev_missing",
                RevisionStatus::Draft,
                RevisionStatus::Published,
                &alice,
            ))
            .await;
        assert!(matches!(
            unknown,
            Err(StoreError::Conflict(_) | StoreError::NotFound(_))
        ));
        assert_eq!(store.table_counts().await.unwrap(), before);
        assert_eq!(
            store
                .get_revision(&r2.revision.revision_id)
                .await
                .unwrap()
                .unwrap()
                .status,
            RevisionStatus::Published
        );

        // Re-publishing a deprecated revision deprecates the current one.
        store
            .change_revision_status(status_change(
                &r1.revision.revision_id,
                RevisionStatus::Deprecated,
                RevisionStatus::Published,
                &alice,
            ))
            .await
            .unwrap();
        let revisions = store.list_revisions(&r1.skill.skill_id).await.unwrap();
        let statuses: Vec<RevisionStatus> = revisions.iter().map(|r| r.status).collect();
        assert_eq!(
            statuses,
            [RevisionStatus::Published, RevisionStatus::Deprecated]
        );

        // Propose, then reject with a note (back to draft).
        let r3 = save(
            &store,
            &alice,
            "pub",
            draft("v3").status(RevisionStatus::Proposed),
        )
        .await;
        let mut reject = status_change(
            &r3.revision.revision_id,
            RevisionStatus::Proposed,
            RevisionStatus::Draft,
            &alice,
        );
        reject.review_note = Some("needs a rollback section".into());
        let rejected = store.change_revision_status(reject).await.unwrap();
        assert_eq!(rejected.status, RevisionStatus::Draft);
        assert_eq!(
            rejected.review_note.as_deref(),
            Some("needs a rollback section")
        );
        // A later change without a note keeps it.
        let proposed = store
            .change_revision_status(status_change(
                &r3.revision.revision_id,
                RevisionStatus::Draft,
                RevisionStatus::Proposed,
                &alice,
            ))
            .await
            .unwrap();
        assert_eq!(
            proposed.review_note.as_deref(),
            Some("needs a rollback section")
        );
        assert_eq!(
            published_count(&store.list_revisions(&r1.skill.skill_id).await.unwrap()),
            1
        );
    }

    pub async fn concurrent_publishes_leave_one_published(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let mut revisions = Vec::new();
        for i in 0..8 {
            revisions.push(save(&store, &alice, "race", draft(&format!("v{i}"))).await);
        }
        let skill_id = revisions[0].skill.skill_id.clone();
        let mut tasks = Vec::new();
        for (i, r) in revisions.iter().enumerate() {
            let node = db.node(i);
            let change = status_change(
                &r.revision.revision_id,
                RevisionStatus::Draft,
                RevisionStatus::Published,
                &alice,
            );
            tasks.push(tokio::spawn(async move {
                node.change_revision_status(change).await
            }));
        }
        // A concurrent save that also publishes.
        let node = db.node(1);
        let publish_save = draft("published by save")
            .status(RevisionStatus::Published)
            .to_save(
                &alice.personal_workspace_id,
                "race",
                &actor(&alice.account_id),
            );
        let save_task = tokio::spawn(async move { node.save_revision(publish_save).await });
        let mut ok = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(r) => {
                    assert_eq!(r.status, RevisionStatus::Published);
                    ok += 1;
                }
                Err(StoreError::Conflict(_)) => {}
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        assert!(ok >= 1);
        save_task.await.unwrap().unwrap();
        let all = store.list_revisions(&skill_id).await.unwrap();
        assert_eq!(all.len(), 9);
        assert_eq!(published_count(&all), 1);
        let deprecated = all
            .iter()
            .filter(|r| r.status == RevisionStatus::Deprecated)
            .count();
        assert_eq!(
            deprecated, ok,
            "every publish but the last one was deprecated"
        );
        let skill = store.get_skill(&skill_id).await.unwrap().unwrap();
        let published = store.published_revision(&skill_id).await.unwrap().unwrap();
        assert_eq!(skill.published_revision_id, Some(published.revision_id));
        assert_eq!(store.table_counts().await.unwrap()["level0"], 1);
    }

    pub async fn database_enforces_one_published_revision(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let r1 = save(
            &store,
            &alice,
            "one",
            draft("v1").status(RevisionStatus::Published),
        )
        .await;
        let r2 = save(&store, &alice, "one", draft("v2")).await;
        let result = db
            .raw_execute(&format!(
                "UPDATE revisions SET status = 'published' WHERE revision_id = '{}'",
                r2.revision.revision_id
            ))
            .await;
        assert!(
            result.is_err(),
            "the database accepted a second published revision"
        );
        assert_eq!(
            store
                .published_revision(&r1.skill.skill_id)
                .await
                .unwrap()
                .unwrap()
                .revision_id,
            r1.revision.revision_id
        );
    }

    /// Each node ranks with its own in-memory index: a write on one node (a publish, an
    /// archive, a memory, an account deletion) is found, or gone, in the very next query on
    /// another.
    pub async fn search_sees_every_nodes_writes_at_once(db: &TestDb) {
        let a = db.store();
        let b = db.other_node().await;
        let alice = account(&a, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        // Both indexes are built before the writes.
        assert!(search(&a, "zqfresh", &[&ws]).await.is_empty());
        assert!(search(&b, "zqfresh", &[&ws]).await.is_empty());
        let r = save(
            &a,
            &alice,
            "fresh-one",
            draft("x")
                .named("Zqfresh one", "About the new thing")
                .status(RevisionStatus::Published),
        )
        .await;
        assert_eq!(slugs(&search(&b, "zqfresh", &[&ws]).await), ["fresh-one"]);
        // A new published revision replaces the row: its words, not the old ones.
        save(
            &b,
            &alice,
            "fresh-one",
            draft("y")
                .named("Zqrenamed one", "About the new thing")
                .status(RevisionStatus::Published),
        )
        .await;
        assert!(search(&a, "zqfresh", &[&ws]).await.is_empty());
        assert_eq!(slugs(&search(&a, "zqrenamed", &[&ws]).await), ["fresh-one"]);
        b.set_asset_status(
            &r.skill.skill_id,
            AssetStatus::Archived,
            AuditDraft::new("skill.archive", &who).skill(&r.skill.skill_id),
        )
        .await
        .unwrap();
        assert!(search(&a, "zqrenamed", &[&ws]).await.is_empty());
        a.set_asset_status(
            &r.skill.skill_id,
            AssetStatus::Active,
            AuditDraft::new("skill.restore", &who).skill(&r.skill.skill_id),
        )
        .await
        .unwrap();
        assert_eq!(slugs(&search(&b, "zqrenamed", &[&ws]).await), ["fresh-one"]);
        // Memories: remembered on one node, recalled on the other.
        let m = remember(
            &b,
            new_memory(
                &ws,
                &who,
                memory_content(xmemo_core::MemoryKind::Fact, "zqmemory lives here"),
            ),
        )
        .await
        .memory;
        let mut q = memory_query(&[&ws]);
        q.text = Some("zqmemory".into());
        let found = a.recall_memories(&q).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].memory.memory_id, m.memory_id);
        // The account goes, and with it everything either node could find.
        a.delete_account(&alice.account_id, AuditDraft::new("account.delete", &who))
            .await
            .unwrap();
        assert!(search(&b, "zqrenamed", &[&ws]).await.is_empty());
        assert!(b.recall_memories(&q).await.unwrap().is_empty());
    }

    pub async fn archive_leaves_search_and_restore_returns(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let r = save(
            &store,
            &alice,
            "incident-response",
            draft("page the on-call")
                .named("Incident response", "What to do when production burns")
                .status(RevisionStatus::Published),
        )
        .await;
        assert_eq!(
            slugs(&search(&store, "incident", &[&ws]).await),
            ["incident-response"]
        );

        let archived = store
            .set_asset_status(
                &r.skill.skill_id,
                AssetStatus::Archived,
                AuditDraft::new("skill.archive", &who).skill(&r.skill.skill_id),
            )
            .await
            .unwrap();
        assert_eq!(archived.asset_status, AssetStatus::Archived);
        assert!(search(&store, "incident", &[&ws]).await.is_empty());
        assert_eq!(store.table_counts().await.unwrap()["level0"], 0);
        // Pinned reads of an archived skill keep working.
        assert!(
            store
                .get_revision(&r.revision.revision_id)
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(
            store
                .get_skill(&r.skill.skill_id)
                .await
                .unwrap()
                .unwrap()
                .asset_status,
            AssetStatus::Archived
        );
        // Publishing while archived does not bring it back into search.
        let r2 = save(&store, &alice, "incident-response", draft("page twice")).await;
        store
            .change_revision_status(status_change(
                &r2.revision.revision_id,
                RevisionStatus::Draft,
                RevisionStatus::Published,
                &alice,
            ))
            .await
            .unwrap();
        assert!(search(&store, "incident", &[&ws]).await.is_empty());

        let restored = store
            .set_asset_status(
                &r.skill.skill_id,
                AssetStatus::Active,
                AuditDraft::new("skill.restore", &who).skill(&r.skill.skill_id),
            )
            .await
            .unwrap();
        assert_eq!(restored.asset_status, AssetStatus::Active);
        assert_eq!(
            slugs(&search(&store, "incident", &[&ws]).await),
            ["incident-response"]
        );

        let missing = store
            .set_asset_status(
                "skill_missing",
                AssetStatus::Archived,
                AuditDraft::new("skill.archive", &who),
            )
            .await;
        assert!(
            matches!(missing, Err(StoreError::NotFound(_))),
            "{missing:?}"
        );
    }

    /// A query's words identify a skill whose description holds them all, even where other
    /// skills name one of the words in their slug and name (which weigh more).
    pub async fn search_puts_skills_holding_every_word_first(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let publish = RevisionStatus::Published;
        for i in 0..4 {
            save(
                &store,
                &alice,
                &format!("zqfirst-guide-{i}"),
                draft("x")
                    .named(&format!("Zqfirst guide {i}"), "Zqfirst in short")
                    .status(publish),
            )
            .await;
        }
        save(
            &store,
            &alice,
            "zqsecond-notes",
            draft("x")
                .named("Zqsecond notes", "Zqsecond only")
                .status(publish),
        )
        .await;
        save(
            &store,
            &alice,
            "handbook",
            draft("x")
                .named(
                    "Handbook",
                    "A long description where zqfirst meets zqsecond among many other words",
                )
                .status(publish),
        )
        .await;
        for query in ["zqfirst zqsecond", "zqsecond zqfirst"] {
            let hits = search(&store, query, &[&ws]).await;
            assert_eq!(
                slugs(&hits).first().copied(),
                Some("handbook"),
                "{query}: {:?}",
                slugs(&hits)
            );
            assert_eq!(
                hits.len(),
                6,
                "{query}: every skill naming a word is still found"
            );
        }
    }

    /// Words held by a few hundred skills each: the skills naming the word still come first,
    /// and a skill holding both words before them.
    pub async fn search_of_words_many_skills_hold(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let publish = RevisionStatus::Published;
        let many = 220;
        for (word, prefix) in [("zqwide", "w"), ("zqother", "o")] {
            for i in 0..many {
                let description = format!("About {word} and item {i}");
                save(
                    &store,
                    &alice,
                    &format!("{prefix}-{i}"),
                    draft("x")
                        .named(&format!("Plain {i}"), &description)
                        .status(publish),
                )
                .await;
            }
        }
        for k in 0..3 {
            save(
                &store,
                &alice,
                &format!("named-{k}"),
                draft("x")
                    .named(&format!("Zqwide named {k}"), "Short")
                    .status(publish),
            )
            .await;
        }
        save(
            &store,
            &alice,
            "both",
            draft("x")
                .named("Handbook", "Where zqwide meets zqother")
                .status(publish),
        )
        .await;
        let hits = search(&store, "zqwide", &[&ws]).await;
        let mut top: Vec<&str> = slugs(&hits).into_iter().take(3).collect();
        top.sort_unstable();
        assert_eq!(top, ["named-0", "named-1", "named-2"], "{:?}", slugs(&hits));
        assert_eq!(hits.len(), 10, "a full page of matches");
        let hits = search(&store, "zqwide zqother", &[&ws]).await;
        assert_eq!(
            slugs(&hits).first().copied(),
            Some("both"),
            "{:?}",
            slugs(&hits)
        );
        assert_eq!(hits.len(), 10);
    }

    pub async fn search_rules(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let a = alice.personal_workspace_id.clone();
        let b = bob.personal_workspace_id.clone();
        let publish = RevisionStatus::Published;
        save(
            &store,
            &alice,
            "deploy",
            draft("x").named("Deploy", "Ship the build").status(publish),
        )
        .await;
        save(
            &store,
            &alice,
            "deploy-canary",
            draft("x")
                .named(
                    "Canary deployment",
                    "Deploy to a small slice first, then deploy everywhere",
                )
                .status(publish),
        )
        .await;
        save(
            &store,
            &alice,
            "rollback",
            draft("x")
                .named("Rollback", "Undo a bad deploy")
                .status(publish),
        )
        .await;
        save(
            &store,
            &alice,
            "deploy-draft",
            draft("x").named("Deploy draft", "Never published"),
        )
        .await;
        save(
            &store,
            &bob,
            "deploy",
            draft("x").named("Deploy", "Bob's deploy").status(publish),
        )
        .await;

        // Only published + active skills of the given workspaces; exact slug first.
        let hits = search(&store, "deploy", &[&a]).await;
        assert_eq!(hits[0].slug, "deploy");
        assert!(hits[0].score == 1.0, "{hits:?}");
        assert!(hits[1..].iter().all(|h| h.score < 1.0), "{hits:?}");
        let mut found = slugs(&hits);
        found.sort_unstable();
        assert_eq!(found, ["deploy", "deploy-canary", "rollback"]);
        assert!(hits.iter().all(|h| h.workspace_id == a));
        assert_eq!(hits[0].name, "Deploy");
        assert_eq!(hits[0].description, "Ship the build");

        let both = search(&store, "deploy", &[&a, &b]).await;
        assert_eq!(both.len(), 4);
        assert!(
            both[..2]
                .iter()
                .all(|h| h.slug == "deploy" && h.score == 1.0)
        );
        assert!(search(&store, "deploy", &[]).await.is_empty());
        assert!(search(&store, "deploy", &["ws_unknown"]).await.is_empty());

        // Exact name match is lifted too.
        let hits = search(&store, "canary deployment", &[&a]).await;
        assert_eq!(hits[0].slug, "deploy-canary");
        assert!(hits[0].score == 1.0);
        // …the published name only: a draft's name finds nothing exact.
        let hits = search(&store, "deploy draft", &[&a]).await;
        assert!(!slugs(&hits).contains(&"deploy-draft"), "{hits:?}");
        assert!(hits.iter().all(|h| h.score < 1.0), "{hits:?}");

        // Prefix on the last term only; any term may match.
        assert_eq!(slugs(&search(&store, "rollb", &[&a]).await), ["rollback"]);
        assert_eq!(
            slugs(&search(&store, "canar", &[&a]).await),
            ["deploy-canary"]
        );
        assert!(
            search(&store, "rollb canary", &[&a])
                .await
                .iter()
                .all(|h| h.slug != "rollback")
        );
        let either_hits = search(&store, "canary rollback", &[&a]).await;
        let mut either = slugs(&either_hits);
        either.sort_unstable();
        assert_eq!(either, ["deploy-canary", "rollback"]);
        assert!(search(&store, "zzz", &[&a]).await.is_empty());
        assert!(search(&store, "", &[&a]).await.is_empty());

        // Slug words are searchable separately.
        assert_eq!(
            slugs(&search(&store, "canary", &[&a]).await),
            ["deploy-canary"]
        );
        // Slug and name weigh more than the description.
        save(
            &store,
            &alice,
            "release-notes",
            draft("x")
                .named("Release notes", "Mention the canary results")
                .status(publish),
        )
        .await;
        let hits = search(&store, "canary", &[&a]).await;
        assert_eq!(slugs(&hits), ["deploy-canary", "release-notes"]);
        assert!(
            hits[0].score > hits[1].score && hits[1].score > 0.0,
            "{hits:?}"
        );

        // Limit.
        let limited = store
            .search(&SearchQuery {
                text: "deploy".into(),
                workspace_ids: vec![a.clone(), b.clone()],
                limit: 2,
                semantic: None,
                include_malicious: false,
            })
            .await
            .unwrap();
        assert_eq!(limited.len(), 2);

        // The index carries the published revision, not later drafts.
        save(
            &store,
            &alice,
            "rollback",
            draft("y").named("Revert everything", "A draft that renames it"),
        )
        .await;
        assert!(search(&store, "revert", &[&a]).await.is_empty());
        let hit = &search(&store, "rollback", &[&a]).await[0];
        assert_eq!(hit.name, "Rollback");
        // The descriptor never carries instruction bodies.
        let as_json = serde_json::to_value(hit).unwrap();
        assert!(as_json.get("instruction_body").is_none());
    }

    pub async fn search_survives_query_syntax(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let a = alice.personal_workspace_id.clone();
        save(
            &store,
            &alice,
            "near-or-and",
            draft("x")
                .named("NEAR OR AND NOT", "Words that are operators elsewhere")
                .status(RevisionStatus::Published),
        )
        .await;
        for q in [
            "\"",
            "*",
            "NEAR(",
            "OR",
            "AND",
            "NOT",
            "near(a, b)",
            "a OR b",
            "\"unterminated",
            "'",
            "''",
            ":*",
            "a:*",
            "!",
            "&",
            "|",
            "a & !b",
            "(",
            ")",
            "\\",
            "-",
            "--",
            "^",
            "col:val",
            "{x}",
            "x'; DROP TABLE skills; --",
            "%",
            "_",
            "\0",
            "🚀",
            "Ünïcödé",
            &"long".repeat(600),
        ] {
            let result = store
                .search(&SearchQuery {
                    text: q.to_string(),
                    workspace_ids: vec![a.clone()],
                    limit: 10,
                    semantic: None,
                    include_malicious: false,
                })
                .await;
            assert!(result.is_ok(), "query {q:?} failed: {result:?}");
        }
        let hits = search(&store, "near OR", &[&a]).await;
        assert_eq!(slugs(&hits), ["near-or-and"]);
        // Sixteen words (the most a query keeps), counted in one statement: the one that
        // matches is found wherever it stands.
        for at in [0, 9, 10, 15] {
            let mut words: Vec<String> = (0..16).map(|i| format!("zqnone{i}")).collect();
            words[at] = "operators".into();
            let hits = search(&store, &words.join(" "), &[&a]).await;
            assert_eq!(slugs(&hits), ["near-or-and"], "the word at {at}");
        }
        assert_eq!(store.table_counts().await.unwrap()["skills"], 1);
    }

    pub async fn audit_chain_verifies_and_filters(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let who = actor(&alice.account_id);
        let r1 = save(&store, &alice, "audited", draft("v1")).await;
        save(&store, &alice, "audited", draft("v1")).await; // dedupe: no entry
        let r2 = save(
            &store,
            &alice,
            "audited",
            draft("v2").status(RevisionStatus::Published),
        )
        .await;
        store
            .change_revision_status(status_change(
                &r1.revision.revision_id,
                RevisionStatus::Draft,
                RevisionStatus::Deprecated,
                &alice,
            ))
            .await
            .unwrap();
        store
            .set_asset_status(
                &r1.skill.skill_id,
                AssetStatus::Archived,
                AuditDraft::new("skill.archive", &who)
                    .workspace(&alice.personal_workspace_id)
                    .skill(&r1.skill.skill_id),
            )
            .await
            .unwrap();
        save(&store, &bob, "bobs", draft("b")).await;
        store
            .append_audit(
                AuditDraft::new("execution.finish", &who)
                    .workspace(&alice.personal_workspace_id)
                    .skill(&r1.skill.skill_id)
                    .revision(&r2.revision.revision_id)
                    .details(json!({"status": "success", "duration_ms": 12, "ratio": 0.5, "nested": {"z": 1, "a": [true, null]}})),
            )
            .await
            .unwrap();

        let all = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(
            all.len(),
            8,
            "{:?}",
            all.iter().map(|e| &e.action).collect::<Vec<_>>()
        );
        let seqs: Vec<i64> = all.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=8).collect::<Vec<i64>>());
        assert_eq!(all[0].prev_hash, "");
        assert_eq!(verify_audit_chain(&all), Ok(()));
        let actions: Vec<&str> = all.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(
            actions,
            [
                "account.create",
                "account.create",
                "skill.save",
                "skill.save",
                "revision.deprecated",
                "skill.archive",
                "skill.save",
                "execution.finish"
            ]
        );
        let last = &all[7];
        assert_eq!(last.actor, who);
        assert_eq!(
            last.details,
            json!({"status": "success", "duration_ms": 12, "ratio": 0.5, "nested": {"z": 1, "a": [true, null]}})
        );
        assert_eq!(all[2].details["revision_number"], json!(1));
        assert_eq!(all[2].details["slug"], json!("audited"));

        // A tampered entry breaks the chain.
        let mut tampered = all.clone();
        tampered[3].details = json!({"forged": true});
        assert_eq!(verify_audit_chain(&tampered), Err(4));

        let by_skill = store
            .list_audit(&AuditFilter {
                skill_id: Some(r1.skill.skill_id.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        // The status change's audit draft names only the revision.
        assert_eq!(by_skill.len(), 4);
        assert!(
            by_skill
                .iter()
                .all(|e| e.skill_id.as_deref() == Some(r1.skill.skill_id.as_str()))
        );

        let by_ws = store
            .list_audit(&AuditFilter {
                workspace_ids: Some(vec![bob.personal_workspace_id.clone()]),
                ..Default::default()
            })
            .await
            .unwrap();
        let bob_actions: Vec<&str> = by_ws.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(bob_actions, ["account.create", "skill.save"]);
        let none = store
            .list_audit(&AuditFilter {
                workspace_ids: Some(vec![]),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(none.is_empty());
        let both = store
            .list_audit(&AuditFilter {
                workspace_ids: Some(vec![
                    alice.personal_workspace_id.clone(),
                    bob.personal_workspace_id.clone(),
                ]),
                skill_id: Some(r1.skill.skill_id.clone()),
                limit: 2,
            })
            .await
            .unwrap();
        assert_eq!(both.len(), 2);
        assert_eq!(both[0].seq, 3);
        let limited = store
            .list_audit(&AuditFilter {
                limit: 3,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(limited, all[..3].to_vec());
    }

    pub async fn concurrent_audit_appends_stay_linear(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let mut tasks = Vec::new();
        for i in 0..40 {
            let node = db.node(i);
            let who = actor(&alice.account_id);
            let ws = alice.personal_workspace_id.clone();
            tasks.push(tokio::spawn(async move {
                if i % 4 == 0 {
                    let save = draft(&format!("v{i}")).to_save(&ws, "busy", &who);
                    node.save_revision(save).await.map(|_| ())
                } else {
                    node.append_audit(
                        AuditDraft::new("execution.finish", &who)
                            .workspace(&ws)
                            .details(json!({"i": i})),
                    )
                    .await
                }
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let all = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(all.len(), 41);
        assert_eq!(verify_audit_chain(&all), Ok(()));
        let seqs: Vec<i64> = all.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=41).collect::<Vec<i64>>());
    }

    pub async fn audit_log_is_append_only(db: &TestDb) {
        let store = db.store();
        account(&store, "alice").await;
        let update = db
            .raw_execute("UPDATE audit_log SET action = 'forged'")
            .await;
        assert!(update.is_err(), "UPDATE of the audit log succeeded");
        let delete = db.raw_execute("DELETE FROM audit_log").await;
        assert!(delete.is_err(), "DELETE from the audit log succeeded");
        let all = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].action, "account.create");
    }

    pub async fn revision_safety_is_stored_hidden_from_search_and_replaced_by_a_rescan(
        db: &TestDb,
    ) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let report = |verdict: &str| {
            serde_json::json!({
                "verdict": verdict,
                "risk": if verdict == "malicious" { "critical" } else { "none" },
                "rules_version": "test.1",
                "findings": [],
            })
        };
        let harmless = save(
            &store,
            &alice,
            "lighthouse-harmless",
            draft("Keep the lighthouse lamp clean")
                .named("Lighthouse keeping", "Lighthouse lamp care")
                .status(RevisionStatus::Published)
                .safety(report("clean")),
        )
        .await;
        let hostile = save(
            &store,
            &alice,
            "lighthouse-hostile",
            draft("Keep the lighthouse lamp burning")
                .named("Lighthouse lamp", "Lighthouse lamp burning")
                .status(RevisionStatus::Published)
                .safety(report("malicious")),
        )
        .await;
        let unscanned = save(
            &store,
            &alice,
            "lighthouse-unscanned",
            draft("Lighthouse logbook")
                .named("Lighthouse logbook", "Lighthouse log")
                .status(RevisionStatus::Published),
        )
        .await;
        let read = store
            .get_revision(&hostile.revision.revision_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.safety, Some(report("malicious")));
        assert_eq!(unscanned.revision.safety, None);

        let slugs = |found: Vec<Descriptor>| {
            let mut v: Vec<(String, Option<String>)> = found
                .into_iter()
                .map(|d| (d.slug, d.safety_verdict))
                .collect();
            v.sort();
            v
        };
        let query = |include_malicious: bool| SearchQuery {
            text: "lighthouse".into(),
            workspace_ids: vec![ws.clone()],
            limit: 10,
            semantic: None,
            include_malicious,
        };
        // Hidden by default; listed with its verdict when asked for. Unscanned is not hidden.
        assert_eq!(
            slugs(store.search(&query(false)).await.unwrap()),
            vec![
                ("lighthouse-harmless".to_string(), Some("clean".to_string())),
                ("lighthouse-unscanned".to_string(), None),
            ]
        );
        assert_eq!(
            slugs(store.search(&query(true)).await.unwrap()),
            vec![
                ("lighthouse-harmless".to_string(), Some("clean".to_string())),
                (
                    "lighthouse-hostile".to_string(),
                    Some("malicious".to_string())
                ),
                ("lighthouse-unscanned".to_string(), None),
            ]
        );

        // A rescan replaces a report; the search follows at once.
        assert!(
            store
                .set_revision_safety(&harmless.revision.revision_id, &report("malicious"))
                .await
                .unwrap()
        );
        assert!(
            store
                .set_revision_safety(&hostile.revision.revision_id, &report("clean"))
                .await
                .unwrap()
        );
        assert!(
            !store
                .set_revision_safety("rev_missing", &report("clean"))
                .await
                .unwrap()
        );
        assert_eq!(
            slugs(store.search(&query(false)).await.unwrap()),
            vec![
                ("lighthouse-hostile".to_string(), Some("clean".to_string())),
                ("lighthouse-unscanned".to_string(), None),
            ]
        );
        let reread = store
            .get_revision(&harmless.revision.revision_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(reread.safety, Some(report("malicious")));

        // Every revision, a page at a time, in id order.
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = store.revision_ids_after(after.as_deref(), 2).await.unwrap();
            assert!(page.len() <= 2);
            let Some(last) = page.last().cloned() else {
                break;
            };
            all.extend(page);
            after = Some(last);
        }
        let mut expected = vec![
            harmless.revision.revision_id.clone(),
            hostile.revision.revision_id.clone(),
            unscanned.revision.revision_id.clone(),
        ];
        expected.sort();
        assert_eq!(all, expected);
    }

    pub async fn revision_source_round_trips(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let source = serde_json::json!({
            "kind": "github",
            "url": "https://github.com/acme/skills/tree/main/skills/deploy",
            "repository": "acme/skills",
            "ref": "main",
            "path": "skills/deploy",
            "commit": "0123456789abcdef0123456789abcdef01234567",
            "archive_sha256": "ab".repeat(32),
            "archive_bytes": 12345,
            "note": "unicode é ✓ and \"quotes\"",
            "nested": {"list": [1, 2.5, null, true]},
        });
        let imported = save(
            &store,
            &alice,
            "imported",
            draft("Imported body").source(source.clone()),
        )
        .await;
        assert!(imported.created);
        assert_eq!(imported.revision.source.as_ref(), Some(&source));
        let id = &imported.revision.revision_id;
        let read = store.get_revision(id).await.unwrap().unwrap();
        assert_eq!(read.source.as_ref(), Some(&source), "get_revision");
        let latest = store
            .latest_revision(&imported.skill.skill_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(latest.source.as_ref(), Some(&source), "latest_revision");
        let listed = store
            .list_revisions(&imported.skill.skill_id)
            .await
            .unwrap();
        assert_eq!(listed[0].source.as_ref(), Some(&source), "list_revisions");

        // Identical content creates nothing and keeps the first revision's source.
        let again = save(
            &store,
            &alice,
            "imported",
            draft("Imported body").source(serde_json::json!({"kind": "upload"})),
        )
        .await;
        assert!(!again.created);
        assert_eq!(again.revision.source.as_ref(), Some(&source));

        // An ordinary save has no source, and a revision JSON without one omits the key.
        let plain = save(&store, &alice, "imported", draft("Edited by hand")).await;
        assert!(plain.created);
        assert_eq!(plain.revision.source, None);
        let read = store
            .get_revision(&plain.revision.revision_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.source, None);
        let json = serde_json::to_value(&read).unwrap();
        assert!(json.get("source").is_none(), "{json}");
    }

    /// Pages through a listing `$limit` rows at a time, each page starting after the sort key
    /// of the previous page's last row; returns the pages.
    macro_rules! pages {
        ($limit:expr, |$page:ident| $fetch:expr, |$last:ident| $key:expr) => {{
            let mut pages = Vec::new();
            let mut after = None;
            loop {
                let $page = KeysetPage {
                    after: after.clone(),
                    limit: $limit,
                };
                let rows = $fetch.await.unwrap();
                assert!(
                    rows.len() <= $limit as usize,
                    "a page holds at most `limit` rows"
                );
                let Some($last) = rows.last() else { break };
                after = Some($key);
                let full = rows.len() == $limit as usize;
                pages.push(rows);
                if !full {
                    break;
                }
            }
            pages
        }};
    }

    fn sizes<T>(pages: &[Vec<T>]) -> Vec<usize> {
        pages.iter().map(Vec::len).collect()
    }

    pub async fn every_listing_pages_by_keyset(db: &TestDb) {
        let store = db.store();
        let mut people = Vec::new();
        for handle in ["erin", "alice", "dave", "bob", "carol"] {
            people.push(account(&store, handle).await);
        }
        let alice = people[1].clone();
        let who = actor(&alice.account_id);

        // Accounts, in creation order: the same rows as the whole listing, in order.
        let pages = pages!(2, |page| store.list_accounts_page(&page), |last| {
            CreationKey {
                created_at: last.created_at.clone(),
                id: last.account_id.clone(),
            }
        });
        assert_eq!(sizes(&pages), [2, 2, 1]);
        assert_eq!(pages.concat(), store.list_accounts().await.unwrap());

        // Teams with every account as a member; alice belongs to three teams.
        let mut teams = Vec::new();
        for handle in ["ops", "dev", "sec"] {
            let team = store
                .create_team(
                    NewTeam {
                        handle: handle.into(),
                        name: handle.into(),
                        owner_account_id: alice.account_id.clone(),
                    },
                    AuditDraft::new("team.create", &who),
                )
                .await
                .unwrap();
            teams.push(team);
        }
        for p in &people {
            if p.account_id != alice.account_id {
                join(&store, &teams[0], &alice, p, Role::Member).await;
            }
        }
        let ws = teams[0].workspace_id.clone();
        let pages = pages!(2, |page| store.list_members_page(&ws, &page), |last| last
            .handle
            .clone());
        assert_eq!(sizes(&pages), [2, 2, 1]);
        let handles: Vec<String> = pages.concat().into_iter().map(|m| m.handle).collect();
        assert_eq!(handles, ["alice", "bob", "carol", "dave", "erin"]);
        assert_eq!(pages.concat(), store.list_members(&ws).await.unwrap());

        let account_id = alice.account_id.clone();
        let pages = pages!(
            2,
            |page| store.memberships_page(&account_id, &page),
            |last| WorkspaceKey {
                kind: last.workspace.kind,
                handle: last.workspace.handle.clone(),
                workspace_id: last.workspace.workspace_id.clone(),
            }
        );
        assert_eq!(sizes(&pages), [2, 2]);
        let handles: Vec<String> = pages
            .concat()
            .into_iter()
            .map(|m| m.workspace.handle)
            .collect();
        assert_eq!(handles, ["personal", "dev", "ops", "sec"]);
        assert_eq!(
            pages.concat(),
            store.memberships(&alice.account_id).await.unwrap()
        );

        // Keys created in one burst share timestamps: the id breaks the tie.
        for i in 0..5 {
            store
                .create_api_key(
                    NewApiKey {
                        account_id: alice.account_id.clone(),
                        name: format!("key {i}"),
                        prefix: "xmk_x".into(),
                        key_hash: format!("{i}").repeat(64),
                        scopes: vec!["memory:read".into()],
                        profile: "ordinary-full".into(),
                        expires_at: None,
                    },
                    AuditDraft::new("key.create", &who),
                )
                .await
                .unwrap();
        }
        let pages = pages!(
            2,
            |page| store.list_api_keys_page(&account_id, &page),
            |last| CreationKey {
                created_at: last.created_at.clone(),
                id: last.key_id.clone(),
            }
        );
        assert_eq!(sizes(&pages), [2, 2, 1]);
        assert_eq!(
            pages.concat(),
            store.list_api_keys(&alice.account_id).await.unwrap()
        );

        // Revisions by number, with their components.
        let mut skill_id = String::new();
        for i in 1..=5 {
            let d = draft(&format!("body {i}")).components(vec![component(
                "a.md",
                ComponentType::Reference,
                b"x",
            )]);
            skill_id = save(&store, &alice, "deploy", d).await.skill.skill_id;
        }
        let pages = pages!(
            2,
            |page| store.list_revisions_page(&skill_id, &page),
            |last| last.revision_number
        );
        let numbers: Vec<Vec<i64>> = pages
            .iter()
            .map(|p| p.iter().map(|r| r.revision_number).collect())
            .collect();
        assert_eq!(numbers, [vec![1, 2], vec![3, 4], vec![5]]);
        assert!(pages.concat().iter().all(|r| r.components.len() == 1));
        assert_eq!(
            pages.concat(),
            store.list_revisions(&skill_id).await.unwrap()
        );

        // Skills of several workspaces by (slug, workspace): one slug in two workspaces
        // comes twice, on either side of a page boundary.
        for slug in ["beta", "alpha", "gamma"] {
            save(&store, &alice, slug, draft("x")).await;
        }
        let team_draft = draft("team").to_save(&teams[0].workspace_id, "deploy", &who);
        store.save_revision(team_draft).await.unwrap();
        let ids = vec![alice.personal_workspace_id.clone(), ws.clone()];
        let pages = pages!(3, |page| store.list_skills_page(&ids, &page), |last| {
            SlugKey {
                slug: last.slug.clone(),
                workspace_id: last.workspace_id.clone(),
            }
        });
        assert_eq!(sizes(&pages), [3, 2]);
        let slugs: Vec<String> = pages.concat().into_iter().map(|s| s.slug).collect();
        assert_eq!(slugs, ["alpha", "beta", "deploy", "deploy", "gamma"]);
        assert_eq!(pages.concat(), store.list_skills(&ids).await.unwrap());

        // A page after the last row is empty.
        let past = KeysetPage {
            after: Some(SlugKey {
                slug: "gamma".into(),
                workspace_id: "ws_~".into(),
            }),
            limit: 10,
        };
        assert!(
            store
                .list_skills_page(&ids, &past)
                .await
                .unwrap()
                .is_empty()
        );
    }

    pub async fn a_skill_page_holds_no_repeats_when_rows_arrive_meanwhile(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        for slug in ["b", "d", "f"] {
            save(&store, &alice, slug, draft("x")).await;
        }
        let ids = vec![alice.personal_workspace_id.clone()];
        let first = store
            .list_skills_page(
                &ids,
                &KeysetPage {
                    after: None,
                    limit: 2,
                },
            )
            .await
            .unwrap();
        let slugs = |v: &[Skill]| v.iter().map(|s| s.slug.clone()).collect::<Vec<_>>();
        assert_eq!(slugs(&first), ["b", "d"]);
        // One skill lands before the cursor, one after it, between the two requests.
        save(&store, &alice, "a", draft("x")).await;
        save(&store, &alice, "e", draft("x")).await;
        let last = first.last().unwrap();
        let second = store
            .list_skills_page(
                &ids,
                &KeysetPage {
                    after: Some(SlugKey {
                        slug: last.slug.clone(),
                        workspace_id: last.workspace_id.clone(),
                    }),
                    limit: 2,
                },
            )
            .await
            .unwrap();
        assert_eq!(
            slugs(&second),
            ["e", "f"],
            "no repeat, nothing skipped after the cursor"
        );
    }

    pub async fn table_counts_use_common_names(db: &TestDb) {
        let store = db.store();
        let counts = store.table_counts().await.unwrap();
        let names: Vec<&str> = counts.keys().map(String::as_str).collect();
        assert_eq!(names, TABLE_NAMES);
        assert!(counts.values().all(|n| *n == 0));
        let alice = account(&store, "alice").await;
        save(
            &store,
            &alice,
            "x",
            draft("x").status(RevisionStatus::Published),
        )
        .await;
        let counts = store.table_counts().await.unwrap();
        let expected: BTreeMap<String, u64> = [
            ("account_passwords", 0),
            ("accounts", 1),
            ("api_keys", 0),
            ("audit_log", 2),
            ("blobs", 0),
            ("invitations", 0),
            ("memberships", 1),
            ("memories", 0),
            ("memory_tags", 0),
            ("memory_versions", 0),
            ("oauth_clients", 0),
            ("oauth_codes", 0),
            ("oauth_grants", 0),
            ("oauth_tokens", 0),
            ("revision_components", 0),
            ("revisions", 1),
            ("skills", 1),
            ("level0", 1),
            ("web_sessions", 0),
            ("workspaces", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(counts, expected);
        store.ping().await.unwrap();
        assert!(["sqlite", "postgres"].contains(&store.backend()));
    }

    pub async fn invitations_reach_only_their_account(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let carol = account(&store, "carol").await;
        let ops = team(&store, "ops", &alice).await;
        let other = team(&store, "other", &carol).await;
        let invite = |invitee: &str, account_id: Option<&str>| NewInvitation {
            workspace_id: ops.workspace_id.clone(),
            invitee: invitee.into(),
            account_id: account_id.map(str::to_string),
            role: Role::Viewer,
            invited_by: alice.account_id.clone(),
            bounds: Default::default(),
        };
        let audit = || AuditDraft::new("invitation.create", &actor(&alice.account_id));
        let to_bob = store
            .create_invitation(invite("bob", Some(&bob.account_id)), audit())
            .await
            .unwrap();
        let to_ghost = store
            .create_invitation(invite("ghost", None), audit())
            .await
            .unwrap();
        assert!(to_bob.invitation_id.starts_with("inv_"));
        assert_eq!(to_bob.status, InvitationStatus::Pending);
        assert_eq!(to_bob.workspace_handle, "ops");
        assert_eq!(to_bob.workspace_name, "ops team");
        assert_eq!(to_bob.invited_by_handle, "alice");
        assert_eq!(to_bob.account_id.as_deref(), Some(bob.account_id.as_str()));
        assert_eq!(to_bob.responded_at, None);
        assert_eq!(to_ghost.account_id, None);
        assert_eq!(to_ghost.invitee, "ghost");

        // Nothing of the team reaches bob before he answers.
        assert_eq!(store.memberships(&bob.account_id).await.unwrap().len(), 1);
        assert_eq!(
            store.list_members(&ops.workspace_id).await.unwrap().len(),
            1
        );
        assert_eq!(
            store.account_invitations(&bob.account_id).await.unwrap(),
            std::slice::from_ref(&to_bob)
        );
        assert!(
            store
                .account_invitations(&carol.account_id)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store
                .workspace_invitations(&ops.workspace_id, Some(InvitationStatus::Pending))
                .await
                .unwrap(),
            [to_bob.clone(), to_ghost.clone()]
        );
        assert!(
            store
                .workspace_invitations(&other.workspace_id, None)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.get_invitation(&to_ghost.invitation_id).await.unwrap(),
            Some(to_ghost.clone())
        );
        assert_eq!(store.get_invitation("inv_missing").await.unwrap(), None);

        // An invitation that named no account never reaches the account that takes the
        // handle later.
        let ghost = account(&store, "ghost").await;
        assert!(
            store
                .account_invitations(&ghost.account_id)
                .await
                .unwrap()
                .is_empty()
        );

        // One pending invitation per invitee spelling; a refused one writes nothing.
        let before = store.table_counts().await.unwrap();
        let again = store
            .create_invitation(invite("bob", Some(&bob.account_id)), audit())
            .await;
        assert!(conflict(again).contains("bob"));
        assert_eq!(store.table_counts().await.unwrap(), before);

        // The audit entry names the invitation the store allocated.
        let entries = store.list_audit(&AuditFilter::default()).await.unwrap();
        let created: Vec<&AuditEntry> = entries
            .iter()
            .filter(|e| e.action == "invitation.create")
            .collect();
        assert_eq!(created.len(), 2);
        assert_eq!(created[0].details["invitation_id"], to_bob.invitation_id);
        assert_eq!(
            created[0].workspace_id.as_deref(),
            Some(ops.workspace_id.as_str())
        );
    }

    pub async fn accepting_is_atomic(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let carol = account(&store, "carol").await;
        let ops = team(&store, "ops", &alice).await;
        let invite = |role: Role| NewInvitation {
            workspace_id: ops.workspace_id.clone(),
            invitee: "bob".into(),
            account_id: Some(bob.account_id.clone()),
            role,
            invited_by: alice.account_id.clone(),
            bounds: Default::default(),
        };
        let first = store
            .create_invitation(
                invite(Role::Member),
                AuditDraft::new("invitation.create", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        let accept = |by: &Account, id: &str| {
            let (store, by, id) = (store.clone(), by.clone(), id.to_string());
            async move {
                store
                    .answer_invitation(
                        &id,
                        &by.account_id,
                        InvitationAnswer::Accept,
                        AuditDraft::new("invitation.accept", &actor(&by.account_id)),
                    )
                    .await
            }
        };

        // Someone else cannot accept it.
        let before = store.table_counts().await.unwrap();
        let stolen = accept(&carol, &first.invitation_id).await;
        assert!(matches!(stolen, Err(StoreError::NotFound(_))), "{stolen:?}");
        assert_eq!(store.table_counts().await.unwrap(), before);
        assert_eq!(store.memberships(&carol.account_id).await.unwrap().len(), 1);

        // Accepting: the invitation's state, the membership and the audit entry, together.
        let accepted = accept(&bob, &first.invitation_id).await.unwrap();
        assert_eq!(accepted.status, InvitationStatus::Accepted);
        assert!(accepted.responded_at.is_some());
        let after = store.table_counts().await.unwrap();
        assert_eq!(after["memberships"], before["memberships"] + 1);
        assert_eq!(after["audit_log"], before["audit_log"] + 1);
        assert_eq!(after["invitations"], before["invitations"]);
        let roles: Vec<(String, Role)> = store
            .list_members(&ops.workspace_id)
            .await
            .unwrap()
            .into_iter()
            .map(|m| (m.handle, m.role))
            .collect();
        assert_eq!(
            roles,
            [("alice".into(), Role::Owner), ("bob".into(), Role::Member)]
        );
        let entries = store.list_audit(&AuditFilter::default()).await.unwrap();
        let last = entries.last().unwrap();
        assert_eq!(last.action, "invitation.accept");
        assert_eq!(last.actor.account_id, bob.account_id);
        assert_eq!(
            last.workspace_id.as_deref(),
            Some(ops.workspace_id.as_str())
        );
        assert!(verify_audit_chain(&entries).is_ok());

        // An answered invitation cannot be answered again.
        let before = store.table_counts().await.unwrap();
        let twice = accept(&bob, &first.invitation_id).await;
        assert!(matches!(twice, Err(StoreError::NotFound(_))), "{twice:?}");
        assert_eq!(store.table_counts().await.unwrap(), before);

        // Accepting while already a member fails as a whole: the invitation stays pending,
        // the role stays, no audit entry.
        let second = store
            .create_invitation(
                invite(Role::Admin),
                AuditDraft::new("invitation.create", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        let before = store.table_counts().await.unwrap();
        let msg = conflict(accept(&bob, &second.invitation_id).await);
        assert!(msg.contains("already a member"), "{msg}");
        assert_eq!(store.table_counts().await.unwrap(), before);
        assert_eq!(
            store
                .get_invitation(&second.invitation_id)
                .await
                .unwrap()
                .unwrap()
                .status,
            InvitationStatus::Pending
        );
        let bob_role = store
            .memberships(&bob.account_id)
            .await
            .unwrap()
            .into_iter()
            .find(|m| m.workspace.workspace_id == ops.workspace_id)
            .map(|m| m.role);
        assert_eq!(bob_role, Some(Role::Member));
    }

    pub async fn decline_and_revoke_close_an_invitation_once(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let ops = team(&store, "ops", &alice).await;
        let other = team(&store, "other", &bob).await;
        let invite = || {
            let store = store.clone();
            let (ops, alice, bob) = (ops.clone(), alice.clone(), bob.clone());
            async move {
                store
                    .create_invitation(
                        NewInvitation {
                            workspace_id: ops.workspace_id.clone(),
                            invitee: bob.account_id.clone(),
                            account_id: Some(bob.account_id.clone()),
                            role: Role::Viewer,
                            invited_by: alice.account_id.clone(),
                            bounds: Default::default(),
                        },
                        AuditDraft::new("invitation.create", &actor(&alice.account_id)),
                    )
                    .await
                    .unwrap()
            }
        };
        let answer = |id: String, how: InvitationAnswer| {
            let (store, bob) = (store.clone(), bob.clone());
            async move {
                store
                    .answer_invitation(
                        &id,
                        &bob.account_id,
                        how,
                        AuditDraft::new("invitation.answer", &actor(&bob.account_id)),
                    )
                    .await
            }
        };

        let declined_one = invite().await;
        let before = store.table_counts().await.unwrap();
        let declined = answer(
            declined_one.invitation_id.clone(),
            InvitationAnswer::Decline,
        )
        .await
        .unwrap();
        assert_eq!(declined.status, InvitationStatus::Declined);
        let after = store.table_counts().await.unwrap();
        assert_eq!(
            after["memberships"], before["memberships"],
            "decline adds no one"
        );
        assert_eq!(after["audit_log"], before["audit_log"] + 1);
        assert_eq!(store.memberships(&bob.account_id).await.unwrap().len(), 2);
        for how in [InvitationAnswer::Accept, InvitationAnswer::Decline] {
            let late = answer(declined_one.invitation_id.clone(), how).await;
            assert!(matches!(late, Err(StoreError::NotFound(_))), "{late:?}");
        }
        assert!(
            store
                .account_invitations(&bob.account_id)
                .await
                .unwrap()
                .is_empty()
        );

        // The same invitee may be invited again once nothing is pending; only its own
        // workspace revokes it.
        let revoked_one = invite().await;
        let revoke = |ws: &Workspace| {
            let (store, ws, id) = (store.clone(), ws.clone(), revoked_one.invitation_id.clone());
            let alice = alice.clone();
            async move {
                store
                    .revoke_invitation(
                        &ws.workspace_id,
                        &id,
                        AuditDraft::new("invitation.revoke", &actor(&alice.account_id)),
                    )
                    .await
            }
        };
        let before = store.table_counts().await.unwrap();
        let elsewhere = revoke(&other).await;
        assert!(
            matches!(elsewhere, Err(StoreError::NotFound(_))),
            "{elsewhere:?}"
        );
        assert_eq!(store.table_counts().await.unwrap(), before);
        let revoked = revoke(&ops).await.unwrap();
        assert_eq!(revoked.status, InvitationStatus::Revoked);
        assert!(matches!(revoke(&ops).await, Err(StoreError::NotFound(_))));
        let late = answer(revoked_one.invitation_id.clone(), InvitationAnswer::Accept).await;
        assert!(matches!(late, Err(StoreError::NotFound(_))), "{late:?}");
        assert_eq!(store.memberships(&bob.account_id).await.unwrap().len(), 2);
        assert!(
            store
                .workspace_invitations(&ops.workspace_id, Some(InvitationStatus::Pending))
                .await
                .unwrap()
                .is_empty()
        );
        let history: Vec<InvitationStatus> = store
            .workspace_invitations(&ops.workspace_id, None)
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.status)
            .collect();
        assert_eq!(
            history,
            [InvitationStatus::Declined, InvitationStatus::Revoked]
        );
    }

    pub async fn teams_keep_an_owner(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let ops = team(&store, "ops", &alice).await;
        join(&store, &ops, &alice, &bob, Role::Member).await;
        let who = actor(&alice.account_id);
        let set = |account: &Account, role: Role| {
            let (store, ws, id, who) = (
                store.clone(),
                ops.workspace_id.clone(),
                account.account_id.clone(),
                who.clone(),
            );
            async move {
                store
                    .set_member_role(&ws, &id, role, AuditDraft::new("member.role", &who))
                    .await
            }
        };
        let remove = |ws: &str, account: &Account| {
            let (store, ws, id, who) = (
                store.clone(),
                ws.to_string(),
                account.account_id.clone(),
                who.clone(),
            );
            async move {
                store
                    .remove_member(&ws, &id, AuditDraft::new("member.remove", &who))
                    .await
            }
        };

        let before = store.table_counts().await.unwrap();
        assert!(conflict(set(&alice, Role::Admin).await).contains("at least one owner"));
        assert!(conflict(remove(&ops.workspace_id, &alice).await).contains("at least one owner"));
        // A personal workspace's owner is its only owner too.
        conflict(remove(&alice.personal_workspace_id, &alice).await);
        assert_eq!(store.table_counts().await.unwrap(), before);
        // The last owner keeping the role is no change of ownership.
        set(&alice, Role::Owner).await.unwrap();

        // With a second owner, the first may step down, and then the second is the last.
        set(&bob, Role::Owner).await.unwrap();
        set(&alice, Role::Admin).await.unwrap();
        conflict(remove(&ops.workspace_id, &bob).await);
        conflict(set(&bob, Role::Viewer).await);
        assert!(remove(&ops.workspace_id, &alice).await.unwrap());
        assert!(!remove(&ops.workspace_id, &alice).await.unwrap());
        let gone = set(&alice, Role::Member).await;
        assert!(matches!(gone, Err(StoreError::NotFound(_))), "{gone:?}");
        let roles: Vec<(String, Role)> = store
            .list_members(&ops.workspace_id)
            .await
            .unwrap()
            .into_iter()
            .map(|m| (m.handle, m.role))
            .collect();
        assert_eq!(roles, [("bob".into(), Role::Owner)]);
    }

    /// Two owners removing each other at the same moment (on two nodes under PostgreSQL):
    /// exactly one removal wins, so the team keeps an owner.
    pub async fn concurrent_owner_removals_keep_one(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        for round in 0..6 {
            let ws = team(&store, &format!("t{round}"), &alice).await;
            join(&store, &ws, &alice, &bob, Role::Owner).await;
            let mut tasks = Vec::new();
            for (i, (actor_of, leaving)) in [(&alice, &bob), (&bob, &alice)].into_iter().enumerate()
            {
                let node = db.node(i);
                let (ws_id, leaving_id) = (ws.workspace_id.clone(), leaving.account_id.clone());
                let audit = AuditDraft::new("member.remove", &actor(&actor_of.account_id));
                tasks.push(tokio::spawn(async move {
                    node.remove_member(&ws_id, &leaving_id, audit).await
                }));
            }
            let mut removed = 0;
            for t in tasks {
                match t.await.unwrap() {
                    Ok(true) => removed += 1,
                    Err(StoreError::Conflict(_) | StoreError::Contention(_)) => {}
                    other => panic!("round {round}: {other:?}"),
                }
            }
            assert_eq!(removed, 1, "round {round}");
            let owners = store
                .list_members(&ws.workspace_id)
                .await
                .unwrap()
                .into_iter()
                .filter(|m| m.role == Role::Owner)
                .count();
            assert_eq!(owners, 1, "round {round}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Both backends side by side, and PostgreSQL-only behaviour
// ---------------------------------------------------------------------------------------------

/// The same script on both backends gives the same observable results (ids and timestamps
/// aside): row shapes, orderings and search rankings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_answer_alike() {
    let Some(pg) = postgres_db().await else {
        return;
    };
    let lite = sqlite_db().await;
    let a = transcript(&lite.store()).await;
    let b = transcript(&pg.store()).await;
    assert_eq!(a.len(), b.len());
    let mismatches: Vec<String> = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| x != y)
        .map(|(x, y)| format!("sqlite:   {x}\npostgres: {y}"))
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

async fn transcript(store: &DynStore) -> Vec<String> {
    let mut out = Vec::new();
    let alice = account(store, "alice").await;
    let bob = account(store, "Bob_2").await;
    let team = store
        .create_team(
            NewTeam {
                handle: "a-team".into(),
                name: "A team".into(),
                owner_account_id: bob.account_id.clone(),
            },
            AuditDraft::new("team.create", &actor(&bob.account_id)),
        )
        .await
        .unwrap();
    join(store, &team, &bob, &alice, Role::Viewer).await;
    let ids = |s: &str, map: &[(&str, &str)]| {
        let mut s = s.to_string();
        for (from, to) in map {
            s = s.replace(from, to);
        }
        s
    };
    let map = [
        (alice.account_id.as_str(), "<alice>"),
        (bob.account_id.as_str(), "<bob>"),
        (alice.personal_workspace_id.as_str(), "<alice-ws>"),
        (bob.personal_workspace_id.as_str(), "<bob-ws>"),
        (team.workspace_id.as_str(), "<team>"),
    ];
    for m in store.memberships(&alice.account_id).await.unwrap() {
        out.push(ids(
            &format!(
                "membership {} {} {:?} {}",
                m.workspace.workspace_id, m.workspace.handle, m.workspace.kind, m.role
            ),
            &map,
        ));
    }
    for m in store.list_members(&team.workspace_id).await.unwrap() {
        out.push(format!("member {} {} {}", m.handle, m.display_name, m.role));
    }
    let corpus = [
        ("deploy", "Deploy", "Ship the build to production"),
        (
            "deploy-canary",
            "Canary deployment",
            "Deploy to a small slice first, then deploy everywhere",
        ),
        ("rollback", "Rollback", "Undo a bad deploy quickly"),
        ("a_b", "Underscore", "Sorts between upper and lower case"),
        ("Zeta", "Zeta", "Upper-case slug sorts first bytewise"),
        ("zeta-2", "Zeta two", "Follow-up for zeta deploys"),
        (
            "db-migrate",
            "Database migration",
            "Run deploy.sh then migrate the database",
        ),
        ("incident", "Incident response", "Page the on-call engineer"),
    ];
    for (slug, name, description) in corpus {
        let d = draft(&format!("body of {slug}"))
            .named(name, description)
            .status(RevisionStatus::Published)
            .components(vec![
                component("b/Z.md", ComponentType::Document, slug.as_bytes()),
                component("b/a.md", ComponentType::Document, b"shared"),
                component("B/c.md", ComponentType::Document, b"other"),
            ])
            .metadata(json!({"zeta": 1, "alpha": {"y": [1, 2.5, "x"], "b": null}}));
        let o = save(store, &alice, slug, d).await;
        out.push(format!(
            "saved {} #{} {} {} {:?}",
            o.skill.slug,
            o.revision.revision_number,
            o.revision.status,
            o.revision.canonical_hash,
            o.revision
                .components
                .iter()
                .map(|c| format!(
                    "{}:{}:{}:{}",
                    c.logical_path, c.component_type, c.size, c.media_type
                ))
                .collect::<Vec<_>>()
        ));
        out.push(serde_json::to_string(&o.revision.metadata).unwrap());
    }
    for s in store
        .list_skills(std::slice::from_ref(&alice.personal_workspace_id))
        .await
        .unwrap()
    {
        out.push(format!(
            "skill {} {} {}",
            s.slug, s.name, s.latest_revision_number
        ));
    }
    for q in [
        "deploy",
        "deploy production",
        "canary deployment",
        "zeta",
        "migrate database",
        "dep",
        "undo",
        "ship",
        "the",
        "on call",
        "deploy sh",
        "follow up",
    ] {
        let hits = search(
            store,
            q,
            &[&alice.personal_workspace_id, &team.workspace_id],
        )
        .await;
        // Exact matches lead on both; relevance order within the rest is engine-specific
        // (BM25 with IDF vs. cover density), so only the set is compared there.
        let exact: Vec<&str> = hits
            .iter()
            .take_while(|h| h.score == 1.0)
            .map(|h| h.slug.as_str())
            .collect();
        let mut rest: Vec<&str> = hits
            .iter()
            .skip(exact.len())
            .map(|h| h.slug.as_str())
            .collect();
        assert!(hits.iter().skip(exact.len()).all(|h| h.score < 1.0));
        rest.sort_unstable();
        out.push(format!("search {q:?} -> exact {exact:?} then {rest:?}"));
    }
    let counts = store.table_counts().await.unwrap();
    out.push(format!("{counts:?}"));
    let audit = store.list_audit(&AuditFilter::default()).await.unwrap();
    assert_eq!(verify_audit_chain(&audit), Ok(()));
    for e in audit {
        out.push(ids(
            &format!("audit {} {} {:?}", e.seq, e.action, e.workspace_id),
            &map,
        ));
    }
    out
}

mod all_cases {
    pub use super::cases::*;
    pub use super::deletion_cases::*;
    pub use super::hardening_cases::*;
    pub use super::log_cases::*;
    pub use super::memory_cases::*;
    pub use super::node_quota_cases::*;
    pub use super::semantic_cases::*;
    pub use super::signin_cases::*;
    pub use super::signin_snapshot_cases::*;
}

/// Issue #30, item 5: the semantic lane's storage, with vectors made by the test kit's
/// deterministic embedder (a bag of hashed words) and saved as the embedding worker saves them.
mod semantic_cases {
    use super::*;
    use sha2::{Digest, Sha256};
    use xmemo_core::MemoryKind;
    use xmemo_testkit::embeddings::vector_of;

    const DIMS: usize = 256;
    const LEASE: &str = "2999-01-01T00:00:00.000Z";

    fn unit(text: &str) -> Vec<f32> {
        let v = vector_of(text, DIMS);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    async fn forget(store: &DynStore, m: &Memory, who: &Attribution) {
        store
            .set_memory_status(MemoryStatusChange {
                memory_id: m.memory_id.clone(),
                from: xmemo_core::MemoryStatus::Active,
                to: xmemo_core::MemoryStatus::Forgotten,
                reason: None,
                audit: AuditDraft::new("memory.forget", who).workspace(&m.workspace_id),
            })
            .await
            .unwrap();
    }

    /// Runs `model`'s worker on `store` until it has nothing left: the keys it embedded.
    async fn embed_all(store: &DynStore, model: &str, owner: &str) -> Vec<String> {
        embed_all_texts(store, model, owner)
            .await
            .into_iter()
            .map(|(key, _)| key)
            .collect()
    }

    /// [`embed_all`], with the text each key was embedded from.
    async fn embed_all_texts(store: &DynStore, model: &str, owner: &str) -> Vec<(String, String)> {
        let mut embedded = Vec::new();
        for _ in 0..100 {
            let work = store
                .embedding_work(model, owner, LEASE, 50)
                .await
                .unwrap()
                .expect("the lease is free or ours");
            if work.jobs.is_empty() && work.removed.is_empty() && work.from == work.next {
                return embedded;
            }
            let rows: Vec<EmbeddedRow> = work
                .jobs
                .iter()
                .map(|job| {
                    let hash = hex::encode(Sha256::digest(job.text.as_bytes()));
                    let unchanged = job.stored_hash.as_deref() == Some(hash.as_str());
                    if !unchanged {
                        embedded.push((job.key.clone(), job.text.clone()));
                    }
                    EmbeddedRow {
                        job: job.clone(),
                        text_hash: hash,
                        vector: (!unchanged).then(|| unit(&job.text)),
                    }
                })
                .collect();
            assert!(
                store
                    .embedding_save(model, owner, &rows, &work.removed, &work.next)
                    .await
                    .unwrap(),
                "the lease is ours"
            );
        }
        panic!("the worker of {model} never caught up");
    }

    /// Memory recall by `text` with the meaning of `meaning`: (content, lanes) in rank order,
    /// of the memories scoring at least 0.15 (the floor a `min_score` sets in the service;
    /// unrelated texts score about 0 here).
    async fn recall_meaning(
        store: &DynStore,
        ws: &str,
        model: &str,
        text: &str,
        meaning: &str,
    ) -> Vec<(String, Lanes)> {
        let mut q = memory_query(&[ws]);
        q.text = Some(text.into());
        q.limit = 3;
        q.semantic = Some(Semantic {
            model: model.into(),
            vector: unit(meaning),
            text_weight: 0.5,
            method: FusionMethod::Weighted,
        });
        store
            .recall_memories(&q)
            .await
            .unwrap()
            .into_iter()
            .filter(|h| h.score >= 0.15 || h.every_word)
            .map(|h| (h.memory.content, h.matched))
            .collect()
    }

    /// Issue #30: the semantic lane embeds a memory with the start of the active memory
    /// saved just before it in the same workspace and project (a lone "Yes, yesterday" means
    /// nothing), in the backfill of a new model and when it follows the log alike.
    pub async fn a_memory_is_embedded_with_the_start_of_the_one_before_it_in_its_scope(
        db: &TestDb,
    ) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let save = |project: &str, text: &str| {
            let mut c = memory_content(MemoryKind::Note, text);
            c.project = Some(project.into());
            new_memory(&ws, &who, c)
        };
        let long_question = format!("Did the billing deploy fail? {}", "details ".repeat(100));
        let question = remember(&store, save("ops", &long_question)).await.memory;
        let other = remember(&store, save("home", "Buy bread and milk"))
            .await
            .memory;
        let answer = remember(&store, save("ops", "Yes, yesterday")).await.memory;
        let backfill: std::collections::HashMap<String, String> =
            embed_all_texts(&store, "fake-words", "node-a")
                .await
                .into_iter()
                .collect();
        // The first of its project has nothing before it; another project's memory is not
        // its neighbour.
        assert_eq!(backfill[&question.memory_id], long_question);
        assert_eq!(backfill[&other.memory_id], "Buy bread and milk");
        let expected: String = format!(
            "Yes, yesterday\n{}",
            long_question.chars().take(300).collect::<String>()
        );
        assert_eq!(backfill[&answer.memory_id], expected);

        // Followed from the log: a forgotten memory is no one's neighbour.
        forget(&store, &answer, &who).await;
        let next = remember(&store, save("ops", "It was the database migration"))
            .await
            .memory;
        let followed: std::collections::HashMap<String, String> =
            embed_all_texts(&store, "fake-words", "node-a")
                .await
                .into_iter()
                .collect();
        assert_eq!(
            followed[&next.memory_id],
            format!(
                "It was the database migration\n{}",
                long_question.chars().take(300).collect::<String>()
            )
        );
    }

    /// Issue #30, item 4: a recall's filters are applied inside both lanes while they rank.
    /// The one memory of a project is found under 120 of another project that match the
    /// query better in words and in meaning, in as many statements as a recall without a
    /// filter (no second ranking with more candidates); a memory forgotten since it was
    /// indexed is left out by the ranking itself.
    pub async fn recall_filters_apply_inside_both_lanes(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let in_project = |project: &str, title: Option<&str>, text: &str| {
            let mut c = memory_content(MemoryKind::Fact, text);
            c.project = Some(project.into());
            c.title = title.map(str::to_string);
            new_memory(&ws, &who, c)
        };
        for i in 0..120 {
            remember(
                &store,
                in_project(
                    "fleet",
                    Some("harbour pilot"),
                    &format!("harbour pilot {i} boards the ship"),
                ),
            )
            .await;
        }
        let strong = remember(
            &store,
            in_project("port", Some("harbour pilot"), "harbour pilot retired"),
        )
        .await
        .memory;
        let weak = remember(
            &store,
            in_project(
                "port",
                None,
                "The harbour pilot boards at dawn; ask the office about tides, berths and tugs",
            ),
        )
        .await
        .memory;
        let recall = |project: Option<&str>, limit: u32| {
            let mut q = memory_query(&[&ws]);
            q.text = Some("harbour pilot".into());
            q.project = project.map(str::to_string);
            q.limit = limit;
            q
        };
        let ids = |hits: Vec<MemoryHit>| -> Vec<String> {
            hits.into_iter().map(|h| h.memory.memory_id).collect()
        };
        // Warm: the first query may build the index.
        store.recall_memories(&recall(None, 1)).await.unwrap();
        let before = store.statements_run();
        let unfiltered = store.recall_memories(&recall(None, 1)).await.unwrap();
        let plain = store.statements_run() - before;
        assert_eq!(unfiltered.len(), 1);
        let before = store.statements_run();
        let found = store
            .recall_memories(&recall(Some("port"), 1))
            .await
            .unwrap();
        assert_eq!(
            store.statements_run() - before,
            plain,
            "a filtered recall runs as many statements as an unfiltered one"
        );
        assert_eq!(ids(found), vec![strong.memory_id.clone()]);

        // Forgotten since it was indexed: the next in the project takes its place.
        forget(&store, &strong, &who).await;
        assert_eq!(
            ids(store
                .recall_memories(&recall(Some("port"), 1))
                .await
                .unwrap()),
            vec![weak.memory_id.clone()]
        );
        let mut with_forgotten = recall(Some("port"), 5);
        with_forgotten.include_forgotten = true;
        assert_eq!(
            store.recall_memories(&with_forgotten).await.unwrap().len(),
            2
        );

        // The meaning lane: the query's words are in no memory, its meaning is nearer to the
        // fleet's 120 than to the port's: the port's memory still comes, and nothing else.
        embed_all(&store, "fake-words", "node-a").await;
        let mut q = recall(Some("port"), 3);
        q.text = Some("vessel navigator".into());
        q.semantic = Some(Semantic {
            model: "fake-words".into(),
            vector: unit("harbour pilot boards the ship"),
            text_weight: 0.5,
            method: FusionMethod::Weighted,
        });
        let hits = store.recall_memories(&q).await.unwrap();
        assert_eq!(ids(hits.clone()), vec![weak.memory_id.clone()], "{hits:?}");
        assert!(hits[0].matched.meaning && !hits[0].matched.text);
        q.project = None;
        let anywhere = store.recall_memories(&q).await.unwrap();
        assert!(
            anywhere
                .iter()
                .all(|h| h.memory.project.as_deref() == Some("fleet")),
            "without the filter the fleet's nearer meanings come first: {anywhere:?}"
        );
    }

    /// Issue #30, the multilingual cases: a French word typed without its accent finds its
    /// row in a mostly English store; a German compound is found by its tail.
    pub async fn other_languages_words_and_compound_tails_are_found(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        for i in 0..40 {
            remember(
                &store,
                new_memory(
                    &ws,
                    &who,
                    memory_content(
                        MemoryKind::Note,
                        &format!("The nightly job {i} rotates the logs and checks the disks"),
                    ),
                ),
            )
            .await;
        }
        let rows = [
            "Le déploiement du service se fait le mardi après la revue",
            "Bei einer Zeitüberschreitung wird die Anfrage nach zehn Sekunden abgebrochen",
            "Die Kundenumfrage läuft bis Ende März und wird danach ausgewertet",
        ];
        for content in rows {
            remember(
                &store,
                new_memory(&ws, &who, memory_content(MemoryKind::Fact, content)),
            )
            .await;
        }
        for (query, expected) in [
            ("deploiement", rows[0]),
            ("Überschreitung", rows[1]),
            ("Umfrage", rows[2]),
        ] {
            let mut q = memory_query(&[&ws]);
            q.text = Some(query.into());
            let found = store.recall_memories(&q).await.unwrap();
            let contents: Vec<&str> = found.iter().map(|h| h.memory.content.as_str()).collect();
            assert_eq!(contents, vec![expected], "{query}");
        }
    }

    /// Issue #30, item 3: every score is 0 to 1 and comparable across queries, indexes and
    /// lanes; an exact slug or name match is 1, the rows holding every word say so.
    pub async fn scores_run_from_0_to_1_and_mean_the_same_for_every_query_and_lane(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let note = |text: &str| new_memory(&ws, &who, memory_content(MemoryKind::Fact, text));
        let rotate = "rotate the database credentials every ninety days";
        remember(&store, note(rotate)).await;
        remember(&store, note("database backups run nightly at two")).await;
        remember(&store, note("the harbour pilot boards ships at dawn")).await;
        let recall = |text: &'static str, semantic: Option<Semantic>| {
            let store = store.clone();
            let mut q = memory_query(&[&ws]);
            q.text = Some(text.into());
            q.semantic = semantic;
            async move {
                store
                    .recall_memories(&q)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|h| (h.memory.content, h.score, h.every_word))
                    .collect::<Vec<_>>()
            }
        };
        let both = recall("database credentials", None).await;
        assert_eq!(both[0].0, rotate, "{both:?}");
        assert!(both[0].2 && !both[1].2, "{both:?}");
        // Each word once in a text of average length: a little under half the scale.
        assert!(both[0].1 > 0.3 && both[0].1 < 0.6, "{both:?}");
        // The other holds the common word only: a smaller share.
        assert!(both[1].1 > 0.0 && both[1].1 < both[0].1 * 0.6, "{both:?}");
        let alone = recall("credentials", None).await;
        // The same memory holding the whole query scores alike for another query…
        assert!(
            (alone[0].1 - both[0].1).abs() < 0.1,
            "{alone:?} vs {both:?}"
        );
        // …and in a larger index of like rows.
        for i in 0..60 {
            remember(
                &store,
                note(&format!("weekly filler note number {i} about nothing much")),
            )
            .await;
        }
        let larger = recall("database credentials", None).await;
        assert_eq!(larger[0].0, rotate);
        assert!(
            (larger[0].1 - both[0].1).abs() < 0.1,
            "{larger:?} vs {both:?}"
        );

        // With the meaning lane: still 0 to 1, the exact holder still says so, and a query
        // nothing answers scores low (no per-query rescaling lifts its best row).
        embed_all(&store, "fake-words", "node-a").await;
        let meaning = |text: &str| {
            Some(Semantic {
                model: "fake-words".into(),
                vector: unit(text),
                text_weight: 0.5,
                method: FusionMethod::Weighted,
            })
        };
        let fused = recall("database credentials", meaning("database credentials")).await;
        assert_eq!(fused[0].0, rotate, "{fused:?}");
        assert!(fused[0].2, "{fused:?}");
        assert!(fused.iter().all(|h| (0.0..1.0).contains(&h.1)), "{fused:?}");
        let nothing = recall("zebra stripes", meaning("zebra stripes")).await;
        // (The fake model's vectors of unrelated texts share a few hashed words: cosines up
        // to about 0.25, so fused scores up to about 0.125; per-query min-max scaling made
        // the best of them 0.5, as high as a true match.)
        assert!(nothing.iter().all(|h| h.1 < 0.2 && !h.2), "{nothing:?}");
        assert!(
            fused[0].1 > 0.3 && fused[0].1 > 2.0 * nothing[0].1,
            "{fused:?}"
        );

        // Level 0: an exact slug match is 1, the rest below.
        for (slug, name, description) in [
            ("deploy", "Deploy", "Ship the build"),
            (
                "deploy-canary",
                "Canary deployment",
                "Deploy to a few hosts first",
            ),
        ] {
            save(
                &store,
                &alice,
                slug,
                draft("x")
                    .named(name, description)
                    .status(RevisionStatus::Published),
            )
            .await;
        }
        let hits = search(&store, "deploy", &[&ws]).await;
        assert_eq!(slugs(&hits), ["deploy", "deploy-canary"]);
        assert_eq!(hits[0].score, 1.0);
        assert!(hits[0].every_word && hits[1].every_word, "{hits:?}");
        assert!(hits[1].score > 0.5 && hits[1].score < 1.0, "{hits:?}");
    }

    pub async fn stored_vectors_rank_until_their_text_changes_and_every_node_reuses_them(
        db: &TestDb,
    ) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        // Each memory in a project of its own: none is embedded with another's start.
        let alone = |text: &str| {
            let mut c = memory_content(MemoryKind::Fact, text);
            c.project = Some(format!("p-{}", text.len()));
            c
        };
        let pilot = remember(
            &store,
            new_memory(&ws, &who, alone("the harbour pilot boards ships at dawn")),
        )
        .await
        .memory;
        for text in [
            "quarterly budget review for the marketing team",
            "rotate the database credentials every ninety days",
        ] {
            remember(&store, new_memory(&ws, &who, alone(text))).await;
        }
        let embedded = embed_all(&store, "fake-words", "node-a").await;
        assert_eq!(embedded.len(), 3, "{embedded:?}");

        // A saved vector ranks: "vessel" is in no memory, the meaning finds the pilot's.
        let found = recall_meaning(&store, &ws, "fake-words", "vessel", "harbour pilot dawn").await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, pilot.content);
        assert!(found[0].1.meaning && !found[0].1.text, "{found:?}");
        // Both lanes, when the words match too.
        let both = recall_meaning(&store, &ws, "fake-words", "pilot", "harbour pilot dawn").await;
        assert_eq!(both[0].0, pilot.content);
        assert!(both[0].1.meaning && both[0].1.text, "{both:?}");

        // A second node and a restarted one read the stored vectors: nothing is embedded again.
        for node in [db.other_node().await, db.fresh_node().await] {
            let found =
                recall_meaning(&node, &ws, "fake-words", "vessel", "harbour pilot dawn").await;
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].1.meaning, "{found:?}");
        }
        assert!(
            embed_all(&db.fresh_node().await, "fake-words", "node-a")
                .await
                .is_empty()
        );

        // The text changes: its vector is stale at once, on this node and on a fresh one,
        // until the worker embeds the new text — which is the only row it embeds again.
        let gardening = memory_content(MemoryKind::Fact, "prune the roses before the frost");
        store
            .update_memory(MemoryUpdate {
                memory_id: pilot.memory_id.clone(),
                expected_version: pilot.version,
                content_hash: xmemo_core::memory::memory_content_hash(&gardening.content),
                content: gardening,
                attribution: who.clone(),
                audit: AuditDraft::new("memory.update", &who).workspace(&ws),
                quota: None,
            })
            .await
            .unwrap();
        for node in [store.clone(), db.fresh_node().await] {
            let found =
                recall_meaning(&node, &ws, "fake-words", "vessel", "harbour pilot dawn").await;
            assert!(found.is_empty(), "a stale vector ranked: {found:?}");
        }
        assert_eq!(
            embed_all(&store, "fake-words", "node-a").await,
            std::slice::from_ref(&pilot.memory_id)
        );
        let found = recall_meaning(&store, &ws, "fake-words", "flowers", "roses frost").await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "prune the roses before the frost");
        assert!(found[0].1.meaning, "{found:?}");

        // Another model has no vectors: its worker embeds every row.
        let mut again = embed_all(&store, "fake-words-2", "node-a").await;
        again.sort();
        assert_eq!(again.len(), 3, "{again:?}");
        assert!(
            recall_meaning(&store, &ws, "fake-words-2", "vessel", "budget marketing")
                .await
                .iter()
                .any(|(content, lanes)| content.starts_with("quarterly") && lanes.meaning)
        );
    }
}

/// Issue #23: the bounds checked inside the writing transaction.
mod hardening_cases {
    use super::*;

    fn owner_draft(who: &Account) -> AuditDraft {
        AuditDraft::new("account.delete", &actor(&who.account_id))
    }

    pub async fn deleting_a_sole_owner_is_refused_in_its_transaction(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = team(&store, "crew", &alice).await;
        let refused = store
            .delete_account(&alice.account_id, owner_draft(&alice))
            .await;
        assert!(
            matches!(refused, Err(StoreError::Conflict(_))),
            "{refused:?}"
        );
        assert!(
            store
                .get_account(&alice.account_id)
                .await
                .unwrap()
                .is_some()
        );
        // With a second owner the first may go.
        let bob = account(&store, "bob").await;
        join(&store, &ws, &alice, &bob, Role::Owner).await;
        store
            .delete_account(&alice.account_id, owner_draft(&alice))
            .await
            .expect("another owner remains");
        let refused = store
            .delete_account(&bob.account_id, owner_draft(&bob))
            .await;
        assert!(matches!(refused, Err(StoreError::Conflict(_))));
    }

    pub async fn two_owners_deleting_themselves_at_once_keep_one(db: &TestDb) {
        for round in 0..8 {
            let store = db.store();
            let a = account(&store, &format!("a{round}")).await;
            let b = account(&store, &format!("b{round}")).await;
            let ws = team(&store, &format!("t{round}"), &a).await;
            join(&store, &ws, &a, &b, Role::Owner).await;
            let (sa, sb) = (db.node(0), db.node(1));
            let (ra, rb) = tokio::join!(
                sa.delete_account(&a.account_id, owner_draft(&a)),
                sb.delete_account(&b.account_id, owner_draft(&b))
            );
            assert_eq!(
                [&ra, &rb].iter().filter(|r| r.is_ok()).count(),
                1,
                "round {round}: {ra:?} / {rb:?}"
            );
            let owners = store
                .list_members(&ws.workspace_id)
                .await
                .unwrap()
                .into_iter()
                .filter(|m| m.role == Role::Owner)
                .count();
            assert_eq!(owners, 1, "round {round}: the team keeps an owner");
        }
    }

    pub async fn ownerless_teams_are_found_and_repaired(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = team(&store, "crew", &alice).await;
        assert!(store.ownerless_teams().await.unwrap().is_empty());
        // As a pre-#23 race left teams: no owner membership at all.
        db.raw_execute(&format!(
            "DELETE FROM memberships WHERE workspace_id = '{}'",
            ws.workspace_id
        ))
        .await
        .unwrap();
        let other = db.other_node().await;
        let listed = other.ownerless_teams().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].workspace_id, ws.workspace_id);
        let bob = account(&store, "bob").await;
        store
            .make_team_owner(
                &ws.workspace_id,
                &bob.account_id,
                AuditDraft::new("membership.repair_owner", &Attribution::default()),
            )
            .await
            .unwrap();
        assert!(store.ownerless_teams().await.unwrap().is_empty());
        let members = store.list_members(&ws.workspace_id).await.unwrap();
        assert_eq!(members.len(), 1);
        assert_eq!(members[0].role, Role::Owner);
        // The credential cache sees the new membership at once.
        let seen = store.memberships(&bob.account_id).await.unwrap();
        assert!(
            seen.iter()
                .any(|m| m.workspace.workspace_id == ws.workspace_id)
        );
        // An unknown team is NotFound.
        assert!(matches!(
            store
                .make_team_owner("ws_nope", &bob.account_id, AuditDraft::default())
                .await,
            Err(StoreError::NotFound(_))
        ));
    }

    pub async fn quotas_hold_in_the_writing_transaction(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let who = actor(&alice.account_id);
        let quota = Quota {
            memories: 3,
            skills: 1,
            bytes: 10_000,
        };
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let node = db.node(i);
                let mut new = new_memory(
                    &alice.personal_workspace_id,
                    &who,
                    memory_content(xmemo_core::MemoryKind::Note, &format!("memory {i}")),
                );
                new.quota = Some(quota);
                let audit = AuditDraft::new("memory.remember", &who);
                tokio::spawn(async move { node.remember(new, audit).await })
            })
            .collect();
        let mut created = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(o) => {
                    assert!(o.created);
                    created += 1;
                }
                Err(StoreError::Limit(LimitReached::Quota {
                    quota, limit, used, ..
                })) => {
                    assert_eq!((quota, limit, used), ("memories", 3, 3));
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(created, 3);
        let usage = store.account_usage(&alice.account_id).await.unwrap();
        assert_eq!(usage.memories, 3);
        assert_eq!(
            usage.bytes,
            3 * "memory 0".len() as u64,
            "bytes are counted"
        );
        // Skills: one created, a new revision of it fits, a second skill does not.
        let mut first = draft("first").to_save(&alice.personal_workspace_id, "first", &who);
        first.quota = Some(quota);
        store.save_revision(first).await.unwrap();
        let mut again = draft("another body").to_save(&alice.personal_workspace_id, "first", &who);
        again.quota = Some(quota);
        store.save_revision(again).await.unwrap();
        let mut second = draft("second").to_save(&alice.personal_workspace_id, "second", &who);
        second.quota = Some(quota);
        let refused = store.save_revision(second).await;
        assert!(
            matches!(
                refused,
                Err(StoreError::Limit(LimitReached::Quota {
                    quota: "skills",
                    ..
                }))
            ),
            "{refused:?}"
        );
        assert!(
            store
                .find_skills_by_slug(std::slice::from_ref(&alice.personal_workspace_id), "second")
                .await
                .unwrap()
                .is_empty(),
            "nothing of the refused save was written"
        );
        assert_eq!(
            store.account_usage(&alice.account_id).await.unwrap().skills,
            1
        );
    }

    pub async fn invitation_bounds_hold_in_the_inviting_transaction(db: &TestDb) {
        let store = db.store();
        let vic = account(&store, "vic").await;
        let bounds = |declined_after: Option<&str>| InvitationBounds {
            max_pending_per_invitee: Some(2),
            declined_after: declined_after.map(str::to_string),
        };
        let mut teams = Vec::new();
        for i in 0..3 {
            let owner = account(&store, &format!("owner{i}")).await;
            let ws = team(&store, &format!("team{i}"), &owner).await;
            teams.push((owner, ws));
        }
        let invite = |i: usize, invitee: &str, account_id: Option<&str>, b: InvitationBounds| {
            let (owner, ws) = &teams[i];
            NewInvitation {
                workspace_id: ws.workspace_id.clone(),
                invitee: invitee.to_string(),
                account_id: account_id.map(str::to_string),
                role: Role::Member,
                invited_by: owner.account_id.clone(),
                bounds: b,
            }
        };
        let draft = || AuditDraft::new("invitation.create", &Attribution::default());
        // By handle and by id: one person, one pending invitation per team.
        store
            .create_invitation(
                invite(0, "vic", Some(&vic.account_id), bounds(None)),
                draft(),
            )
            .await
            .unwrap();
        let twice = store
            .create_invitation(
                invite(0, &vic.account_id, Some(&vic.account_id), bounds(None)),
                draft(),
            )
            .await;
        assert!(matches!(twice, Err(StoreError::Conflict(_))), "{twice:?}");
        store
            .create_invitation(
                invite(1, "vic", Some(&vic.account_id), bounds(None)),
                draft(),
            )
            .await
            .unwrap();
        // A third team: past the per-invitee bound.
        let third = store
            .create_invitation(
                invite(2, "vic", Some(&vic.account_id), bounds(None)),
                draft(),
            )
            .await;
        assert!(
            matches!(
                third,
                Err(StoreError::Limit(LimitReached::PendingInvitations {
                    limit: 2
                }))
            ),
            "{third:?}"
        );
        // Unknown handles are bounded by their spelling.
        for i in 0..2 {
            store
                .create_invitation(invite(i, "ghost", None, bounds(None)), draft())
                .await
                .unwrap();
        }
        assert!(matches!(
            store
                .create_invitation(invite(2, "ghost", None, bounds(None)), draft())
                .await,
            Err(StoreError::Limit(LimitReached::PendingInvitations { .. }))
        ));
        // A decline cools the team down.
        let pending = store.account_invitations(&vic.account_id).await.unwrap();
        let first = pending
            .iter()
            .find(|i| i.workspace_id == teams[0].1.workspace_id)
            .unwrap();
        store
            .answer_invitation(
                &first.invitation_id,
                &vic.account_id,
                InvitationAnswer::Decline,
                AuditDraft::new("invitation.decline", &actor(&vic.account_id)),
            )
            .await
            .unwrap();
        let soon = store
            .create_invitation(
                invite(
                    0,
                    "vic",
                    Some(&vic.account_id),
                    bounds(Some("2000-01-01T00:00:00.000Z")),
                ),
                draft(),
            )
            .await;
        assert!(
            matches!(
                soon,
                Err(StoreError::Limit(LimitReached::DeclinedRecently { .. }))
            ),
            "{soon:?}"
        );
        store
            .create_invitation(
                invite(
                    0,
                    "vic",
                    Some(&vic.account_id),
                    bounds(Some("2999-01-01T00:00:00.000Z")),
                ),
                draft(),
            )
            .await
            .expect("after the cool-down");
    }

    pub async fn unused_oauth_clients_expire_at_the_next_registration(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let client = |bounds: ClientBounds| NewOAuthClient {
            client_name: "C".into(),
            redirect_uris: vec!["http://127.0.0.1/cb".into()],
            token_endpoint_auth_method: "none".into(),
            secret_hash: None,
            metadata: json!({}),
            bounds,
        };
        let draft = || AuditDraft::new("oauth.register", &Attribution::default());
        let unused = store
            .create_oauth_client(client(ClientBounds::default()), draft())
            .await
            .unwrap();
        let used = store
            .create_oauth_client(client(ClientBounds::default()), draft())
            .await
            .unwrap();
        store
            .create_oauth_grant(
                NewOAuthGrant {
                    account_id: alice.account_id.clone(),
                    client_id: used.client_id.clone(),
                    client_name: "C".into(),
                    redirect_uri: "http://127.0.0.1/cb".into(),
                    scopes: vec!["memory:read".into()],
                    resource: "http://x/mcp".into(),
                    code: NewOAuthCode {
                        code_hash: "c".repeat(64),
                        code_challenge: "x".repeat(43),
                        expires_at: "2999-01-01T00:00:00.000Z".into(),
                    },
                },
                AuditDraft::new("oauth.authorize", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        // Registered "before the year 2999": the one without a grant goes.
        store
            .create_oauth_client(
                client(ClientBounds {
                    max_clients: None,
                    expire_unused_before: Some("2999-01-01T00:00:00.000Z".into()),
                }),
                draft(),
            )
            .await
            .unwrap();
        assert!(
            store
                .get_oauth_client(&unused.client_id)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .get_oauth_client(&used.client_id)
                .await
                .unwrap()
                .is_some()
        );
        // A cap counts what is left.
        let full = store
            .create_oauth_client(
                client(ClientBounds {
                    max_clients: Some(2),
                    expire_unused_before: None,
                }),
                draft(),
            )
            .await;
        assert!(
            matches!(
                full,
                Err(StoreError::Limit(LimitReached::RegisteredClients {
                    limit: 2
                }))
            ),
            "{full:?}"
        );
    }

    pub async fn signin_addresses_and_unlocks(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        assert!(
            !store
                .known_signin_address(&alice.account_id, "192.0.2.1")
                .await
                .unwrap()
        );
        for i in 0..25 {
            store
                .create_session(
                    NewWebSession {
                        session_hash: format!("{i:064}"),
                        account_id: alice.account_id.clone(),
                        created_at: format!("2030-01-01T00:00:{i:02}.000Z"),
                        idle_expires_at: "2099-01-01T00:00:00.000Z".into(),
                        absolute_expires_at: "2099-01-01T00:00:00.000Z".into(),
                    },
                    None,
                    &[&format!("192.0.2.{i}"), &format!("device:{i:064}")],
                    AuditDraft::new("session.create", &actor(&alice.account_id)),
                )
                .await
                .unwrap();
        }
        // The latest few of each kind are kept: many devices do not push the addresses out.
        let other = db.other_node().await;
        for origin in ["192.0.2.24", "192.0.2.5", &format!("device:{:064}", 24)] {
            assert!(
                other
                    .known_signin_address(&alice.account_id, origin)
                    .await
                    .unwrap(),
                "{origin}"
            );
        }
        assert!(
            !store
                .known_signin_address(&alice.account_id, &format!("device:{:064}", 4))
                .await
                .unwrap()
        );
        assert!(
            !store
                .known_signin_address(&alice.account_id, "192.0.2.0")
                .await
                .unwrap()
        );
        assert!(
            store
                .signin_unlocked_at(&alice.account_id)
                .await
                .unwrap()
                .is_none()
        );
        store
            .unlock_signin(
                &alice.account_id,
                "2030-01-02T00:00:00.000Z",
                AuditDraft::new("account.signin.unlock", &Attribution::default()),
            )
            .await
            .unwrap();
        assert_eq!(
            store
                .signin_unlocked_at(&alice.account_id)
                .await
                .unwrap()
                .as_deref(),
            Some("2030-01-02T00:00:00.000Z")
        );
        assert!(matches!(
            store
                .unlock_signin(
                    "acct_nope",
                    "2030-01-02T00:00:00.000Z",
                    AuditDraft::default()
                )
                .await,
            Err(StoreError::NotFound(_))
        ));
    }
}

/// Issue #23 (11): the full-text log is pruned; a node or an embedding worker that lagged
/// past the pruned point notices and reads every row again.
mod log_cases {
    use super::*;

    /// An instant far ahead: every embedding model counts as idle before it.
    const FAR_AHEAD: &str = "2999-01-01T00:00:00.000Z";

    async fn memories(store: &DynStore, ws: &str, who: &Attribution, n: usize, word: &str) {
        for i in 0..n {
            remember(
                store,
                new_memory(
                    ws,
                    who,
                    memory_content(xmemo_core::MemoryKind::Fact, &format!("{word} note {i}")),
                ),
            )
            .await;
        }
    }

    async fn recalled(store: &DynStore, ws: &str, text: &str) -> Vec<String> {
        let mut q = memory_query(&[ws]);
        q.text = Some(text.into());
        let mut found: Vec<String> = store
            .recall_memories(&q)
            .await
            .unwrap()
            .into_iter()
            .map(|h| h.memory.content)
            .collect();
        found.sort();
        found
    }

    /// Issue #29 defect 7: who pays for keeping a node's search current. A write applies
    /// its own rows on its node before it answers (the next query there applies nothing);
    /// another node applies them with its follower (`follow_search_log`), or, when a query
    /// comes first, in that query.
    pub async fn writes_are_indexed_by_their_writer_and_other_nodes_by_their_follower(db: &TestDb) {
        let a = db.store();
        let b = db.fresh_node().await;
        let c = db.fresh_node().await;
        let alice = account(&a, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        for node in [&a, &b, &c] {
            node.warm_search().await.unwrap();
            assert!(node.search_stats().ready);
        }
        let recall = |store: DynStore, text: &'static str| {
            let ws = ws.clone();
            async move {
                let mut q = memory_query(&[&ws]);
                q.text = Some(text.into());
                store.recall_memories(&q).await.unwrap().len()
            }
        };
        for i in 0..3 {
            remember(
                &a,
                new_memory(
                    &ws,
                    &who,
                    memory_content(xmemo_core::MemoryKind::Note, &format!("zqtide number {i}")),
                ),
            )
            .await;
        }
        let on_a = a.search_stats();
        assert_eq!(on_a.applied_by_writers, 3, "{on_a:?}");
        assert_eq!(recall(a.clone(), "zqtide").await, 3);
        assert_eq!(a.search_stats().applied_by_queries, 0);
        // Node b's follower applies them; its query then applies nothing.
        b.follow_search_log().await.unwrap();
        assert_eq!(b.search_stats().applied_by_follower, 3);
        assert_eq!(recall(b.clone(), "zqtide").await, 3);
        assert_eq!(b.search_stats().applied_by_queries, 0);
        // Node c's first query comes before its follower: that query applies them.
        assert_eq!(recall(c.clone(), "zqtide").await, 3);
        assert_eq!(c.search_stats().applied_by_queries, 3);
        assert_eq!(c.search_stats().builds, 1);
    }

    /// Issue #29, defect 7: the first search after a restart built the indexes on its own
    /// path (19.2 s for 11,185 memories of 16 KiB). Now it waits a second for the build the
    /// server started, then is answered `Warming` (503, retryable) while the build goes on.
    pub async fn a_search_waits_briefly_for_the_first_build_then_is_told_to_come_back(db: &TestDb) {
        let a = db.store();
        let alice = account(&a, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        memories(&a, &ws, &who, 3, "zqwarm").await;
        let b = db.fresh_node().await;
        // A build that does not finish: polled once, so it holds the build's place, then
        // left pending (as a long build of a large database would be).
        let mut stalled = Box::pin(b.warm_search());
        let first_poll =
            std::future::poll_fn(|cx| std::task::Poll::Ready(stalled.as_mut().poll(cx).is_ready()))
                .await;
        assert!(
            !first_poll,
            "the build finished in one poll: nothing was held"
        );
        assert!(!b.search_stats().ready);
        let asked = std::time::Instant::now();
        let mut q = memory_query(&[&ws]);
        q.text = Some("zqwarm".into());
        let refused = b.recall_memories(&q).await;
        let waited = asked.elapsed();
        assert!(
            matches!(refused, Err(StoreError::Warming(_))),
            "{:?}",
            refused.map(|hits| hits.len())
        );
        assert!(
            StoreError::Warming(String::new()).is_retryable(),
            "a client may try again"
        );
        assert!(waited < std::time::Duration::from_secs(10), "{waited:?}");
        // The held build goes; the one the search started finishes on its own task.
        drop(stalled);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !b.search_stats().ready {
            assert!(std::time::Instant::now() < deadline, "never built");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(recalled(&b, &ws, "zqwarm").await.len(), 3);
        assert_eq!(b.search_stats().builds, 1);
    }

    pub async fn a_node_that_lagged_past_the_pruned_log_rebuilds(db: &TestDb) {
        let a = db.store();
        let b = db.other_node().await;
        let alice = account(&a, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let old = save(
            &a,
            &alice,
            "zqold",
            draft("x")
                .named("Zqold runbook", "About the old way")
                .status(RevisionStatus::Published),
        )
        .await;
        memories(&a, &ws, &who, 1, "zqkept").await;
        // Node b builds its indexes now, then sees nothing while node a writes.
        assert_eq!(slugs(&search(&b, "zqold", &[&ws]).await), ["zqold"]);
        assert_eq!(recalled(&b, &ws, "zqkept").await, ["zqkept note 0"]);
        save(
            &a,
            &alice,
            "zqnew",
            draft("y")
                .named("Zqnew runbook", "About the new way")
                .status(RevisionStatus::Published),
        )
        .await;
        a.set_asset_status(
            &old.skill.skill_id,
            AssetStatus::Archived,
            AuditDraft::new("skill.archive", &who).skill(&old.skill.skill_id),
        )
        .await
        .unwrap();
        memories(&a, &ws, &who, 2, "zqlater").await;
        // Everything node b has not applied goes.
        let pruned = a.prune_fulltext_log(0, FAR_AHEAD).await.unwrap();
        assert!(pruned.deleted >= 4, "{pruned:?}");
        assert_eq!(pruned.kept, 0, "{pruned:?}");
        assert!(pruned.pruned_through > 0, "{pruned:?}");
        // A second prune finds nothing more to do.
        let again = a.prune_fulltext_log(0, FAR_AHEAD).await.unwrap();
        assert_eq!((again.deleted, again.kept), (0, 0), "{again:?}");
        assert_eq!(again.pruned_through, pruned.pruned_through);
        // Node b cannot catch up from the log. Its queries do not rebuild (issue #29, defect
        // 7: no request waits for a build): they answer from its indexes as they are...
        assert!(recalled(&b, &ws, "zqlater").await.is_empty());
        assert_eq!(b.search_stats().builds, 1);
        // ...until its follower rebuilds them; then it answers as node a does.
        b.follow_search_log().await.unwrap();
        assert_eq!(b.search_stats().builds, 2);
        assert!(search(&b, "zqold", &[&ws]).await.is_empty());
        assert_eq!(slugs(&search(&b, "zqnew", &[&ws]).await), ["zqnew"]);
        assert_eq!(
            recalled(&b, &ws, "zqlater").await,
            ["zqlater note 0", "zqlater note 1"]
        );
        assert_eq!(recalled(&b, &ws, "zqkept").await, ["zqkept note 0"]);
        // And it keeps following the log after its rebuild.
        memories(&a, &ws, &who, 1, "zqafter").await;
        assert_eq!(recalled(&b, &ws, "zqafter").await, ["zqafter note 0"]);
        assert_eq!(slugs(&search(&a, "zqnew", &[&ws]).await), ["zqnew"]);
    }

    pub async fn pruning_keeps_the_newest_entries_and_what_a_live_model_needs(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        memories(&store, &ws, &who, 30, "zqfirst").await;
        let first = store.prune_fulltext_log(10, FAR_AHEAD).await.unwrap();
        assert!(first.deleted >= 20, "{first:?}");
        assert!(first.kept <= 10, "{first:?}");
        // A model whose worker holds a live lease pins the log at its position.
        let lease = "2999-01-01T00:00:00.000Z";
        let work = store
            .embedding_work("zq-model", "node-a", lease, 100)
            .await
            .unwrap()
            .expect("a free lease");
        let position = work.from.done_seq;
        assert!(position > first.pruned_through, "{work:?}");
        // Its backfill done: from now on it reads the log past its position.
        let caught_up = EmbeddingProgress {
            done_seq: position,
            backfill_until: position,
            backfill: None,
        };
        assert!(
            store
                .embedding_save("zq-model", "node-a", &[], &[], &caught_up)
                .await
                .unwrap()
        );
        memories(&store, &ws, &who, 20, "zqsecond").await;
        let now = now();
        let pinned = store.prune_fulltext_log(0, &now).await.unwrap();
        assert_eq!(pinned.pruned_through, position, "{pinned:?}");
        assert!(pinned.kept >= 20, "{pinned:?}");
        // Once the model counts as idle it holds nothing back...
        let all = store.prune_fulltext_log(0, FAR_AHEAD).await.unwrap();
        assert_eq!(all.kept, 0, "{all:?}");
        assert!(all.pruned_through > position, "{all:?}");
        // ...and its worker, back, embeds every row again from the start.
        let back = store
            .embedding_work("zq-model", "node-a", lease, 100)
            .await
            .unwrap()
            .expect("its own lease");
        assert_eq!(
            back.from.backfill,
            Some((EmbeddingKind::Skill, String::new())),
            "{:?}",
            back.from
        );
        assert!(back.from.done_seq >= all.pruned_through, "{:?}", back.from);
    }
}

mod memory_cases {
    use super::*;
    use xmemo_core::{MemoryKind, MemoryStatus};

    pub async fn memories_remember_and_identical_content(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.as_str();
        let who = actor(&alice.account_id);
        let mut c = memory_content(MemoryKind::Preference, "Use tabs, not spaces.");
        c.title = Some("Indentation".into());
        c.tags = vec!["style".into(), "editor".into()];
        c.project = Some("xmemo".into());
        let first = remember(&store, new_memory(ws, &who, c.clone())).await;
        assert!(first.created);
        let m = &first.memory;
        assert!(m.memory_id.starts_with("mem_"));
        assert_eq!((m.version, m.status), (1, MemoryStatus::Active));
        assert_eq!(m.tags, ["style", "editor"]);
        assert_eq!(m.project.as_deref(), Some("xmemo"));
        assert_eq!(m.attribution, who);
        assert_eq!(
            store.get_memory(&m.memory_id).await.unwrap().as_ref(),
            Some(m)
        );

        // The same content again (an agent retrying) creates nothing, wherever it comes from.
        let before = store.table_counts().await.unwrap();
        let again = remember(&store, new_memory(ws, &actor("someone-else"), c.clone())).await;
        assert!(!again.created);
        assert_eq!(again.memory, first.memory);
        assert_eq!(store.table_counts().await.unwrap(), before);

        // Another kind, another project or no project are other memories.
        let mut other_kind = c.clone();
        other_kind.kind = MemoryKind::Fact;
        assert!(
            remember(&store, new_memory(ws, &who, other_kind))
                .await
                .created
        );
        let mut other_project = c.clone();
        other_project.project = Some("other".into());
        assert!(
            remember(&store, new_memory(ws, &who, other_project))
                .await
                .created
        );
        let mut no_project = c.clone();
        no_project.project = None;
        let none = remember(&store, new_memory(ws, &who, no_project)).await;
        assert!(none.created);
        assert_eq!(none.memory.project, None);
        // Another workspace too.
        let bob = account(&store, "bob").await;
        let bobs = new_memory(
            &bob.personal_workspace_id,
            &actor(&bob.account_id),
            c.clone(),
        );
        assert!(remember(&store, bobs).await.created);

        let history = store
            .memory_history(std::slice::from_ref(&m.memory_id))
            .await
            .unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].content, "Use tabs, not spaces.");
        let audit = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(
            audit
                .iter()
                .filter(|e| e.action == "memory.remember")
                .count(),
            5
        );
        assert_eq!(verify_audit_chain(&audit), Ok(()));
    }

    pub async fn memories_update_keeps_history_and_is_compare_and_set(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.as_str();
        let first = remember(
            &store,
            new_memory(
                ws,
                &actor(&alice.account_id),
                memory_content(MemoryKind::Todo, "Write the tests"),
            ),
        )
        .await
        .memory;
        let editor = Attribution {
            agent_instance_id: Some("instance-2".into()),
            ..actor(&alice.account_id)
        };
        let mut next = memory_content(MemoryKind::Progress, "Wrote the tests; CI next");
        next.tags = vec!["ci".into()];
        let update = |expected: i64, content: xmemo_core::memory::MemoryContent| MemoryUpdate {
            memory_id: first.memory_id.clone(),
            expected_version: expected,
            content_hash: xmemo_core::memory::memory_content_hash(&content.content),
            content,
            attribution: editor.clone(),
            audit: AuditDraft::new("memory.update", &editor).workspace(ws),
            quota: None,
        };
        let updated = store.update_memory(update(1, next.clone())).await.unwrap();
        assert_eq!(updated.version, 2);
        assert_eq!(updated.kind, MemoryKind::Progress);
        assert_eq!(updated.content, "Wrote the tests; CI next");
        assert_eq!(updated.tags, ["ci"]);
        // The memory keeps who remembered it; the version says who wrote it.
        assert_eq!(updated.attribution, first.attribution);
        assert!(updated.updated_at >= first.updated_at);

        let before = store.table_counts().await.unwrap();
        conflict(
            store
                .update_memory(update(1, memory_content(MemoryKind::Note, "stale")))
                .await,
        );
        assert_eq!(store.table_counts().await.unwrap(), before);
        assert_eq!(
            store.get_memory(&first.memory_id).await.unwrap().unwrap(),
            updated
        );

        let missing = store
            .update_memory(MemoryUpdate {
                memory_id: "mem_missing".into(),
                ..update(1, next.clone())
            })
            .await;
        assert!(
            matches!(missing, Err(StoreError::NotFound(_))),
            "{missing:?}"
        );

        let history = store
            .memory_history(std::slice::from_ref(&first.memory_id))
            .await
            .unwrap();
        let versions: Vec<(i64, &str, Option<&str>)> = history
            .iter()
            .map(|v| {
                (
                    v.version,
                    v.content.as_str(),
                    v.attribution.agent_instance_id.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            versions,
            [
                (1, "Write the tests", Some("instance-1")),
                (2, "Wrote the tests; CI next", Some("instance-2"))
            ]
        );
        // Tags follow the update (filtering sees the new ones only).
        let mut q = memory_query(&[ws]);
        q.tags = vec!["ci".into()];
        assert_eq!(store.recall_memories(&q).await.unwrap().len(), 1);
    }

    pub async fn memories_forget_and_restore(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.as_str();
        let who = actor(&alice.account_id);
        let c = memory_content(MemoryKind::Decision, "We ship on Tuesdays");
        let m = remember(&store, new_memory(ws, &who, c.clone()))
            .await
            .memory;
        let change = |from, to, reason: Option<&str>| MemoryStatusChange {
            memory_id: m.memory_id.clone(),
            from,
            to,
            reason: reason.map(str::to_string),
            audit: AuditDraft::new("memory.status", &who).workspace(ws),
        };
        let forgotten = store
            .set_memory_status(change(
                MemoryStatus::Active,
                MemoryStatus::Forgotten,
                Some("wrong day"),
            ))
            .await
            .unwrap();
        assert_eq!(forgotten.status, MemoryStatus::Forgotten);
        assert_eq!(forgotten.forgotten_reason.as_deref(), Some("wrong day"));
        assert!(forgotten.forgotten_at.is_some());
        assert!(
            store
                .recall_memories(&memory_query(&[ws]))
                .await
                .unwrap()
                .is_empty()
        );
        let mut with_forgotten = memory_query(&[ws]);
        with_forgotten.include_forgotten = true;
        assert_eq!(
            store.recall_memories(&with_forgotten).await.unwrap().len(),
            1
        );

        let before = store.table_counts().await.unwrap();
        conflict(
            store
                .set_memory_status(change(MemoryStatus::Active, MemoryStatus::Forgotten, None))
                .await,
        );
        assert_eq!(store.table_counts().await.unwrap(), before);

        // A forgotten memory no longer blocks the same content.
        let replacement = remember(&store, new_memory(ws, &who, c.clone())).await;
        assert!(replacement.created);
        // …and cannot be restored beside it.
        conflict(
            store
                .set_memory_status(change(MemoryStatus::Forgotten, MemoryStatus::Active, None))
                .await,
        );
        let r = &replacement.memory;
        store
            .set_memory_status(MemoryStatusChange {
                memory_id: r.memory_id.clone(),
                ..change(MemoryStatus::Active, MemoryStatus::Forgotten, None)
            })
            .await
            .unwrap();
        let restored = store
            .set_memory_status(change(MemoryStatus::Forgotten, MemoryStatus::Active, None))
            .await
            .unwrap();
        assert_eq!(restored.status, MemoryStatus::Active);
        assert_eq!(restored.forgotten_reason, None);
        conflict(
            store
                .set_memory_status(change(MemoryStatus::Forgotten, MemoryStatus::Active, None))
                .await,
        );
        // Updating a forgotten memory is refused.
        let forgotten_update = store
            .update_memory(MemoryUpdate {
                memory_id: r.memory_id.clone(),
                expected_version: 1,
                content: c.clone(),
                content_hash: xmemo_core::memory::memory_content_hash(&c.content),
                attribution: who.clone(),
                audit: AuditDraft::new("memory.update", &who),
                quota: None,
            })
            .await;
        conflict(forgotten_update);
        let missing = store
            .set_memory_status(MemoryStatusChange {
                memory_id: "mem_missing".into(),
                ..change(MemoryStatus::Active, MemoryStatus::Forgotten, None)
            })
            .await;
        assert!(
            matches!(missing, Err(StoreError::NotFound(_))),
            "{missing:?}"
        );
    }

    pub async fn memories_recall_ranks_and_filters(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let ws = alice.personal_workspace_id.as_str();
        let who = actor(&alice.account_id);
        let other_instance = Attribution {
            agent_instance_id: Some("runner-7".into()),
            ..who.clone()
        };
        let mut titled = memory_content(MemoryKind::Fact, "The staging database is on port 5433.");
        titled.title = Some("Deploy target".into());
        titled.project = Some("shop".into());
        titled.tags = vec!["deploy".into(), "infra".into()];
        let titled = remember(&store, new_memory(ws, &who, titled)).await.memory;
        let mut body = memory_content(
            MemoryKind::Note,
            "Remember to deploy after the freeze ends.",
        );
        body.tags = vec!["deploy".into()];
        let body = remember(&store, new_memory(ws, &other_instance, body))
            .await
            .memory;
        let mut expired = new_memory(
            ws,
            &who,
            memory_content(MemoryKind::Todo, "deploy the hotfix"),
        );
        expired.expires_at = Some("2000-01-01T00:00:00.000Z".into());
        remember(&store, expired).await;
        let mut future = new_memory(
            ws,
            &who,
            memory_content(MemoryKind::Todo, "deploy the release"),
        );
        future.expires_at = Some("2999-01-01T00:00:00.000Z".into());
        let future = remember(&store, future).await.memory;
        let bobs = memory_content(MemoryKind::Fact, "Bob deploys on Fridays");
        remember(
            &store,
            new_memory(&bob.personal_workspace_id, &actor(&bob.account_id), bobs),
        )
        .await;

        let ids = |hits: Vec<MemoryHit>| -> Vec<String> {
            hits.into_iter().map(|h| h.memory.memory_id).collect()
        };
        let mut q = memory_query(&[ws]);
        q.text = Some("deploy".into());
        let hits = store.recall_memories(&q).await.unwrap();
        // The title and tag hit ranks above content-only hits; the expired one and Bob's are
        // not recalled.
        assert_eq!(hits.len(), 3, "{hits:?}");
        assert_eq!(hits[0].memory.memory_id, titled.memory_id);
        assert!(hits.iter().all(|h| h.score > 0.0));
        assert!(hits[0].score >= hits[2].score);
        let mut found = ids(hits);
        found.sort();
        let mut expected = vec![
            titled.memory_id.clone(),
            body.memory_id.clone(),
            future.memory_id.clone(),
        ];
        expected.sort();
        assert_eq!(found, expected);

        let mut q = memory_query(&[ws]);
        q.text = Some("port 5433".into());
        assert_eq!(
            ids(store.recall_memories(&q).await.unwrap()),
            vec![titled.memory_id.clone()]
        );
        // An inflected last word finds its stem (SQLite's porter tokenizer stems prefix terms;
        // PostgreSQL matches it stemmed beside its prefix).
        q.text = Some("freezes".into());
        let inflected = ids(store.recall_memories(&q).await.unwrap());
        assert!(inflected.contains(&body.memory_id), "{inflected:?}");
        q.text = Some("  ** ".into());
        assert!(store.recall_memories(&q).await.unwrap().is_empty());

        let mut q = memory_query(&[ws]);
        q.kind = Some(MemoryKind::Note);
        assert_eq!(
            ids(store.recall_memories(&q).await.unwrap()),
            vec![body.memory_id.clone()]
        );
        let mut q = memory_query(&[ws]);
        q.tags = vec!["deploy".into(), "infra".into()];
        assert_eq!(
            ids(store.recall_memories(&q).await.unwrap()),
            vec![titled.memory_id.clone()]
        );
        let mut q = memory_query(&[ws]);
        q.project = Some("shop".into());
        assert_eq!(
            ids(store.recall_memories(&q).await.unwrap()),
            vec![titled.memory_id.clone()]
        );
        let mut q = memory_query(&[ws]);
        q.agent_instance_id = Some("runner-7".into());
        assert_eq!(
            ids(store.recall_memories(&q).await.unwrap()),
            vec![body.memory_id.clone()]
        );
        let mut q = memory_query(&[ws]);
        q.since = Some("2999-01-01T00:00:00.000Z".into());
        assert!(store.recall_memories(&q).await.unwrap().is_empty());
        q.since = None;
        q.until = Some("2000-01-01T00:00:00.000Z".into());
        assert!(store.recall_memories(&q).await.unwrap().is_empty());

        // Without text: most recent first, bounded by the limit.
        let mut q = memory_query(&[ws]);
        let all = store.recall_memories(&q).await.unwrap();
        assert_eq!(all.len(), 3);
        assert!(
            all.windows(2)
                .all(|w| w[0].memory.updated_at >= w[1].memory.updated_at)
        );
        q.limit = 2;
        assert_eq!(store.recall_memories(&q).await.unwrap().len(), 2);
        // Both workspaces at once; none at all.
        let mut q = memory_query(&[ws, &bob.personal_workspace_id]);
        q.text = Some("fridays".into());
        assert_eq!(store.recall_memories(&q).await.unwrap().len(), 1);
        assert!(
            store
                .recall_memories(&memory_query(&[]))
                .await
                .unwrap()
                .is_empty()
        );
        let page = store.memory_page(&[ws.to_string()], None, 2).await.unwrap();
        assert_eq!(page.len(), 2);
        let rest = store
            .memory_page(&[ws.to_string()], Some(&page[1].memory_id), 10)
            .await
            .unwrap();
        assert_eq!(page.len() + rest.len(), 4);
        // What an empty recall reports: the recallable memories, whatever the filters (the
        // expired one and Bob's are not counted unless his workspace is searched too).
        assert_eq!(
            store
                .count_recallable_memories(&[ws.to_string()], &now())
                .await
                .unwrap(),
            3
        );
        assert_eq!(
            store
                .count_recallable_memories(
                    &[ws.to_string(), bob.personal_workspace_id.clone()],
                    &now()
                )
                .await
                .unwrap(),
            4
        );
        assert_eq!(
            store.count_recallable_memories(&[], &now()).await.unwrap(),
            0
        );
    }

    pub async fn memories_concurrent_updates_one_wins(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.clone();
        let who = actor(&alice.account_id);
        let m = remember(
            &store,
            new_memory(&ws, &who, memory_content(MemoryKind::Note, "v1")),
        )
        .await
        .memory;
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let node = db.node(i);
                let who = who.clone();
                let id = m.memory_id.clone();
                tokio::spawn(async move {
                    let content = memory_content(MemoryKind::Note, &format!("v2 from {i}"));
                    node.update_memory(MemoryUpdate {
                        memory_id: id,
                        expected_version: 1,
                        content_hash: xmemo_core::memory::memory_content_hash(&content.content),
                        content,
                        attribution: who.clone(),
                        audit: AuditDraft::new("memory.update", &who),
                        quota: None,
                    })
                    .await
                })
            })
            .collect();
        let mut wins = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(m) => {
                    assert_eq!(m.version, 2);
                    wins += 1;
                }
                Err(StoreError::Conflict(_) | StoreError::Contention(_)) => {}
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert_eq!(wins, 1);
        assert_eq!(
            store
                .memory_history(std::slice::from_ref(&m.memory_id))
                .await
                .unwrap()
                .len(),
            2
        );
    }
}

mod deletion_cases {
    use super::*;

    pub async fn account_deletion_leaves_nothing_behind(db: &TestDb) {
        let store = db.store();
        let keeper = account(&store, "keeper").await;
        let shared = component(
            "references/shared.md",
            ComponentType::Reference,
            b"shared bytes",
        );
        save(
            &store,
            &keeper,
            "kept",
            draft("kept").components(vec![shared.clone()]),
        )
        .await;
        let team = store
            .create_team(
                NewTeam {
                    handle: "crew".into(),
                    name: "Crew".into(),
                    owner_account_id: keeper.account_id.clone(),
                },
                AuditDraft::new("workspace.create", &actor(&keeper.account_id)),
            )
            .await
            .unwrap();
        let before = store.table_counts().await.unwrap();

        let leaver = account(&store, "leaver").await;
        let who = actor(&leaver.account_id);
        join(&store, &team, &keeper, &leaver, Role::Member).await;
        save(
            &store,
            &leaver,
            "mine",
            draft("mine")
                .components(vec![
                    shared.clone(),
                    component("scripts/own.py", ComponentType::Script, b"print(1)"),
                ])
                .status(RevisionStatus::Published),
        )
        .await;
        save(&store, &leaver, "mine", draft("mine v2")).await;
        let ws = leaver.personal_workspace_id.as_str();
        let mut m = memory_content(xmemo_core::MemoryKind::Note, "my note");
        m.tags = vec!["mine".into()];
        let note = remember(&store, new_memory(ws, &who, m)).await.memory;
        store
            .create_api_key(
                NewApiKey {
                    account_id: leaver.account_id.clone(),
                    name: "k".into(),
                    prefix: "xmk_leaver".into(),
                    key_hash: "h-leaver".into(),
                    scopes: vec!["memory:read".into()],
                    profile: "ordinary-full".into(),
                    expires_at: None,
                },
                AuditDraft::new("key.create", &who),
            )
            .await
            .unwrap();
        // A memory it saved in the team stays with the team.
        let team_note = remember(
            &store,
            new_memory(
                &team.workspace_id,
                &who,
                memory_content(xmemo_core::MemoryKind::Fact, "team fact"),
            ),
        )
        .await
        .memory;

        let report = store
            .delete_account(&leaver.account_id, AuditDraft::new("account.delete", &who))
            .await
            .unwrap();
        assert_eq!(
            report,
            AccountDeletion {
                skills: 1,
                memories: 1,
                keys: 1,
                memberships: 2,
                blobs: 1,
            }
        );
        let mut after = store.table_counts().await.unwrap();
        let mut expected = before.clone();
        // The team memory (with its version) remains; the audit log only grows.
        *expected.get_mut("memories").unwrap() += 1;
        *expected.get_mut("memory_versions").unwrap() += 1;
        assert!(after["audit_log"] > before["audit_log"]);
        after.remove("audit_log");
        expected.remove("audit_log");
        assert_eq!(after, expected);
        assert_eq!(store.get_account(&leaver.account_id).await.unwrap(), None);
        assert_eq!(store.find_account_by_handle("leaver").await.unwrap(), None);
        assert_eq!(store.get_workspace(ws).await.unwrap(), None);
        assert_eq!(store.get_memory(&note.memory_id).await.unwrap(), None);
        assert_eq!(store.find_api_key_by_hash("h-leaver").await.unwrap(), None);
        let kept = store
            .get_memory(&team_note.memory_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(kept.account_handle, None);
        assert_eq!(kept.attribution.account_id, leaver.account_id);
        assert!(search(&store, "mine", &[ws]).await.is_empty());
        let members = store.list_members(&team.workspace_id).await.unwrap();
        assert_eq!(members.len(), 1);
        let audit = store.list_audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(verify_audit_chain(&audit), Ok(()));
        assert_eq!(
            audit.last().map(|e| e.action.as_str()),
            Some("account.delete")
        );
        // The shared blob is still readable through the keeper's revision.
        let kept_skill = store
            .find_skills_by_slug(std::slice::from_ref(&keeper.personal_workspace_id), "kept")
            .await
            .unwrap();
        let rev = store
            .latest_revision(&kept_skill[0].skill_id)
            .await
            .unwrap()
            .unwrap();
        assert!(
            store
                .component_bytes(&rev.revision_id, "references/shared.md")
                .await
                .unwrap()
                .is_some()
        );
        let missing = store
            .delete_account(&leaver.account_id, AuditDraft::new("account.delete", &who))
            .await;
        assert!(
            matches!(missing, Err(StoreError::NotFound(_))),
            "{missing:?}"
        );
    }
}

mod postgres_only {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn migrations_are_idempotent_and_safe_to_race() {
        let Some((options, _guard)) = postgres_fresh_database().await else {
            return;
        };
        let a = PostgresStore::connect_with(options.clone(), test_pool_settings())
            .await
            .unwrap();
        let b = PostgresStore::connect_with(options.clone(), test_pool_settings())
            .await
            .unwrap();
        assert!(!a.schema_is_current().await.unwrap());
        let (ra, rb) = tokio::join!(a.migrate(), b.migrate());
        ra.unwrap();
        rb.unwrap();
        assert!(a.schema_is_current().await.unwrap());
        a.migrate().await.unwrap();
        let mut c = PgConnection::connect_with(&options).await.unwrap();
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM schema_migrations")
            .fetch_one(&mut c)
            .await
            .unwrap();
        // One row per embedded migration, each applied once.
        let embedded = <xmemo_store::postgres::Postgres as xmemo_store::sql::Dialect>::MIGRATIONS;
        assert!(embedded.len() >= 3, "0001_init … 0003_invitations");
        assert_eq!(n, embedded.len() as i64);
        a.close().await;
        b.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_database_is_dropped_even_when_the_test_panics() {
        let Some((_admin, mut conn)) = postgres_admin().await else {
            return;
        };
        let name = Arc::new(std::sync::Mutex::new(String::new()));
        let slot = name.clone();
        let failing = tokio::spawn(async move {
            let (options, _guard) = postgres_fresh_database().await.unwrap();
            *slot.lock().unwrap() = options.get_database().unwrap().to_string();
            let store = PostgresStore::connect_with(options, test_pool_settings())
                .await
                .unwrap();
            store.migrate().await.unwrap(); // leaves pooled connections open
            panic!("deliberate failure to exercise the drop guard");
        });
        assert!(failing.await.unwrap_err().is_panic());
        let name = name.lock().unwrap().clone();
        assert!(name.starts_with("xmemo_t_"), "{name}");
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(&name)
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert!(!exists, "{name} was left behind");
    }

    /// A serialization failure in the middle of a snapshot import (forced here by a trigger
    /// raising SQLSTATE 40001 on the first revision row) is reported as retryable contention,
    /// writes nothing, and the same import succeeds when tried again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serialization_failure_during_snapshot_import_is_retryable() {
        let source = sqlite_db().await;
        let store = source.store();
        let alice = account(&store, "alice").await;
        save(&store, &alice, "copied", draft("body")).await;
        let snap = xmemo_store::snapshot::export_snapshot(store.as_ref())
            .await
            .unwrap();
        assert!(!snap.revisions.is_empty());

        let Some(target) = postgres_db().await else {
            return;
        };
        target
            .raw_execute(
                "CREATE FUNCTION fail_serialization() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = 'serialization_failure'; END $$",
            )
            .await
            .unwrap();
        target
            .raw_execute(
                "CREATE TRIGGER revisions_fail BEFORE INSERT ON revisions FOR EACH ROW EXECUTE FUNCTION fail_serialization()",
            )
            .await
            .unwrap();
        let pg = target.store();
        let before = pg.table_counts().await.unwrap();
        let err = pg.import_snapshot(&snap).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Contention(_)) && err.is_retryable(),
            "expected retryable contention, got {err:?}"
        );
        assert_eq!(pg.table_counts().await.unwrap(), before);
        assert!(before.values().all(|n| *n == 0), "{before:?}");

        target
            .raw_execute("DROP TRIGGER revisions_fail ON revisions")
            .await
            .unwrap();
        pg.import_snapshot(&snap).await.unwrap();
        assert_eq!(
            pg.table_counts().await.unwrap()["revisions"],
            snap.revisions.len() as u64
        );
    }

    #[tokio::test]
    async fn connect_and_migrate_by_url() {
        let Some((options, _guard)) = postgres_fresh_database().await else {
            return;
        };
        let url = format!(
            "postgres://{}@{}:{}/{}",
            options.get_username(),
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap()
        );
        let store = PostgresStore::connect_and_migrate(&url, PgPoolSettings::default())
            .await
            .unwrap();
        assert!(store.schema_is_current().await.unwrap());
        store.ping().await.unwrap();
        assert_eq!(store.backend(), "postgres");
        store.close().await;
    }

    #[tokio::test]
    async fn unreachable_server_is_unavailable_without_the_password() {
        let url = "postgres://xmemo:sup3r%2Fsecret@127.0.0.1:1/xmemo?password=other-s3cret";
        let settings = PgPoolSettings {
            connect_timeout: Duration::from_secs(5),
            ..Default::default()
        };
        match PostgresStore::connect(url, settings.clone()).await {
            Err(StoreError::Unavailable(m)) => {
                eprintln!("unreachable: {m}");
                assert!(!m.contains("sup3r") && !m.contains("other-s3cret"), "{m}");
                assert!(m.contains("127.0.0.1:1"), "{m}");
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
        for bad in [
            "postgres://xmemo:sup3rsecret@127.0.0.1:notaport/xmemo",
            "postgres://xmemo:sup3rsecret/x?y@127.0.0.1:1/xmemo",
            "postgresql://xmemo:sup3rsecret@127.0.0.1:1/xmemo",
            "mysql://xmemo:sup3rsecret@127.0.0.1/xmemo",
            "not a url sup3rsecret",
        ] {
            match PostgresStore::connect(bad, settings.clone()).await {
                Err(StoreError::Unavailable(m)) => {
                    eprintln!("invalid: {m}");
                    assert!(!m.contains("sup3rsecret"), "{m}");
                }
                other => panic!("expected Unavailable for {bad}, got {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn unknown_database_is_unavailable() {
        let Some((admin, _conn)) = postgres_admin().await else {
            return;
        };
        let options = admin.database("xmemo_t_does_not_exist");
        match PostgresStore::connect_with(options, PgPoolSettings::default()).await {
            Err(StoreError::Unavailable(m)) => {
                eprintln!("unknown database: {m}");
                assert!(m.contains("does not exist"), "{m}");
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }
}

mod signin_cases {
    use super::*;

    fn hash(c: char) -> String {
        c.to_string().repeat(64)
    }

    fn session(account: &Account, id: char, idle: &str, absolute: &str) -> NewWebSession {
        NewWebSession {
            session_hash: hash(id),
            account_id: account.account_id.clone(),
            created_at: now(),
            idle_expires_at: idle.into(),
            absolute_expires_at: absolute.into(),
        }
    }

    const LATER: &str = "2099-01-01T00:00:00.000Z";
    const MUCH_LATER: &str = "2099-06-01T00:00:00.000Z";
    const PAST: &str = "2001-01-01T00:00:00.000Z";

    async fn audit_len(store: &DynStore) -> usize {
        store
            .list_audit(&AuditFilter::default())
            .await
            .unwrap()
            .len()
    }

    fn new_grant(account: &Account, client: &str, code: &str, expires_at: &str) -> NewOAuthGrant {
        NewOAuthGrant {
            account_id: account.account_id.clone(),
            client_id: client.into(),
            client_name: format!("{client} app"),
            redirect_uri: "http://127.0.0.1/callback".into(),
            scopes: vec!["memory:read".into(), "memory:write".into()],
            resource: "http://127.0.0.1:8420/mcp".into(),
            code: NewOAuthCode {
                code_hash: code.into(),
                code_challenge: "challenge".into(),
                expires_at: expires_at.into(),
            },
        }
    }

    fn tokens(access: &str, refresh: &str, expires_at: &str) -> Vec<NewOAuthToken> {
        let token = |h: &str, kind| NewOAuthToken {
            token_hash: h.into(),
            kind,
            scopes: vec!["memory:read".into()],
            expires_at: expires_at.into(),
        };
        vec![
            token(access, OAuthTokenKind::Access),
            token(refresh, OAuthTokenKind::Refresh),
        ]
    }

    fn draft(action: &str, account: &Account) -> AuditDraft {
        AuditDraft::new(action, &actor(&account.account_id))
    }

    pub async fn passwords_replace_and_end_sessions(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        assert_eq!(store.password_hash(&alice.account_id).await.unwrap(), None);
        let before = audit_len(&store).await;
        store
            .set_password(
                &alice.account_id,
                "$argon2id$one",
                draft("account.password", &alice),
            )
            .await
            .unwrap();
        assert_eq!(
            store
                .password_hash(&alice.account_id)
                .await
                .unwrap()
                .as_deref(),
            Some("$argon2id$one")
        );
        store
            .create_session(
                session(&alice, 's', LATER, MUCH_LATER),
                None,
                &[],
                draft("session.create", &alice),
            )
            .await
            .unwrap();
        store
            .set_password(
                &alice.account_id,
                "$argon2id$two",
                draft("account.password", &alice),
            )
            .await
            .unwrap();
        assert_eq!(
            store
                .password_hash(&alice.account_id)
                .await
                .unwrap()
                .as_deref(),
            Some("$argon2id$two")
        );
        assert_eq!(
            store.find_session(&hash('s')).await.unwrap(),
            None,
            "a new password ends the account's sessions"
        );
        assert_eq!(audit_len(&store).await, before + 3);
        let err = store
            .set_password(
                "acct_nobody",
                "$argon2id$x",
                draft("account.password", &alice),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
        assert_eq!(store.table_counts().await.unwrap()["account_passwords"], 1);
    }

    pub async fn sessions_rotate_extend_and_end(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        // An expired session of bob's is dropped when anyone signs in.
        store
            .create_session(
                session(&bob, 'x', PAST, MUCH_LATER),
                None,
                &[],
                draft("session.create", &bob),
            )
            .await
            .unwrap();
        let first = store
            .create_session(
                session(&alice, 'a', LATER, MUCH_LATER),
                None,
                &[],
                draft("session.create", &alice),
            )
            .await
            .unwrap();
        assert_eq!(store.find_session(&hash('x')).await.unwrap(), None);
        assert_eq!(
            db.node(1).find_session(&hash('a')).await.unwrap(),
            Some(first.clone())
        );
        // Rotation: the new session replaces the old one in the same transaction.
        store
            .create_session(
                session(&alice, 'b', LATER, MUCH_LATER),
                Some(&hash('a')),
                &[],
                draft("session.create", &alice),
            )
            .await
            .unwrap();
        assert_eq!(store.find_session(&hash('a')).await.unwrap(), None);
        // The idle expiry moves forward but never past the absolute one.
        assert!(
            store
                .extend_session(&hash('b'), "2099-03-01T00:00:00.000Z")
                .await
                .unwrap()
        );
        assert_eq!(
            store
                .find_session(&hash('b'))
                .await
                .unwrap()
                .unwrap()
                .idle_expires_at,
            "2099-03-01T00:00:00.000Z"
        );
        assert!(
            store
                .extend_session(&hash('b'), "2100-01-01T00:00:00.000Z")
                .await
                .unwrap()
        );
        assert_eq!(
            store
                .find_session(&hash('b'))
                .await
                .unwrap()
                .unwrap()
                .idle_expires_at,
            MUCH_LATER
        );
        assert!(!store.extend_session(&hash('z'), LATER).await.unwrap());
        let before = audit_len(&store).await;
        assert!(
            store
                .delete_session(&hash('b'), draft("session.delete", &alice))
                .await
                .unwrap()
        );
        assert!(
            !store
                .delete_session(&hash('b'), draft("session.delete", &alice))
                .await
                .unwrap()
        );
        assert_eq!(
            audit_len(&store).await,
            before + 1,
            "a missing session audits nothing"
        );
        assert_eq!(store.table_counts().await.unwrap()["web_sessions"], 0);
    }

    pub async fn oauth_clients_round_trip(db: &TestDb) {
        let store = db.store();
        let client = store
            .create_oauth_client(
                NewOAuthClient {
                    client_name: "Editor".into(),
                    redirect_uris: vec![
                        "http://127.0.0.1/cb".into(),
                        "https://app.example/cb".into(),
                    ],
                    token_endpoint_auth_method: "client_secret_basic".into(),
                    secret_hash: Some(hash('s')),
                    metadata: json!({"client_uri": "https://app.example"}),
                    bounds: Default::default(),
                },
                AuditDraft::new("oauth.register", &Attribution::default()),
            )
            .await
            .unwrap();
        assert!(client.client_id.starts_with("client_"));
        let found = db
            .node(1)
            .get_oauth_client(&client.client_id)
            .await
            .unwrap();
        assert_eq!(found.as_ref(), Some(&client));
        assert_eq!(found.unwrap().secret_hash, Some(hash('s')));
        assert_eq!(store.get_oauth_client("client_nope").await.unwrap(), None);
        let entries = store.list_audit(&AuditFilter::default()).await.unwrap();
        let last = entries.last().unwrap();
        assert_eq!(last.action, "oauth.register");
        assert_eq!(last.details["client_id"], client.client_id.as_str());
        // Refused method names never reach the table.
        let bad = store
            .create_oauth_client(
                NewOAuthClient {
                    client_name: "x".into(),
                    redirect_uris: vec![],
                    token_endpoint_auth_method: "private_key_jwt".into(),
                    secret_hash: None,
                    metadata: json!({}),
                    bounds: Default::default(),
                },
                AuditDraft::new("oauth.register", &Attribution::default()),
            )
            .await;
        assert!(bad.is_err());
        assert_eq!(store.table_counts().await.unwrap()["oauth_clients"], 1);
    }

    pub async fn oauth_codes_are_single_use(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let grant = store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('c'), LATER),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        assert!(grant.grant_id.starts_with("grant_"));
        let code = store.find_oauth_code(&hash('c')).await.unwrap().unwrap();
        assert_eq!(code.grant, grant);
        assert_eq!(code.code_challenge, "challenge");
        assert_eq!(code.used_at, None);
        assert_eq!(
            store
                .redeem_oauth_code(
                    &hash('c'),
                    &tokens(&hash('1'), &hash('2'), LATER),
                    draft("oauth.token", &alice)
                )
                .await
                .unwrap(),
            Exchange::Issued
        );
        let access = store.find_oauth_token(&hash('1')).await.unwrap().unwrap();
        assert_eq!(access.kind, OAuthTokenKind::Access);
        assert_eq!(access.grant.grant_id, grant.grant_id);
        assert_eq!(access.scopes, ["memory:read"]);
        assert!(
            store
                .find_oauth_code(&hash('c'))
                .await
                .unwrap()
                .unwrap()
                .used_at
                .is_some()
        );
        // Spent: a second exchange writes nothing.
        let counts = store.table_counts().await.unwrap();
        assert_eq!(
            store
                .redeem_oauth_code(
                    &hash('c'),
                    &tokens(&hash('3'), &hash('4'), LATER),
                    draft("oauth.token", &alice)
                )
                .await
                .unwrap(),
            Exchange::AlreadyUsed
        );
        assert_eq!(store.table_counts().await.unwrap(), counts);
        assert_eq!(store.find_oauth_token(&hash('3')).await.unwrap(), None);
        // Unknown codes are "already used" too: nothing to exchange.
        assert_eq!(
            store
                .redeem_oauth_code(
                    &hash('u'),
                    &tokens(&hash('5'), &hash('6'), LATER),
                    draft("oauth.token", &alice)
                )
                .await
                .unwrap(),
            Exchange::AlreadyUsed
        );
        // Two nodes exchanging one code at once: exactly one wins.
        store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('d'), LATER),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        let (n0, n1) = (db.node(0), db.node(1));
        let (secret, t0, t1) = (
            hash('d'),
            tokens(&hash('7'), &hash('8'), LATER),
            tokens(&hash('9'), &hash('0'), LATER),
        );
        let (a, b) = tokio::join!(
            n0.redeem_oauth_code(&secret, &t0, draft("oauth.token", &alice)),
            n1.redeem_oauth_code(&secret, &t1, draft("oauth.token", &alice)),
        );
        let outcomes = [a, b];
        let issued = outcomes
            .iter()
            .filter(|o| matches!(o, Ok(Exchange::Issued)))
            .count();
        assert_eq!(issued, 1, "{outcomes:?}");
        // A revoked grant's code exchanges nothing.
        let revoked = store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('e'), LATER),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        assert!(
            store
                .revoke_oauth_grant(
                    &revoked.grant_id,
                    None,
                    "revoked",
                    draft("oauth.revoke", &alice)
                )
                .await
                .unwrap()
        );
        assert_eq!(
            store
                .redeem_oauth_code(
                    &hash('e'),
                    &tokens(&hash('f'), &hash('g'), LATER),
                    draft("oauth.token", &alice)
                )
                .await
                .unwrap(),
            Exchange::AlreadyUsed
        );
        // Expired codes are dropped when the next grant is made.
        store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('h'), PAST),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('i'), LATER),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        assert_eq!(store.find_oauth_code(&hash('h')).await.unwrap(), None);
        assert!(store.find_oauth_code(&hash('i')).await.unwrap().is_some());
    }

    pub async fn oauth_refresh_tokens_rotate_once(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('c'), LATER),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        store
            .redeem_oauth_code(
                &hash('c'),
                &tokens(&hash('1'), &hash('2'), LATER),
                draft("oauth.token", &alice),
            )
            .await
            .unwrap();
        assert_eq!(
            store
                .rotate_oauth_refresh_token(
                    &hash('2'),
                    &tokens(&hash('3'), &hash('4'), LATER),
                    draft("oauth.refresh", &alice)
                )
                .await
                .unwrap(),
            Exchange::Issued
        );
        let old = store.find_oauth_token(&hash('2')).await.unwrap().unwrap();
        assert!(old.rotated_at.is_some());
        assert!(store.find_oauth_token(&hash('4')).await.unwrap().is_some());
        let counts = store.table_counts().await.unwrap();
        for spent in [hash('2'), hash('1'), hash('z')] {
            // Rotated already, an access token, unknown: nothing is written.
            assert_eq!(
                store
                    .rotate_oauth_refresh_token(
                        &spent,
                        &tokens(&hash('5'), &hash('6'), LATER),
                        draft("oauth.refresh", &alice)
                    )
                    .await
                    .unwrap(),
                Exchange::AlreadyUsed
            );
        }
        assert_eq!(store.table_counts().await.unwrap(), counts);
        // Concurrent rotations of one refresh token: one wins.
        let (n0, n1) = (db.node(0), db.node(1));
        let (secret, t0, t1) = (
            hash('4'),
            tokens(&hash('7'), &hash('8'), LATER),
            tokens(&hash('9'), &hash('0'), LATER),
        );
        let (a, b) = tokio::join!(
            n0.rotate_oauth_refresh_token(&secret, &t0, draft("oauth.refresh", &alice)),
            n1.rotate_oauth_refresh_token(&secret, &t1, draft("oauth.refresh", &alice)),
        );
        let outcomes = [a, b];
        assert_eq!(
            outcomes
                .iter()
                .filter(|o| matches!(o, Ok(Exchange::Issued)))
                .count(),
            1,
            "{outcomes:?}"
        );
        // An expired refresh token does not rotate; a revoked one neither.
        store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('d'), LATER),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        store
            .redeem_oauth_code(
                &hash('d'),
                &tokens(&hash('a'), &hash('b'), PAST),
                draft("oauth.token", &alice),
            )
            .await
            .unwrap();
        assert_eq!(
            store
                .rotate_oauth_refresh_token(
                    &hash('b'),
                    &tokens(&hash('e'), &hash('f'), LATER),
                    draft("oauth.refresh", &alice)
                )
                .await
                .unwrap(),
            Exchange::AlreadyUsed
        );
        let live = if store.find_oauth_token(&hash('8')).await.unwrap().is_some() {
            hash('8')
        } else {
            hash('0')
        };
        assert!(
            store
                .revoke_oauth_token(&live, draft("oauth.revoke", &alice))
                .await
                .unwrap()
        );
        assert!(
            !store
                .revoke_oauth_token(&live, draft("oauth.revoke", &alice))
                .await
                .unwrap()
        );
        assert!(
            store
                .find_oauth_token(&live)
                .await
                .unwrap()
                .unwrap()
                .revoked_at
                .is_some()
        );
        assert_eq!(
            store
                .rotate_oauth_refresh_token(
                    &live,
                    &tokens(&hash('g'), &hash('h'), LATER),
                    draft("oauth.refresh", &alice)
                )
                .await
                .unwrap(),
            Exchange::AlreadyUsed
        );
    }

    pub async fn oauth_grants_list_and_revoke(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        let bob = account(&store, "bob").await;
        let mut mine = Vec::new();
        for (i, c) in ['a', 'b', 'c'].into_iter().enumerate() {
            mine.push(
                store
                    .create_oauth_grant(
                        new_grant(&alice, &format!("client_{i}"), &hash(c), LATER),
                        draft("oauth.authorize", &alice),
                    )
                    .await
                    .unwrap(),
            );
        }
        let theirs = store
            .create_oauth_grant(
                new_grant(&bob, "client_b", &hash('d'), LATER),
                draft("oauth.authorize", &bob),
            )
            .await
            .unwrap();
        let first = store
            .list_oauth_grants_page(
                &alice.account_id,
                &KeysetPage {
                    after: None,
                    limit: 2,
                },
            )
            .await
            .unwrap();
        assert_eq!(first, mine[..2]);
        let last = &first[1];
        let rest = store
            .list_oauth_grants_page(
                &alice.account_id,
                &KeysetPage {
                    after: Some(CreationKey {
                        created_at: last.created_at.clone(),
                        id: last.grant_id.clone(),
                    }),
                    limit: 2,
                },
            )
            .await
            .unwrap();
        assert_eq!(rest, mine[2..]);
        // Another account's grant is not alice's to revoke.
        assert!(
            !store
                .revoke_oauth_grant(
                    &theirs.grant_id,
                    Some(&alice.account_id),
                    "revoked",
                    draft("oauth.revoke", &alice)
                )
                .await
                .unwrap()
        );
        assert!(
            store
                .revoke_oauth_grant(
                    &mine[0].grant_id,
                    Some(&alice.account_id),
                    "revoked",
                    draft("oauth.revoke", &alice)
                )
                .await
                .unwrap()
        );
        assert!(
            !store
                .revoke_oauth_grant(
                    &mine[0].grant_id,
                    None,
                    "code_reused",
                    draft("oauth.revoke", &alice)
                )
                .await
                .unwrap(),
            "revoked once"
        );
        let revoked = store
            .get_oauth_grant(&mine[0].grant_id)
            .await
            .unwrap()
            .unwrap();
        assert!(revoked.revoked_at.is_some());
        assert_eq!(revoked.revoked_reason.as_deref(), Some("revoked"));
        let live = store
            .list_oauth_grants_page(
                &alice.account_id,
                &KeysetPage {
                    after: None,
                    limit: 10,
                },
            )
            .await
            .unwrap();
        assert_eq!(live, mine[1..]);
        assert_eq!(store.get_oauth_grant("grant_nope").await.unwrap(), None);
        // The code of a revoked grant reads with its revocation.
        let code = store.find_oauth_code(&hash('a')).await.unwrap().unwrap();
        assert!(code.grant.revoked_at.is_some());
    }

    pub async fn oauth_rows_go_with_the_account(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        store
            .set_password(
                &alice.account_id,
                "$argon2id$x",
                draft("account.password", &alice),
            )
            .await
            .unwrap();
        store
            .create_session(
                session(&alice, 's', LATER, MUCH_LATER),
                None,
                &[],
                draft("session.create", &alice),
            )
            .await
            .unwrap();
        store
            .create_oauth_grant(
                new_grant(&alice, "client_a", &hash('c'), LATER),
                draft("oauth.authorize", &alice),
            )
            .await
            .unwrap();
        store
            .redeem_oauth_code(
                &hash('c'),
                &tokens(&hash('1'), &hash('2'), LATER),
                draft("oauth.token", &alice),
            )
            .await
            .unwrap();
        store
            .delete_account(&alice.account_id, draft("account.delete", &alice))
            .await
            .unwrap();
        let counts = store.table_counts().await.unwrap();
        for table in [
            "account_passwords",
            "web_sessions",
            "oauth_grants",
            "oauth_codes",
            "oauth_tokens",
        ] {
            assert_eq!(counts[table], 0, "{table}");
        }
    }
}

mod signin_snapshot_cases {
    use super::*;

    /// `xmemo admin copy` moves passwords (people can still sign in on the target) and no
    /// session.
    pub async fn passwords_travel_with_a_snapshot(db: &TestDb) {
        let store = db.store();
        let alice = account(&store, "alice").await;
        account(&store, "bob").await;
        store
            .set_password(
                &alice.account_id,
                "$argon2id$v=19$copied",
                AuditDraft::new("account.password", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        store
            .create_session(
                NewWebSession {
                    session_hash: "s".repeat(64),
                    account_id: alice.account_id.clone(),
                    created_at: now(),
                    idle_expires_at: "2099-01-01T00:00:00.000Z".into(),
                    absolute_expires_at: "2099-01-01T00:00:00.000Z".into(),
                },
                None,
                &[],
                AuditDraft::new("session.create", &actor(&alice.account_id)),
            )
            .await
            .unwrap();
        let listed = store.list_passwords().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].account_id, alice.account_id);
        let snap = xmemo_store::snapshot::export_snapshot(store.as_ref())
            .await
            .unwrap();
        assert_eq!(snap.passwords, listed);
        let target = super::sqlite_db().await;
        let copy = target.store();
        copy.import_snapshot(&snap).await.unwrap();
        assert_eq!(
            copy.password_hash(&alice.account_id)
                .await
                .unwrap()
                .as_deref(),
            Some("$argon2id$v=19$copied")
        );
        assert_eq!(copy.table_counts().await.unwrap()["web_sessions"], 0);
        let back = xmemo_store::snapshot::export_snapshot(copy.as_ref())
            .await
            .unwrap();
        assert_eq!(back, snap);
    }
}

/// Ranking details checked on SQLite only (both backends rank with the same in-memory index).
mod sqlite_only {
    use super::*;
    use xmemo_core::MemoryKind;

    /// A word a memory does not hold adds nothing to its score, whichever plan ranks the
    /// query. With one rare word (it selects the rows) and one of middle frequency (it only
    /// boosts them), FTS5 once weighed the rare word twice: the memories holding only the rare
    /// word scored double, and outranked the one holding both.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_boost_word_adds_only_to_the_memories_that_hold_it() {
        let db = sqlite_db().await;
        let store = db.store();
        let alice = account(&store, "alice").await;
        let ws = alice.personal_workspace_id.as_str();
        let who = actor(&alice.account_id);
        let filler = |n: usize| {
            (0..n)
                .map(|i| format!("filler{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let target = remember(
            &store,
            new_memory(
                ws,
                &who,
                memory_content(
                    MemoryKind::Fact,
                    &format!("qzentity zattrword {}", filler(3)),
                ),
            ),
        )
        .await
        .memory;
        for i in 0..7 {
            let content = format!("qzentity {} other{i}", filler(i % 3));
            remember(
                &store,
                new_memory(ws, &who, memory_content(MemoryKind::Fact, &content)),
            )
            .await;
        }
        // A few hundred rows hold the second word.
        let holders = 250;
        for i in 0..holders {
            let content = format!("zattrword {} holder{i}", filler(i % 6));
            remember(
                &store,
                new_memory(ws, &who, memory_content(MemoryKind::Note, &content)),
            )
            .await;
        }
        // …and are a quarter of all rows, so the word still weighs (bm25's idf).
        for i in 0..holders * 3 {
            let content = format!("{} unrelated{i}", filler(i % 5));
            remember(
                &store,
                new_memory(ws, &who, memory_content(MemoryKind::Note, &content)),
            )
            .await;
        }
        let scores = |text: &str| {
            let store = store.clone();
            let mut q = memory_query(&[ws]);
            q.text = Some(text.to_string());
            async move {
                store
                    .recall_memories(&q)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|h| (h.memory.memory_id, h.score))
                    .collect::<std::collections::HashMap<_, _>>()
            }
        };
        let one = scores("qzentity").await;
        let both = scores("qzentity zattrword").await;
        assert_eq!(one.len(), 8, "the rare word selects its 8 memories");
        // Rows holding only the second word fill the page after the rare word's rows, which
        // all outrank them.
        let weakest_rare = one.keys().map(|id| both[id]).fold(f64::INFINITY, f64::min);
        for (id, score) in &both {
            if !one.contains_key(id) {
                assert!(*score < weakest_rare, "{score} vs {weakest_rare}");
            }
        }
        // Scores are shares of the query's weight (docs/decisions.md, "Scores"): adding a
        // word to the query scales every row not holding it by one same factor (its BM25 is
        // unchanged), while the row holding it gains.
        let ratio = |id: &String| both[id] / one[id];
        let others: Vec<f64> = one
            .keys()
            .filter(|id| **id != target.memory_id)
            .map(ratio)
            .collect();
        let factor = others[0];
        assert!(factor > 0.0 && factor < 1.0, "{others:?}");
        for r in &others {
            assert!(
                (r - factor).abs() < 1e-3 * factor,
                "a memory without the boost word keeps its BM25: ratios {others:?}"
            );
        }
        assert!(
            ratio(&target.memory_id) > factor * 1.2,
            "the memory holding both words gains: {} vs {factor}",
            ratio(&target.memory_id)
        );
    }
}

/// Issue #29: what each `xmemo serve` node recorded at its start, for the operator.
mod node_quota_cases {
    use super::*;

    fn started(node: &str, second: usize, memories: Option<u64>) -> NodeQuotas {
        NodeQuotas {
            node: node.into(),
            started_at: format!("2030-01-01T00:{:02}:{:02}.000Z", second / 60, second % 60),
            memories,
            skills: Some(10_000),
            bytes: None,
        }
    }

    pub async fn node_quotas_keep_each_nodes_newest_start(db: &TestDb) {
        let store = db.store();
        assert!(store.node_quotas().await.unwrap().is_empty());
        store
            .record_node_quotas(&started("a:1", 1, Some(7)))
            .await
            .unwrap();
        // Another node, then the first one again (a restart under the same name).
        let other = db.other_node().await;
        other
            .record_node_quotas(&started("b:2", 2, Some(9)))
            .await
            .unwrap();
        store
            .record_node_quotas(&started("a:1", 3, Some(8)))
            .await
            .unwrap();
        assert_eq!(
            other.node_quotas().await.unwrap(),
            [started("a:1", 3, Some(8)), started("b:2", 2, Some(9))]
        );
        // The largest quota a flag can give round-trips; none stays none.
        store
            .record_node_quotas(&started("c:3", 4, Some(i64::MAX as u64)))
            .await
            .unwrap();
        assert_eq!(
            store.node_quotas().await.unwrap()[0],
            started("c:3", 4, Some(i64::MAX as u64))
        );
        // Every start adds a row (a new pid), so only the newest are kept.
        for i in 0..40 {
            store
                .record_node_quotas(&started(&format!("n:{i}"), 100 + i, None))
                .await
                .unwrap();
        }
        let kept = store.node_quotas().await.unwrap();
        assert_eq!(kept.len(), 16);
        assert_eq!(kept[0], started("n:39", 139, None));
        assert_eq!(kept[15].node, "n:24");
    }
}
