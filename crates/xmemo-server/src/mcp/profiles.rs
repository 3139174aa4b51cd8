//! Client profiles: which tools a connection sees, read from
//! `config/mcp-documentation-contract.json` (embedded as the default, overridable by path) and
//! checked against the tool registry when loaded, so the file and the server cannot disagree.

use super::tools::{self, ToolDef};
use crate::state::McpConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The contract shipped with the server.
pub const DEFAULT_CONTRACT: &str =
    include_str!("../../../../config/mcp-documentation-contract.json");

impl McpConfig {
    /// The enforced profiles: use at startup to refuse a bad contract before serving.
    pub fn profiles(&self) -> Result<Profiles, ContractError> {
        Profiles::load(self.contract_path.as_deref(), &self.execute_profiles)
    }
}

/// Why a contract (or the operator's execute-profile list) was refused.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    #[error("cannot read the MCP contract {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the MCP contract is not valid: {0}")]
    Invalid(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContractFile {
    #[allow(dead_code)]
    version: u32,
    #[allow(dead_code)]
    description: String,
    default_profile: String,
    #[serde(default)]
    #[allow(dead_code)]
    operator_enabled_tools: BTreeMap<String, String>,
    profiles: Vec<ProfileEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileEntry {
    name: String,
    #[allow(dead_code)]
    description: String,
    tools: Vec<String>,
}

/// One profile as the server enforces it.
#[derive(Debug, Clone)]
pub struct Profile {
    pub name: String,
    /// In contract order, then operator-enabled tools in registry order.
    pub tools: Vec<&'static ToolDef>,
}

impl Profile {
    pub fn tool(&self, name: &str) -> Option<&'static ToolDef> {
        self.tools.iter().copied().find(|t| t.name == name)
    }

    pub fn tool_names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name).collect()
    }
}

impl Profiles {
    /// The profile a request at `/mcp/{path}` is served: the path's profile, bounded by the
    /// credential's. **The rule (docs/mcp.md "Which profile a request gets"):** a credential
    /// whose profile is a profile of the contract other than the default — an API key
    /// created with one, an OAuth client the operator mapped to one — gets at any path only
    /// the tools its own profile has; a path can hide tools, never add them (an OAuth
    /// client mapped to `chatgpt-public` does not get `execute_cloud_skill` at
    /// `/mcp/ordinary-full`). The default profile, and a profile name the contract does not
    /// define (a label on a key), bound nothing: such a credential is served the path's
    /// profile as it is.
    pub fn bounded(&self, path: &Profile, credential: Option<&str>) -> Profile {
        let bound = credential
            .filter(|name| *name != self.default_profile())
            .and_then(|name| self.get(name));
        match bound {
            Some(bound) => Profile {
                name: path.name.clone(),
                tools: path
                    .tools
                    .iter()
                    .copied()
                    .filter(|t| bound.tool(t.name).is_some())
                    .collect(),
            },
            None => path.clone(),
        }
    }
}

/// Every profile of the contract, with operator-enabled tools added.
#[derive(Debug, Clone)]
pub struct Profiles {
    default_profile: String,
    profiles: BTreeMap<String, Profile>,
}

impl Profiles {
    /// Parses and checks a contract: known tool names only, no duplicates, a default profile
    /// that exists, and `execute_profiles` naming existing profiles.
    pub fn from_contract(text: &str, execute_profiles: &[String]) -> Result<Self, ContractError> {
        let file: ContractFile = serde_json::from_str(text)
            .map_err(|e| ContractError::Invalid(format!("not the expected JSON shape: {e}")))?;
        let mut profiles = BTreeMap::new();
        for entry in file.profiles {
            xmemo_core::validate_slug("profile", &entry.name).map_err(|e| {
                ContractError::Invalid(format!("profile name `{}`: {e}", entry.name))
            })?;
            let mut tools: Vec<&'static ToolDef> = Vec::new();
            for name in &entry.tools {
                let tool = tools::find(name).ok_or_else(|| {
                    ContractError::Invalid(format!(
                        "profile `{}` lists `{name}`, which this server does not implement (known: {})",
                        entry.name,
                        tools::REGISTRY.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
                    ))
                })?;
                if tools.iter().any(|t| t.name == tool.name) {
                    return Err(ContractError::Invalid(format!(
                        "profile `{}` lists `{name}` twice",
                        entry.name
                    )));
                }
                tools.push(tool);
            }
            let name = entry.name.clone();
            if profiles
                .insert(name.clone(), Profile { name, tools })
                .is_some()
            {
                return Err(ContractError::Invalid(format!(
                    "profile `{}` is defined twice",
                    entry.name
                )));
            }
        }
        if !profiles.contains_key(&file.default_profile) {
            return Err(ContractError::Invalid(format!(
                "default_profile `{}` is not one of the profiles",
                file.default_profile
            )));
        }
        for wanted in execute_profiles {
            let profile = profiles.get_mut(wanted).ok_or_else(|| {
                ContractError::Invalid(format!(
                    "execute profile `{wanted}` is not a profile of the MCP contract"
                ))
            })?;
            for tool in tools::REGISTRY.iter().filter(|t| t.operator_enabled) {
                if profile.tool(tool.name).is_none() {
                    profile.tools.push(tool);
                }
            }
        }
        Ok(Self {
            default_profile: file.default_profile,
            profiles,
        })
    }

