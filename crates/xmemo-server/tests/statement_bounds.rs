//! The work of one catalog page or one Level 1 recall is a small fixed number of SQL
//! statements, whatever the page size or the number of components (counted by the store).

mod mcp_harness;

use mcp_harness::*;
use rmcp::model::PaginatedRequestParams;
use serde_json::json;
use xmemo_server::mcp::skills_ext::PAGE_SIZE;

/// Statements the store ran while `f` ran.
async fn counted<T>(s: &McpServer, f: impl std::future::Future<Output = T>) -> (u64, T) {
    let before = s.store.statements_run();
    let out = f.await;
    (s.store.statements_run() - before, out)
}

fn with_components(slug: &str, n: usize) -> serde_json::Value {
    let mut args = skill(slug, "Steps.\n");
    args["intent"] = json!("publish");
    args["components"] = json!(
        (0..n)
            .map(|i| json!({"logical_path": format!("references/r{i}.md"), "type": "reference", "content": format!("ref {i}")}))
            .collect::<Vec<_>>()
    );
    args
}

#[tokio::test]
async fn catalog_pages_and_level_1_cost_a_fixed_number_of_statements() {
    let s = McpServer::start().await;
    let key = s
        .account("counter", &["memory:read", "memory:write"], None)
        .await;
    let client = s.client("/mcp", &key).await;
    // A team too, so the shared-slug check of a page runs.
    s.service
        .create_team(
            &s.service.operator_for("counter").await.expect("operator"),
            xmemo_server::service::types::CreateTeamRequest {
                handle: "ops".into(),
                name: None,
            },
        )
        .await
        .expect("team");
    ok(
        &call(&client, "save_cloud_skill", with_components("bare", 0))
            .await
            .expect("save"),
    );
    ok(
        &call(&client, "save_cloud_skill", with_components("rich", 12))
            .await
            .expect("save"),
    );

    let (small_page, small) = counted(&s, client.list_skills(None)).await;
    let small = small.expect("skills/list");
    assert_eq!(small.skills.len(), 2);
    assert!(small.next_cursor.is_none());

    let page = PAGE_SIZE as usize;
    for i in 0..page + 8 {
        let args = with_components(&format!("many-{i:04}"), 3);
        ok(&call(&client, "save_cloud_skill", args).await.expect("save"));
    }
    let (full_page, full) = counted(&s, client.list_skills(None)).await;
    let full = full.expect("skills/list");
    assert_eq!(full.skills.len(), page);
    let cursor = full.next_cursor.clone().expect("a second page");
    let (next_page, next) = counted(
        &s,
        client.list_skills(Some(
            PaginatedRequestParams::default().with_cursor(Some(cursor)),
        )),
    )
    .await;
    assert_eq!(next.expect("page 2").skills.len(), 10);

    println!(
        "statements: page of 2 = {small_page}, page of {page} = {full_page}, page 2 = {next_page}"
    );
    // With the credential cache warm (the calls before this one), only the page's own reads.
    assert!(small_page <= 4, "a page took {small_page} statements");
    assert_eq!(
        full_page, small_page,
        "a full page costs what a page of 2 does"
    );
    assert_eq!(next_page, small_page);

    let (resources, listed) = counted(&s, client.list_resources(None)).await;
    assert!(!listed.expect("resources/list").resources.is_empty());
    assert_eq!(resources, small_page);
    let (prompts, listed) = counted(&s, client.list_prompts(None)).await;
    assert_eq!(listed.expect("prompts/list").prompts.len(), page);
    assert_eq!(prompts, small_page);

    let (bare, r) = counted(
        &s,
        call(&client, "recall_cloud_skill", json!({"slug": "bare"})),
    )
    .await;
    assert_eq!(
        ok(&r.expect("l1"))["data"]["resources"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    let (rich, r) = counted(
        &s,
        call(&client, "recall_cloud_skill", json!({"slug": "rich"})),
    )
    .await;
    assert_eq!(
        ok(&r.expect("l1"))["data"]["resources"]
            .as_array()
            .map(Vec::len),
        Some(12)
    );
    println!("statements: Level 1 with 0 components = {bare}, with 12 = {rich}");
    // The skill by slug, then its revision with its components (one statement).
    assert!(bare <= 2, "Level 1 took {bare} statements");
    assert_eq!(rich, bare, "components are read in one statement");
}
