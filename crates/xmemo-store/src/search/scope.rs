//! Which rows a query may rank: its workspaces and, for memories, the recall's filters. Both
//! lanes apply the scope while they rank (issue #30: the meaning lane took its candidates from
//! the whole workspace before the project filter, and a recall whose filters left too few rows
//! ranked again with more candidates). Pure.

/// What a query may see.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    /// The caller's workspaces; a row of any other is never ranked.
    pub workspaces: Vec<String>,
    /// A memory recall's filters (none for Level 0, whose rows are the published skills).
    pub memories: Option<MemoryFilter>,
}

impl Scope {
    pub fn workspaces(workspaces: &[String]) -> Scope {
        Scope {
            workspaces: workspaces.to_vec(),
            memories: None,
        }
    }
}

/// A memory recall's filters, as the SQL of an unranked recall applies them (SPEC §9):
/// strings compare byte by byte, as the database's `COLLATE "C"` text columns do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryFilter {
    pub include_forgotten: bool,
    /// Memories whose `expires_at` is at or before this instant are left out.
    pub now: String,
    pub kind: Option<String>,
    pub project: Option<String>,
    pub agent_instance_id: Option<String>,
    /// Bounds on `updated_at`, inclusive.
    pub since: Option<String>,
    pub until: Option<String>,
    /// Memories carrying every one of these tags.
    pub tags: Vec<String>,
}

impl MemoryFilter {
    /// The filter keeps only part of a workspace's live memories (beyond forgotten and
    /// expired ones, which are few): worth checking before the meaning lane's shortlist.
    pub fn narrows(&self) -> bool {
        self.kind.is_some()
            || self.project.is_some()
            || self.agent_instance_id.is_some()
            || self.since.is_some()
            || self.until.is_some()
            || !self.tags.is_empty()
    }
}

/// What a memory row holds of the filters' fields, read with its text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facets {
    /// Not forgotten.
    pub active: bool,
    pub kind: String,
    /// `""` for none.
    pub project: String,
    pub agent_instance_id: Option<String>,
    pub tags: Vec<String>,
    pub expires_at: Option<String>,
    pub updated_at: String,
}
