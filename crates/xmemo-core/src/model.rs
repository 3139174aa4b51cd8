use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $(#[serde(rename = $text)] $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        "unknown value `{other}`, expected one of: {}",
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

string_enum!(
    /// The six component types of SPEC §1.
    ComponentType {
        Reference => "reference",
        Example => "example",
        Template => "template",
        Document => "document",
        Artifact => "artifact",
        Script => "script",
    }
);

string_enum!(
    /// Revision status (SPEC §2).
    RevisionStatus {
        Draft => "draft",
        Proposed => "proposed",
        Published => "published",
        Deprecated => "deprecated",
    }
);

string_enum!(
    /// Skill asset status (SPEC §1).
    AssetStatus { Active => "active", Archived => "archived" }
);

string_enum!(
    /// Whether a workspace belongs to one account or to a team.
    WorkspaceKind { Personal => "personal", Team => "team" }
);

string_enum!(
    /// Team roles (SPEC §7). The owner of a personal workspace acts as `owner`.
    Role { Owner => "owner", Admin => "admin", Member => "member", Viewer => "viewer" }
);

string_enum!(
    /// Where a team invitation stands. Only `pending` can change, and only once.
    InvitationStatus {
        Pending => "pending",
        Accepted => "accepted",
        Declined => "declined",
        Revoked => "revoked",
    }
);

string_enum!(
    /// What a save asks for (SPEC §4).
    SaveIntent { Draft => "draft", Publish => "publish" }
);

string_enum!(
    /// API key / token scopes.
    Scope { Read => "memory:read", Write => "memory:write" }
);

string_enum!(
    /// What a memory records (SPEC §9).
    MemoryKind {
        Preference => "preference",
        Fact => "fact",
        Decision => "decision",
        Todo => "todo",
        Progress => "progress",
        Note => "note",
    }
);

string_enum!(
    /// A memory is recalled while active; forgetting is soft and restorable.
    MemoryStatus { Active => "active", Forgotten => "forgotten" }
);

impl Role {
    /// May write content (save drafts, propose).
    pub fn can_write(self) -> bool {
        !matches!(self, Role::Viewer)
    }
    /// May approve, reject, deprecate, archive and manage members.
    pub fn is_manager(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }
    /// Whether someone holding `self` may hand out `other` (invite with it, or set it): never
    /// a role above one's own.
    pub fn may_grant(self, other: Role) -> bool {
        self.rank() >= other.rank()
    }
    fn rank(self) -> u8 {
        match self {
            Role::Owner => 3,
            Role::Admin => 2,
            Role::Member => 1,
            Role::Viewer => 0,
        }
    }
}

/// One component as a client submits it (bytes already decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentInput {
    pub logical_path: String,
    pub component_type: ComponentType,
    pub content: Vec<u8>,
}

/// The content of one revision: what the canonical hash covers.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionContent {
    pub name: String,
    pub description: String,
    pub instruction_body: String,
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub components: Vec<ComponentInput>,
}

/// A component's manifest entry (everything but the bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentManifest {
    pub logical_path: String,
    #[serde(rename = "type")]
    pub component_type: ComponentType,
    pub content_hash: String,
    pub size: u64,
    pub media_type: String,
}

#[cfg(test)]
mod tests {
    use super::Role;

    #[test]
    fn a_role_grants_only_roles_up_to_its_own() {
        use Role::*;
        let order = [Viewer, Member, Admin, Owner];
        for (i, holder) in order.iter().enumerate() {
            for (j, granted) in order.iter().enumerate() {
                assert_eq!(
                    holder.may_grant(*granted),
                    j <= i,
                    "{holder} grants {granted}"
                );
            }
        }
    }
}
