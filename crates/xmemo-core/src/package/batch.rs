//! Several skills in one import: a repository, a folder of skill folders, a ZIP of them.
//!
//! - **Skill folders.** A folder that directly holds a file named SKILL.md (in any case) is
//!   a skill folder, with every file under it — as when that folder is imported alone. A
//!   skill folder inside another one belongs to the outer one (the registry published it
//!   that way: its SKILL.md is one of the outer skill's files). Files in no skill folder
//!   (a repository's README, its CI files) are not read.
//! - **One or several.** Files with SKILL.md at their root, or inside their single top
//!   folder, are one skill, read as before ([`Contents::Single`]); anything else holding
//!   skill folders is several ([`Contents::Several`]).
//! - **Slugs** ([`plan_slugs`]): the folder names the skill — its last segment, slugified.
//!   When several folders of one import ask for the same slug, none keeps it bare: each
//!   one is prefixed with its parent folders, one level at a time, until every slug is
//!   unique (`alice/weather` and `bob/weather` become `alice-weather` and `bob-weather`);
//!   folders that are still alike (or too long to prefix) get `-2`, `-3`… in path order.
//!   The rule looks at the paths only, so the same folders always get the same slugs,
//!   whatever their content, in whatever order or in how many requests they are sent.
//! - **Cap**: at most [`MAX_SKILLS_PER_IMPORT`] skills per request, refused before anything
//!   is read further.

use super::classify::{is_ignored_path, unsafe_path_reason};
use super::error::PackageError;
use super::repair::{Repair, RepairKind};
use super::{PackageFile, SKILL_MD, slugify};
use crate::limits::SLUG_MAX_CHARS;
use std::collections::{BTreeMap, BTreeSet};

/// The most skills one request imports (`POST /imports` with a ZIP or a repository URL).
/// More is refused before anything is written; `xmemo import DIR` sends one skill per
/// request and has its own cap ([`MAX_SKILLS_PER_DIRECTORY`]).
pub const MAX_SKILLS_PER_IMPORT: usize = 200;

/// The most skill folders `xmemo import DIR` imports in one run.
pub const MAX_SKILLS_PER_DIRECTORY: usize = 10_000;

/// The most bytes of files `xmemo import DIR` reads in one run (each skill is further
/// bounded by the server's request limit).
pub const MAX_DIRECTORY_BYTES: u64 = 1 << 30;

/// What a set of files holds.
#[derive(Debug)]
pub enum Contents {
    /// One skill: SKILL.md at the root or inside the single top folder (or no skill folder
    /// at all: [`super::read_files`] says what is missing).
    Single(Vec<PackageFile>),
    /// Several skill folders.
    Several(Batch),
}

/// Skill folders, each with its files.
#[derive(Debug)]
pub struct Batch {
    /// Sorted by folder (UTF-8 bytes).
    pub skills: Vec<SkillFiles>,
    /// Files that belong to no skill folder and were not read.
    pub ignored_files: usize,
}

#[derive(Debug)]
pub struct SkillFiles {
    /// The folder, relative to the import's root (`skills/alice/weather`).
    pub folder: String,
    /// Its files, under the folder's own name (`weather/SKILL.md`), so that
    /// [`super::read_files`] sees a single-folder package named like the folder.
    pub files: Vec<PackageFile>,
}

