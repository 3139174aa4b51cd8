//! MCP prompts: every skill the service serves the caller is also a prompt whose single user
//! message is the skill's published instruction body. Hosts that only speak prompts get the
//! same Level 1 content the tools and the Skills extension serve.

use super::errors::protocol_error;
use super::skills_ext::PAGE_SIZE;
use crate::auth::Principal;
use crate::service::Service;
use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, ListPromptsResult, Prompt, PromptMessage, Role};

/// A prompt name is the skill's slug, or `workspace/slug` when the slug exists in several of
/// the caller's workspaces.
pub async fn list(
    service: &Service,
    principal: &Principal,
    cursor: Option<&str>,
) -> Result<ListPromptsResult, ErrorData> {
    let page = service
        .served_page(principal, cursor, PAGE_SIZE)
        .await
        .map_err(protocol_error)?;
    let prompts = page
        .skills
        .iter()
        .map(|s| {
            let root = &s.root;
            let name = if page.shared_slugs.contains(&root.slug) {
                format!("{}/{}", root.workspace, root.slug)
            } else {
                root.slug.clone()
            };
            let mut prompt = Prompt::new(name, Some(root.description.clone()), None);
            prompt.title = Some(root.name.clone());
            prompt
        })
        .collect();
    let mut result = ListPromptsResult::with_all_items(prompts);
    result.next_cursor = page.next_cursor;
    Ok(result)
}

pub async fn get(
    service: &Service,
    principal: &Principal,
    name: &str,
) -> Result<GetPromptResult, ErrorData> {
    let (workspace, slug) = match name.split_once('/') {
        Some((ws, slug)) => (Some(ws), slug),
        None => (None, name),
    };
    let served = service
        .served_skill(principal, workspace, slug)
        .await
        .map_err(protocol_error)?
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("prompt `{name}` not found: no published skill has that name"),
                None,
            )
        })?;
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        served.root.instruction_body,
    )]);
    result.description = Some(served.root.description);
    Ok(result)
}
