//! MCP prompts: every published, active skill the caller can read is also a prompt whose
//! single user message is the skill's published instruction body. Hosts that only speak
//! prompts get the same Level 1 content the tools and the Skills extension serve.

use crate::auth::Principal;
use crate::error::ServiceError;
use crate::service::Service;
use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, ListPromptsResult, Prompt, PromptMessage, Role};
use xmemo_core::AssetStatus;

/// A prompt name is the skill's slug, or `workspace/slug` when the slug exists in several of
/// the caller's workspaces.
pub async fn list(
    service: &Service,
    principal: &Principal,
) -> Result<ListPromptsResult, ErrorData> {
    let skills = service
        .list_skills(principal, None)
        .await
        .map_err(to_error)?;
    let published: Vec<_> = skills
        .into_iter()
        .filter(|s| s.asset_status == AssetStatus::Active && s.published_revision_id.is_some())
        .collect();
    let prompts = published
        .iter()
        .map(|s| {
            let shared = published.iter().filter(|o| o.slug == s.slug).count() > 1;
            let name = if shared {
                format!("{}/{}", s.workspace, s.slug)
            } else {
                s.slug.clone()
            };
            let mut prompt = Prompt::new(name, Some(s.description.clone()), None);
            prompt.title = Some(s.name.clone());
            prompt
        })
        .collect();
    Ok(ListPromptsResult::with_all_items(prompts))
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
    let root = service
        .root(principal, slug, workspace, None)
        .await
        .map_err(to_error)?;
    if root.status != xmemo_core::RevisionStatus::Published {
        return Err(ErrorData::invalid_params(
            format!("prompt `{name}` not found: the skill has no published revision"),
            None,
        ));
    }
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        root.instruction_body,
    )]);
    result.description = Some(root.description);
    Ok(result)
}

fn to_error(e: ServiceError) -> ErrorData {
    let data = Some(e.to_body());
    match e {
        ServiceError::Internal(_) | ServiceError::Unavailable(_) => {
            ErrorData::internal_error(e.public_message(), data)
        }
        _ => ErrorData::invalid_params(e.public_message(), data),
    }
}