    /// The embedded contract, or the file at `path`.
    pub fn load(path: Option<&Path>, execute_profiles: &[String]) -> Result<Self, ContractError> {
        match path {
            None => Self::from_contract(DEFAULT_CONTRACT, execute_profiles),
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ContractError::Read {
                    path: p.display().to_string(),
                    source,
                })?;
                Self::from_contract(&text, execute_profiles)
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.get(name)
    }

    pub fn default_profile(&self) -> &str {
        &self.default_profile
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.profiles.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_contract_loads_and_matches_spec_section_8() {
        let p = Profiles::load(None, &[]).expect("embedded contract");
        assert_eq!(p.default_profile(), "ordinary-full");
        let names: Vec<&str> = p.names().collect();
        assert_eq!(
            names,
            [
                "chatgpt-public",
                "claude-code",
                "cursor-plugin",
                "generic-public",
                "ordinary-full"
            ]
        );
        // SPEC §9: the memory tools are in every profile; SPEC §8: the skill tools only in
        // cursor-plugin and ordinary-full.
        let memory = [
            "remember",
            "recall",
            "update_memory",
            "forget",
            "restore_memory",
        ];
        for full in ["cursor-plugin", "ordinary-full"] {
            let mut expected = vec!["recall_cloud_skill", "save_cloud_skill"];
            expected.extend(memory);
            assert_eq!(p.get(full).map(Profile::tool_names), Some(expected));
        }
        for bare in ["generic-public", "chatgpt-public", "claude-code"] {
            assert_eq!(p.get(bare).map(Profile::tool_names), Some(memory.to_vec()));
        }
        // execute is in no profile by default.
        assert!(
            p.names()
                .filter_map(|n| p.get(n))
                .all(|prof| prof.tool("execute_cloud_skill").is_none())
        );
    }

    #[test]
    fn execute_profiles_add_the_operator_enabled_tool() {
        let p = Profiles::load(None, &["claude-code".into()]).expect("contract");
        assert_eq!(
            p.get("claude-code")
                .map(Profile::tool_names)
                .and_then(|t| t.last().copied()),
            Some("execute_cloud_skill")
        );
        assert!(
            p.get("ordinary-full")
                .and_then(|x| x.tool("execute_cloud_skill"))
                .is_none()
        );
        assert!(Profiles::load(None, &["nope".into()]).is_err());
    }

    #[test]
    fn contracts_naming_unknown_tools_or_profiles_are_refused() {
        let bad_tool = r#"{"version":1,"description":"x","default_profile":"a",
            "profiles":[{"name":"a","description":"x","tools":["rm_rf"]}]}"#;
        assert!(Profiles::from_contract(bad_tool, &[]).is_err());
        let bad_default = r#"{"version":1,"description":"x","default_profile":"b",
            "profiles":[{"name":"a","description":"x","tools":[]}]}"#;
        assert!(Profiles::from_contract(bad_default, &[]).is_err());
        let twice = r#"{"version":1,"description":"x","default_profile":"a",
            "profiles":[{"name":"a","description":"x","tools":[]},{"name":"a","description":"x","tools":[]}]}"#;
        assert!(Profiles::from_contract(twice, &[]).is_err());
        assert!(Profiles::from_contract("[]", &[]).is_err());
    }
}