/// Sorts `files` (relative `/` paths) into one skill or several skill folders.
pub fn sort_out(files: Vec<PackageFile>) -> Result<Contents, PackageError> {
    for file in &files {
        if let Some(reason) = unsafe_path_reason(&file.path) {
            return Err(PackageError::unsafe_path(&file.path, reason));
        }
    }
    let paths: Vec<&str> = files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| !is_ignored_path(p))
        .collect();
    let folders = skill_folders(paths.iter().copied());
    let single_top = {
        let tops: BTreeSet<&str> = paths
            .iter()
            .map(|p| p.split_once('/').map_or(*p, |(top, _)| top))
            .collect();
        (tops.len() == 1).then(|| tops.into_iter().next()).flatten()
    };
    let is_single = folders.is_empty()
        || folders.iter().any(|f| f.is_empty())
        || (folders.len() == 1 && single_top == Some(folders[0].as_str()));
    if is_single {
        return Ok(Contents::Single(files));
    }
    if folders.len() > MAX_SKILLS_PER_IMPORT {
        return Err(PackageError::TooManySkills {
            limit: MAX_SKILLS_PER_IMPORT as u64,
            actual: folders.len() as u64,
        });
    }
    let mut skills: Vec<SkillFiles> = folders
        .iter()
        .map(|folder| SkillFiles {
            folder: folder.clone(),
            files: Vec::new(),
        })
        .collect();
    let mut ignored_files = 0;
    for file in files {
        if is_ignored_path(&file.path) {
            continue;
        }
        match owner_of(&folders, &file.path) {
            Some(i) => {
                let folder = &skills[i].folder;
                let name = folder.rsplit('/').next().unwrap_or(folder);
                let rel = &file.path[folder.len() + 1..];
                let path = format!("{name}/{rel}");
                skills[i].files.push(PackageFile {
                    path,
                    bytes: file.bytes,
                });
            }
            None => ignored_files += 1,
        }
    }
    Ok(Contents::Several(Batch {
        skills,
        ignored_files,
    }))
}

/// The skill folders among `paths` (relative, `/`-separated, junk already left out):
/// every folder that directly holds a file named SKILL.md in any case, except those inside
/// another one; `""` when the root itself holds SKILL.md. Sorted by UTF-8 bytes.
pub fn skill_folders<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut all: Vec<String> = paths
        .into_iter()
        .filter_map(|p| {
            let (folder, name) = p.rsplit_once('/').unwrap_or(("", p));
            name.eq_ignore_ascii_case(SKILL_MD)
                .then(|| folder.to_string())
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if all.iter().any(String::is_empty) {
        return vec![String::new()];
    }
    // Sorted, so an outer folder comes before everything inside it.
    let mut outer: Vec<String> = Vec::with_capacity(all.len());
    for folder in all.drain(..) {
        let inside = outer.iter().any(|o| {
            folder.len() > o.len()
                && folder.starts_with(o.as_str())
                && folder.as_bytes()[o.len()] == b'/'
        });
        if !inside {
            outer.push(folder);
        }
    }
    outer
}

/// The index of the skill folder `path` is in.
fn owner_of(folders: &[String], path: &str) -> Option<usize> {
    // Folders are sorted and none is inside another, so at most one matches.
    folders.iter().position(|f| {
        path.len() > f.len() && path.starts_with(f.as_str()) && path.as_bytes()[f.len()] == b'/'
    })
}

/// The slug one skill folder gets, and the note when a collision changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlugPlan {
    pub folder: String,
    pub slug: String,
    /// A [`RepairKind::SlugCollision`] when the folder did not get its own name.
    pub note: Option<Repair>,
}

