//! `Snapshot` copy between backends: SQLite → PostgreSQL → SQLite keeps every id, hash,
//! revision number, status, attribution, binary component and the audit chain.

use serde_json::json;
use std::sync::Arc;
use xmemo_core::{
    AssetStatus, ComponentType, InvitationStatus, RevisionStatus, Role, content_hash,
};
use xmemo_store::postgres::{PgPoolSettings, PostgresStore};
use xmemo_store::snapshot::{Snapshot, export_snapshot};
use xmemo_store::sqlite::SqliteStore;
use xmemo_store::*;

fn actor(account_id: &str) -> Attribution {
    Attribution {
        account_id: account_id.into(),
        credential_id: Some("key_test".into()),
        client_profile: Some("ordinary-full".into()),
        agent_id: Some("copy-test".into()),
        agent_instance_id: Some("instance-1".into()),
    }
}

fn component(path: &str, kind: ComponentType, bytes: &[u8]) -> NewComponent {
    NewComponent {
        manifest: ComponentManifest {
            logical_path: path.into(),
            component_type: kind,
            content_hash: content_hash(bytes),
            size: bytes.len() as u64,
            media_type: "application/octet-stream".into(),
        },
        content: bytes.to_vec(),
    }
}

async fn save(
    store: &dyn Store,
    ws: &str,
    who: &str,
    slug: &str,
    body: &str,
    status: RevisionStatus,
    components: Vec<NewComponent>,
) -> SaveOutcome {
    store
        .save_revision(SaveRevision {
            workspace_id: ws.into(),
            slug: slug.into(),
            expected_revision_id: None,
            name: format!("Skill {slug}"),
            description: "copied".into(),
            instruction_body: body.into(),
            metadata: json!({"license": "MIT"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            canonical_hash: content_hash(body.as_bytes()),
            status,
            components,
            attribution: actor(who),
            source: Some(json!({"kind": "upload"})),
            safety: None,
            quota: None,
        })
        .await
        .expect("save")
}

/// An installation with teams, drafts, published and deprecated revisions, an archived skill,
/// binary components and keys.
async fn populate(store: &dyn Store) {
    let alice = store
        .create_account(
            NewAccount {
                handle: "alice".into(),
                display_name: "Alice".into(),
                is_admin: true,
            },
            AuditDraft::default(),
        )
        .await
        .unwrap();
    let bob = store
        .create_account(
            NewAccount {
                handle: "bob".into(),
                display_name: "Bob".into(),
                is_admin: false,
            },
            AuditDraft::default(),
        )
        .await
        .unwrap();
    let team = store
        .create_team(
            NewTeam {
                handle: "ops".into(),
                name: "Ops".into(),
                owner_account_id: alice.account_id.clone(),
            },
            AuditDraft::new("workspace.create", &actor(&alice.account_id)),
        )
        .await
        .unwrap();
    let invitation = store
        .create_invitation(
            NewInvitation {
                workspace_id: team.workspace_id.clone(),
                invitee: "bob".into(),
                account_id: Some(bob.account_id.clone()),
                role: Role::Member,
                invited_by: alice.account_id.clone(),
                bounds: Default::default(),
            },
            AuditDraft::new("invitation.create", &actor(&alice.account_id)),
        )
        .await
        .unwrap();
    store
        .answer_invitation(
            &invitation.invitation_id,
            &bob.account_id,
            InvitationAnswer::Accept,
            AuditDraft::new("invitation.accept", &actor(&bob.account_id)),
        )
        .await
        .unwrap();
    // A pending one to a handle that names no account travels too.
    store
        .create_invitation(
            NewInvitation {
                workspace_id: team.workspace_id.clone(),
                invitee: "nobody-yet".into(),
                account_id: None,
                role: Role::Viewer,
                invited_by: alice.account_id.clone(),
                bounds: Default::default(),
            },
            AuditDraft::new("invitation.create", &actor(&alice.account_id)),
        )
        .await
        .unwrap();
    store
        .create_api_key(
            NewApiKey {
                account_id: bob.account_id.clone(),
                name: "laptop".into(),
                prefix: "xmk_abcdefgh".into(),
                key_hash: content_hash(b"secret"),
                scopes: vec!["memory:read".into()],
                profile: "cursor-plugin".into(),
                expires_at: Some("2099-01-01T00:00:00.000Z".into()),
            },
            AuditDraft::new("key.create", &actor(&bob.account_id)),
        )
        .await
        .unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(4000).collect();
    let ws = &alice.personal_workspace_id;
    save(
        store,
        ws,
        &alice.account_id,
        "deploy",
        "v1",
        RevisionStatus::Published,
        vec![component(
            "assets/blob.bin",
            ComponentType::Artifact,
            &binary,
        )],
    )
    .await;
    save(
        store,
        ws,
        &alice.account_id,
        "deploy",
        "v2",
        RevisionStatus::Published,
        vec![
            component("assets/blob.bin", ComponentType::Artifact, &binary),
            component("scripts/run.sh", ComponentType::Script, b"echo hi\n"),
        ],
    )
    .await;
    save(
        store,
        ws,
        &alice.account_id,
        "deploy",
        "v3 draft",
        RevisionStatus::Draft,
        vec![],
    )
    .await;
    let proposed = save(
        store,
        &team.workspace_id,
        &bob.account_id,
        "incident",
        "page",
        RevisionStatus::Proposed,
        vec![],
    )
    .await;
    store
        .change_revision_status(StatusChange {
            revision_id: proposed.revision.revision_id.clone(),
            from: RevisionStatus::Proposed,
            to: RevisionStatus::Published,
            review_note: Some("lgtm".into()),
            audit: AuditDraft::new("revision.approve", &actor(&alice.account_id)),
        })
        .await
        .unwrap();
    let old = save(
        store,
        ws,
        &alice.account_id,
        "old",
        "gone",
        RevisionStatus::Published,
        vec![],
    )
    .await;
    store
        .set_asset_status(
            &old.skill.skill_id,
            AssetStatus::Archived,
            AuditDraft::new("skill.archive", &actor(&alice.account_id)),
        )
        .await
        .unwrap();

    // Memories: one with two versions and tags, one forgotten, one with an expiry.
    let content = |kind, text: &str, tags: &[&str]| xmemo_core::memory::MemoryContent {
        kind,
        content: text.into(),
        title: Some(format!("about {text}")),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        project: Some("shop".into()),
    };
    let new = |c: xmemo_core::memory::MemoryContent, expires: Option<&str>| NewMemory {
        memory_id: xmemo_core::new_id("mem"),
        workspace_id: ws.to_string(),
        content_hash: xmemo_core::memory::memory_content_hash(&c.content),
        content: c,
        expires_at: expires.map(str::to_string),
        attribution: actor(&alice.account_id),
        quota: None,
    };
    let who = actor(&alice.account_id);
    let first = store
        .remember(
            new(
                content(xmemo_core::MemoryKind::Fact, "port 5433", &["db"]),
                None,
            ),
            AuditDraft::new("memory.remember", &who),
        )
        .await
        .unwrap()
        .memory;
    let next = content(
        xmemo_core::MemoryKind::Fact,
        "port 5434",
        &["db", "staging"],
    );
    store
        .update_memory(MemoryUpdate {
            memory_id: first.memory_id.clone(),
            expected_version: 1,
            content_hash: xmemo_core::memory::memory_content_hash(&next.content),
            content: next,
            attribution: who.clone(),
            audit: AuditDraft::new("memory.update", &who),
            quota: None,
        })
        .await
        .unwrap();
    let gone = store
        .remember(
            new(
                content(xmemo_core::MemoryKind::Todo, "old todo", &[]),
                Some("2999-01-01T00:00:00.000Z"),
            ),
            AuditDraft::new("memory.remember", &who),
        )
        .await
        .unwrap()
        .memory;
    store
        .set_memory_status(MemoryStatusChange {
            memory_id: gone.memory_id,
            from: xmemo_core::MemoryStatus::Active,
            to: xmemo_core::MemoryStatus::Forgotten,
            reason: Some("done".into()),
            audit: AuditDraft::new("memory.forget", &who),
        })
        .await
        .unwrap();
}

fn assert_same(a: &Snapshot, b: &Snapshot) {
    assert_eq!(a.accounts, b.accounts);
    assert_eq!(a.workspaces, b.workspaces);
    assert_eq!(a.memberships, b.memberships);
    let keys = |s: &Snapshot| {
        s.api_keys
            .iter()
            .map(|k| (k.clone(), k.key_hash.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(a), keys(b));
    assert_eq!(a.invitations, b.invitations);
    assert_eq!(a.skills, b.skills);
    assert_eq!(a.revisions, b.revisions);
    assert_eq!(a.blobs, b.blobs);
    assert_eq!(a.memories, b.memories);
    assert_eq!(a.memory_versions, b.memory_versions);
    assert_eq!(a.audit, b.audit);
}

#[tokio::test]
async fn sqlite_to_postgres_to_sqlite_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let source = SqliteStore::open(&dir.path().join("a.db")).await.unwrap();
    populate(&source).await;
    let original = export_snapshot(&source).await.unwrap();
    assert_eq!(original.revisions.len(), 5);
    assert!(
        original
            .revisions
            .iter()
            .any(|r| r.status == RevisionStatus::Deprecated)
    );
    assert!(
        original
            .revisions
            .iter()
            .any(|r| r.status == RevisionStatus::Draft)
    );
    assert!(
        original
            .skills
            .iter()
            .any(|s| s.asset_status == AssetStatus::Archived)
    );
    assert_eq!(original.blobs.len(), 2);
    assert_eq!(original.memories.len(), 2);
    assert_eq!(original.memory_versions.len(), 3);
    let statuses: Vec<InvitationStatus> = original.invitations.iter().map(|i| i.status).collect();
    assert_eq!(
        statuses,
        [InvitationStatus::Accepted, InvitationStatus::Pending]
    );

    let Some((options, _guard)) = xmemo_testkit::postgres_fresh_database().await else {
        return;
    };
    let pg = Arc::new(
        PostgresStore::connect_with(options, PgPoolSettings::default())
            .await
            .unwrap(),
    );
    pg.migrate().await.unwrap();
    pg.import_snapshot(&original).await.unwrap();
    let on_pg = export_snapshot(pg.as_ref()).await.unwrap();
    assert_same(&original, &on_pg);
    assert!(verify_audit_chain(&on_pg.audit).is_ok());
    // Level 0 works on the copy: published active skills only.
    let hits = pg
        .search(&SearchQuery {
            text: "skill".into(),
            workspace_ids: on_pg
                .workspaces
                .iter()
                .map(|w| w.workspace_id.clone())
                .collect(),
            limit: 10,
            semantic: None,
            include_malicious: false,
        })
        .await
        .unwrap();
    let mut slugs: Vec<&str> = hits.iter().map(|h| h.slug.as_str()).collect();
    slugs.sort();
    assert_eq!(slugs, ["deploy", "incident"]);
    // Copying into a non-empty database is refused and changes nothing.
    assert!(matches!(
        pg.import_snapshot(&original).await,
        Err(StoreError::Conflict(_))
    ));

    let back = SqliteStore::open(&dir.path().join("b.db")).await.unwrap();
    back.import_snapshot(&on_pg).await.unwrap();
    let round_trip = export_snapshot(&back).await.unwrap();
    assert_same(&original, &round_trip);
    assert_eq!(
        source.table_counts().await.unwrap(),
        back.table_counts().await.unwrap()
    );
    // The copy keeps working: the next save gets the next number.
    let deploy = round_trip
        .skills
        .iter()
        .find(|s| s.slug == "deploy")
        .unwrap();
    let next = save(
        &back,
        &deploy.workspace_id,
        &round_trip.accounts[0].account_id,
        "deploy",
        "v4",
        RevisionStatus::Draft,
        vec![],
    )
    .await;
    assert_eq!(next.revision.revision_number, 4);
}
