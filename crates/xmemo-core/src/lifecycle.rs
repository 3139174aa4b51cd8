//! Lifecycle of SPEC §2 as one function: which transitions are legal for which role in which
//! kind of workspace. The side effect "publishing deprecates the previously published revision"
//! belongs to the service layer, which applies it in the same transaction.

use crate::model::{RevisionStatus, Role, WorkspaceKind};
use RevisionStatus::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleAction {
    /// A save with intent `draft` (creates a revision).
    SaveDraft,
    /// A save with intent `publish` (creates a revision).
    SavePublish,
    /// Ask to publish an existing revision (personal: publishes; team: proposes).
    Publish,
    /// Team owner/admin accepts a proposal.
    Approve,
    /// Team owner/admin sends a proposal back to draft with a note.
    Reject,
    /// Retire a published revision; it stays recallable when pinned.
    Deprecate,
}

impl LifecycleAction {
    pub const ALL: [LifecycleAction; 6] = [
        Self::SaveDraft,
        Self::SavePublish,
        Self::Publish,
        Self::Approve,
        Self::Reject,
        Self::Deprecate,
    ];

    fn creates_revision(self) -> bool {
        matches!(self, Self::SaveDraft | Self::SavePublish)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("your role `{role}` may not {action} in a {kind} workspace")]
    NotPermitted {
        role: Role,
        action: &'static str,
        kind: WorkspaceKind,
    },
    #[error("cannot {action} a revision that is {from}")]
    IllegalFrom { action: &'static str, from: String },
}

fn verb(action: LifecycleAction) -> &'static str {
    match action {
        LifecycleAction::SaveDraft | LifecycleAction::SavePublish => "save",
        LifecycleAction::Publish => "publish",
        LifecycleAction::Approve => "approve",
        LifecycleAction::Reject => "reject",
        LifecycleAction::Deprecate => "deprecate",
    }
}

/// The status a revision ends in after `action`, or why it may not happen.
/// `from` is `None` for the save actions (the revision does not exist yet).
pub fn transition(
    action: LifecycleAction,
    from: Option<RevisionStatus>,
    kind: WorkspaceKind,
    role: Role,
) -> Result<RevisionStatus, TransitionError> {
    use LifecycleAction as A;
    let denied = || TransitionError::NotPermitted {
        role,
        action: verb(action),
        kind,
    };
    let allowed = match action {
        A::SaveDraft | A::SavePublish | A::Publish => role.can_write(),
        A::Approve | A::Reject | A::Deprecate => role.is_manager(),
    };
    if !allowed {
        return Err(denied());
    }
    let illegal = || TransitionError::IllegalFrom {
        action: verb(action),
        from: from.map_or_else(|| "new".to_string(), |s| s.to_string()),
    };
    if action.creates_revision() != from.is_none() {
        return Err(illegal());
    }
    let publish_result = match kind {
        WorkspaceKind::Personal => Published,
        WorkspaceKind::Team => Proposed,
    };
    match (action, from, kind) {
        (A::SaveDraft, None, _) => Ok(Draft),
        (A::SavePublish, None, _) => Ok(publish_result),
        (A::Publish, Some(Draft | Deprecated), _) => Ok(publish_result),
        (A::Publish, Some(Proposed), WorkspaceKind::Personal) => Ok(Published),
        (A::Approve, Some(Proposed), WorkspaceKind::Team) => Ok(Published),
        (A::Reject, Some(Proposed), WorkspaceKind::Team) => Ok(Draft),
        (A::Deprecate, Some(Published), _) => Ok(Deprecated),
        _ => Err(illegal()),
    }
}

/// Archive / restore of a skill: the personal owner, or a team owner/admin.
pub fn asset_change_allowed(role: Role) -> bool {
    role.is_manager()
}

#[cfg(test)]
mod tests {
    use super::*;
    use LifecycleAction as A;
    use Role::*;
    use WorkspaceKind::*;

    /// The whole legal table. Everything not listed here must be refused.
    fn expected(
        action: A,
        from: Option<RevisionStatus>,
        kind: WorkspaceKind,
        role: Role,
    ) -> Option<RevisionStatus> {
        let writer = role != Viewer;
        let manager = matches!(role, Owner | Admin);
        match (action, from, kind) {
            (A::SaveDraft, None, _) if writer => Some(Draft),
            (A::SavePublish, None, Personal) if writer => Some(Published),
            (A::SavePublish, None, Team) if writer => Some(Proposed),
            (A::Publish, Some(Draft | Deprecated | Proposed), Personal) if writer => {
                Some(Published)
            }
            (A::Publish, Some(Draft | Deprecated), Team) if writer => Some(Proposed),
            (A::Approve, Some(Proposed), Team) if manager => Some(Published),
            (A::Reject, Some(Proposed), Team) if manager => Some(Draft),
            (A::Deprecate, Some(Published), _) if manager => Some(Deprecated),
            _ => None,
        }
    }

    #[test]
    fn every_transition_for_every_role_and_scope() {
        let froms: Vec<Option<RevisionStatus>> = std::iter::once(None)
            .chain(RevisionStatus::ALL.iter().copied().map(Some))
            .collect();
        let mut legal = 0;
        let mut illegal = 0;
        for action in A::ALL {
            for &from in &froms {
                for &kind in WorkspaceKind::ALL {
                    for &role in Role::ALL {
                        let got = transition(action, from, kind, role).ok();
                        assert_eq!(
                            got,
                            expected(action, from, kind, role),
                            "{action:?} from {from:?} in {kind} as {role}"
                        );
                        if got.is_some() {
                            legal += 1;
                        } else {
                            illegal += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(legal + illegal, 6 * 5 * 2 * 4);
        assert!(legal > 20 && illegal > 150);
    }

    #[test]
    fn role_errors_come_before_state_errors() {
        let err = transition(A::Approve, Some(Draft), Team, Member).unwrap_err();
        assert!(matches!(err, TransitionError::NotPermitted { .. }));
        let err = transition(A::Approve, Some(Draft), Team, Admin).unwrap_err();
        assert!(matches!(err, TransitionError::IllegalFrom { .. }));
    }

    #[test]
    fn members_cannot_publish_in_teams() {
        assert_eq!(transition(A::SavePublish, None, Team, Member), Ok(Proposed));
        assert!(transition(A::Approve, Some(Proposed), Team, Member).is_err());
        assert_eq!(
            transition(A::Approve, Some(Proposed), Team, Admin),
            Ok(Published)
        );
        assert!(transition(A::SaveDraft, None, Team, Viewer).is_err());
    }

    #[test]
    fn archive_rights() {
        assert!(asset_change_allowed(Owner));
        assert!(asset_change_allowed(Admin));
        assert!(!asset_change_allowed(Member));
        assert!(!asset_change_allowed(Viewer));
    }
}