/// Slugs for skill folders (see the module documentation for the rule), in the order of
/// `folders`.
pub fn plan_slugs(folders: &[String]) -> Vec<SlugPlan> {
    let segments: Vec<Vec<&str>> = folders
        .iter()
        .map(|f| f.split('/').filter(|s| !s.is_empty()).collect())
        .collect();
    // How many parent folders each slug is prefixed with.
    let mut levels = vec![0usize; folders.len()];
    let slug_at = |i: usize, level: usize| candidate(&segments[i], level, &folders[i]);
    loop {
        let mut by_slug: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, level) in levels.iter().enumerate() {
            by_slug.entry(slug_at(i, *level)).or_default().push(i);
        }
        let mut moved = false;
        for group in by_slug.values().filter(|g| g.len() > 1) {
            for &i in group {
                if levels[i] + 1 < segments[i].len().max(1)
                    && slug_at(i, levels[i] + 1) != slug_at(i, levels[i])
                {
                    levels[i] += 1;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    // Still alike: `-2`, `-3`… in path order, never onto a slug another folder holds.
    let mut slugs: Vec<String> = (0..folders.len()).map(|i| slug_at(i, levels[i])).collect();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut order: Vec<usize> = (0..folders.len()).collect();
    order.sort_by(|a, b| folders[*a].as_bytes().cmp(folders[*b].as_bytes()));
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in &slugs {
        *counts.entry(s.clone()).or_default() += 1;
    }
    let mut suffixed = vec![false; folders.len()];
    for &i in &order {
        if counts[&slugs[i]] > 1 && taken.contains(&slugs[i]) {
            let base = slugs[i].clone();
            let mut n = 2;
            loop {
                let candidate = with_suffix(&base, n);
                if !taken.contains(&candidate) && !counts.contains_key(&candidate) {
                    slugs[i] = candidate;
                    break;
                }
                n += 1;
            }
            suffixed[i] = true;
        }
        taken.insert(slugs[i].clone());
    }
    // The note names every folder that wanted the same bare slug.
    let mut wanted: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (i, folder) in folders.iter().enumerate() {
        wanted.entry(slug_at(i, 0)).or_default().push(folder);
    }
    (0..folders.len())
        .map(|i| {
            let bare = slug_at(i, 0);
            let note = (slugs[i] != bare).then(|| {
                let others = &wanted[&bare];
                let mut listed: Vec<&str> = others.iter().take(5).copied().collect();
                listed.sort();
                let more = others.len().saturating_sub(listed.len());
                let mut list = listed.join(", ");
                if more > 0 {
                    list.push_str(&format!(" and {more} more"));
                }
                let how = if suffixed[i] {
                    "a number added (the folders are alike even with their parents)"
                } else {
                    "its parent folders added until the slug is unique"
                };
                Repair::new(
                    RepairKind::SlugCollision,
                    "slug",
                    format!(
                        "`{bare}` is asked for by {} skill folders of this import ({list})",
                        others.len()
                    ),
                    format!("imported as `{}`: {how}", slugs[i]),
                )
            });
            SlugPlan {
                folder: folders[i].clone(),
                slug: slugs[i].clone(),
                note,
            }
        })
        .collect()
}

/// The slug of a folder prefixed with `level` parent folders: the folder's own part is
/// kept whole, the parents' part is cut to fit 64 characters.
fn candidate(segments: &[&str], level: usize, folder: &str) -> String {
    let own = segments
        .last()
        .and_then(|s| slugify(s))
        .unwrap_or_else(|| fallback_slug(folder));
    if level == 0 || segments.len() < 2 {
        return own;
    }
    let from = segments.len().saturating_sub(1 + level);
    let parents = segments[from..segments.len() - 1].join("-");
    let Some(prefix) = slugify(&parents) else {
        return own;
    };
    let room = SLUG_MAX_CHARS.saturating_sub(own.len() + 1);
    if room == 0 {
        return own;
    }
    let prefix = prefix[..prefix.len().min(room)].trim_end_matches('-');
    if prefix.is_empty() {
        own
    } else {
        format!("{prefix}-{own}")
    }
}

/// A folder whose name holds no letter or digit a slug can use.
fn fallback_slug(folder: &str) -> String {
    format!("skill-{}", &crate::content_hash(folder.as_bytes())[..8])
}

fn with_suffix(slug: &str, n: usize) -> String {
    let suffix = format!("-{n}");
    let keep = SLUG_MAX_CHARS - suffix.len();
    let head = slug[..slug.len().min(keep)].trim_end_matches('-');
    format!("{head}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate_slug;

    fn plan(folders: &[&str]) -> Vec<(String, bool)> {
        let folders: Vec<String> = folders.iter().map(|s| s.to_string()).collect();
        plan_slugs(&folders)
            .into_iter()
            .map(|p| {
                validate_slug("slug", &p.slug).unwrap();
                (p.slug, p.note.is_some())
            })
            .collect()
    }

    #[test]
    fn folders_name_skills_and_collisions_take_their_parents() {
        assert_eq!(
            plan(&["skills/pdf", "skills/docx"]),
            [("pdf".into(), false), ("docx".into(), false)]
        );
        assert_eq!(
            plan(&[
                "skills/alice/weather",
                "skills/bob/weather",
                "skills/bob/maps"
            ]),
            [
                ("alice-weather".into(), true),
                ("bob-weather".into(), true),
                ("maps".into(), false)
            ]
        );
        // a prefixed slug that meets a folder's own name: both move on
        assert_eq!(
            plan(&["x/a/weather", "y/a/weather", "a-weather"]),
            [
                ("x-a-weather".into(), true),
                ("y-a-weather".into(), true),
                ("a-weather".into(), false)
            ]
        );
        // alike even with every parent: numbered in path order
        assert_eq!(
            plan(&["Weather", "weather"]),
            [("weather".into(), false), ("weather-2".into(), true)]
        );
    }

    #[test]
    fn the_plan_depends_on_paths_only() {
        let a = plan(&["skills/bob/weather", "skills/alice/weather"]);
        let b = plan(&["skills/alice/weather", "skills/bob/weather"]);
        assert_eq!(a[0], b[1]);
        assert_eq!(a[1], b[0]);
    }

    #[test]
    fn long_and_odd_names_still_give_valid_slugs() {
        let long = "a".repeat(64);
        let p = plan(&[
            &format!("x/{long}"),
            &format!("y/{long}"),
            "日本/技能",
            "中文/技能",
        ]);
        assert_eq!(p[0].0, long);
        assert_eq!(p[1].0.len(), 64);
        assert!(p[1].0.ends_with("-2"), "{:?}", p[1]);
        assert!(
            p[2].0.starts_with("skill-") && p[3].0.starts_with("skill-"),
            "{p:?}"
        );
        assert_ne!(p[2].0, p[3].0);
    }

    #[test]
    fn skill_folders_are_the_outermost_ones() {
        assert_eq!(
            skill_folders([
                "README.md",
                "skills/a/SKILL.md",
                "skills/a/inner/SKILL.md",
                "skills/b/skill.md",
                "skills/b/refs/x.md",
                "skills/ab/SKILL.md",
            ]),
            ["skills/a", "skills/ab", "skills/b"]
        );
        assert_eq!(skill_folders(["SKILL.md", "x/SKILL.md"]), [""]);
    }

    #[test]
    fn sorting_out_one_or_several() {
        let f = |p: &str| PackageFile::new(p, b"x".to_vec());
        assert!(matches!(
            sort_out(vec![f("demo/SKILL.md"), f("demo/x/SKILL.md")]).unwrap(),
            Contents::Single(_)
        ));
        assert!(matches!(
            sort_out(vec![f("README.md")]).unwrap(),
            Contents::Single(_)
        ));
        let Contents::Several(batch) = sort_out(vec![
            f("repo/README.md"),
            f("repo/skills/a/SKILL.md"),
            f("repo/skills/a/scripts/run.py"),
            f("repo/skills/b/Skill.md"),
            f("repo/.git/config"),
        ])
        .unwrap() else {
            panic!("several")
        };
        assert_eq!(batch.ignored_files, 1);
        let names: Vec<(&str, Vec<&str>)> = batch
            .skills
            .iter()
            .map(|s| {
                (
                    s.folder.as_str(),
                    s.files.iter().map(|f| f.path.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("repo/skills/a", vec!["a/SKILL.md", "a/scripts/run.py"]),
                ("repo/skills/b", vec!["b/Skill.md"]),
            ]
        );
        let many: Vec<PackageFile> = (0..=MAX_SKILLS_PER_IMPORT)
            .map(|i| f(&format!("s/{i}/SKILL.md")))
            .collect();
        assert_eq!(sort_out(many).unwrap_err().kind(), "too_many_skills");
    }
}
