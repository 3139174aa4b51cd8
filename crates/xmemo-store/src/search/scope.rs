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

impl Facets {
    /// Whether `filter` keeps the row.
    pub fn admitted_by(&self, filter: &MemoryFilter) -> bool {
        let equal = |want: &Option<String>, have: Option<&str>| {
            want.as_deref().is_none_or(|w| have == Some(w))
        };
        (filter.include_forgotten || self.active)
            && self
                .expires_at
                .as_deref()
                .is_none_or(|e| e > filter.now.as_str())
            && equal(&filter.kind, Some(&self.kind))
            && equal(&filter.project, Some(&self.project))
            && equal(&filter.agent_instance_id, self.agent_instance_id.as_deref())
            && filter
                .since
                .as_deref()
                .is_none_or(|s| self.updated_at.as_str() >= s)
            && filter
                .until
                .as_deref()
                .is_none_or(|u| self.updated_at.as_str() <= u)
            && filter.tags.iter().all(|t| self.tags.contains(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Facets {
        Facets {
            active: true,
            kind: "note".into(),
            project: "billing".into(),
            agent_instance_id: Some("a1".into()),
            tags: vec!["ops".into(), "db".into()],
            expires_at: Some("2026-12-10T00:00:00Z".into()),
            updated_at: "2026-12-01T00:00:00Z".into(),
        }
    }

    fn filter() -> MemoryFilter {
        MemoryFilter {
            now: "2026-12-05T00:00:00Z".into(),
            ..MemoryFilter::default()
        }
    }

    #[test]
    fn each_filter_keeps_or_drops_the_row_as_the_sql_of_a_recall_does() {
        let r = row();
        assert!(r.admitted_by(&filter()));
        assert!(!filter().narrows());
        let with = |f: &dyn Fn(&mut MemoryFilter)| {
            let mut x = filter();
            f(&mut x);
            assert!(x.narrows() || x.include_forgotten || x.now != filter().now);
            r.admitted_by(&x)
        };
        assert!(with(&|f| f.project = Some("billing".into())));
        assert!(!with(&|f| f.project = Some("bill".into())));
        assert!(with(&|f| f.kind = Some("note".into())));
        assert!(!with(&|f| f.kind = Some("decision".into())));
        assert!(with(&|f| f.agent_instance_id = Some("a1".into())));
        assert!(!with(&|f| f.agent_instance_id = Some("a2".into())));
        assert!(with(&|f| f.tags = vec!["db".into(), "ops".into()]));
        assert!(!with(&|f| f.tags = vec!["db".into(), "web".into()]));
        assert!(with(&|f| f.since = Some("2026-12-01T00:00:00Z".into())));
        assert!(!with(&|f| f.since = Some("2026-12-02T00:00:00Z".into())));
        assert!(with(&|f| f.until = Some("2026-12-01T00:00:00Z".into())));
        assert!(!with(&|f| f.until = Some("2026-11-30T00:00:00Z".into())));
        // Expired at or before now: left out.
        assert!(!with(&|f| f.now = "2026-12-10T00:00:00Z".into()));
        // Forgotten: only when asked for.
        let forgotten = Facets {
            active: false,
            ..row()
        };
        assert!(!forgotten.admitted_by(&filter()));
        assert!(forgotten.admitted_by(&MemoryFilter {
            include_forgotten: true,
            ..filter()
        }));
        // No agent instance never equals one asked for.
        let anonymous = Facets {
            agent_instance_id: None,
            ..row()
        };
        assert!(!anonymous.admitted_by(&MemoryFilter {
            agent_instance_id: Some("a1".into()),
            ..filter()
        }));
    }
}
