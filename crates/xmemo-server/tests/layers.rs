//! The layers of xmemo-server, kept: every module of `src/` sits in one row of the layer
//! table in ARCHITECTURE.md ("Layers of xmemo-server", top layer first), and a module may use
//! only its own top-level module and the modules of the rows below its own. Two modules of
//! one row (REST and MCP, say) never use each other. The table is read from ARCHITECTURE.md,
//! so the document and this test cannot disagree.
//!
//! Also kept here: no two modules of xmemo-bench or xmemo-sandbox use each other, directly or
//! around a longer circle.
//!
//! Uses are found with `syn`: `use` trees, paths in code and types, and `crate::`/`super::`
//! paths inside macro invocations, each resolved from the module it is written in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

const TABLE_START: &str = "<!-- layers:xmemo-server:start -->";
const TABLE_END: &str = "<!-- layers:xmemo-server:end -->";

fn crate_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .join(name)
}

/// The rows of the layer table: the modules of each row, top row first.
fn layer_table() -> Vec<(String, Vec<String>)> {
    let doc = crate_dir("..").join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&doc).expect("ARCHITECTURE.md");
    let start = text.find(TABLE_START).expect("layer table start marker");
    let end = text.find(TABLE_END).expect("layer table end marker");
    let rows: Vec<(String, Vec<String>)> = text[start..end]
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| layer"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let modules = cells[2]
                .split(',')
                .map(|m| m.trim().trim_matches('`').to_string())
                .filter(|m| !m.is_empty())
                .collect();
            (cells[1].to_string(), modules)
        })
        .collect();
    assert!(
        rows.len() >= 4,
        "the layer table has too few rows: {rows:?}"
    );
    rows
}

/// Every `.rs` file below `src`, with the module path it defines (`http/mod.rs` → `http`).
fn source_files(src: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("below src");
                let mut module: Vec<String> = rel
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    module.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    module.pop();
                }
                out.push((path, module));
            }
        }
    }
    out.sort();
    assert!(!out.is_empty(), "no source files under {}", src.display());
    out
}

/// The absolute module paths (`["service", "oauth", …]`) one file uses.
struct Uses {
    /// The module the code being visited is in (the file's, plus inline `mod` blocks).
    module: Vec<String>,
    found: Vec<(Vec<String>, String)>,
}

impl Uses {
    /// `segments` as written in module `self.module`, made absolute; `None` for a path that
    /// does not start at the crate (an external crate, a local name).
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let mut base = self.module.clone();
        let mut rest = segments;
        match segments.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &segments[1..];
            }
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            Some("self") => rest = &segments[1..],
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn note(&mut self, segments: Vec<String>, what: String) {
        if let Some(path) = self.resolve(&segments) {
            self.found.push((path, what));
        }
    }

    /// `crate :: a :: b` / `super :: …` sequences in a macro's tokens, which syn leaves
    /// unparsed.
    fn scan_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let flat: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < flat.len() {
            match &flat[i] {
                proc_macro2::TokenTree::Group(g) => self.scan_tokens(g.stream()),
                proc_macro2::TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    loop {
                        let colons = matches!((&flat.get(j), &flat.get(j + 1)),
                            (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                                if a.as_char() == ':' && b.as_char() == ':');
                        match (colons, flat.get(j + 2)) {
                            (true, Some(proc_macro2::TokenTree::Ident(next))) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    let what = segments.join("::");
                    self.note(segments, what);
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

fn use_tree_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_tree_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix.clone();
            if n.ident != "self" {
                full.push(n.ident.to_string());
            }
            out.push(full);
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_tree_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_tree_paths(&u.tree, &mut Vec::new(), &mut paths);
        for p in paths {
            let what = format!("use {}", p.join("::"));
            self.note(p, what);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let what = segments.join("::");
        self.note(segments, what);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.scan_tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// One file: where it is, the module it defines, and the (absolute path, as written) of
/// everything it uses from its own crate.
type FileUses = (PathBuf, Vec<String>, Vec<(Vec<String>, String)>);

fn crate_uses(src: &Path) -> Vec<FileUses> {
    source_files(src)
        .into_iter()
        .map(|(path, module)| {
            let text = std::fs::read_to_string(&path).expect("read source");
            let file = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            let mut uses = Uses {
                module: module.clone(),
                found: Vec::new(),
            };
            uses.visit_file(&file);
            (path, module, uses.found)
        })
        .collect()
}

/// The names the crate root (`lib.rs`, else `main.rs`) re-exports, by the top-level module
/// they come from.
fn root_reexports(src: &Path) -> BTreeMap<String, String> {
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no lib.rs or main.rs in {}", src.display()));
    let text = std::fs::read_to_string(&root).expect("crate root");
    let file = syn::parse_file(&text).expect("the crate root parses");
    let mut out = BTreeMap::new();
    for item in file.items {
        if let syn::Item::Use(u) = item {
            let mut paths = Vec::new();
            use_tree_paths(&u.tree, &mut Vec::new(), &mut paths);
            for p in paths {
                if let (Some(first), Some(last)) = (p.first(), p.last())
                    && p.len() > 1
                {
                    out.insert(last.clone(), first.clone());
                }
            }
        }
    }
    out
}

/// The top-level module an absolute path lands in, through the root's re-exports.
fn top_module(path: &[String], reexports: &BTreeMap<String, String>) -> Option<String> {
    let first = path.first()?;
    Some(
        reexports
            .get(first)
            .cloned()
            .unwrap_or_else(|| first.clone()),
    )
}

#[test]
fn no_module_of_the_server_uses_a_higher_layer() {
    let src = crate_dir("xmemo-server").join("src");
    let table = layer_table();
    let mut row_of: BTreeMap<String, usize> = BTreeMap::new();
    for (i, (layer, modules)) in table.iter().enumerate() {
        for m in modules {
            assert!(
                row_of.insert(m.clone(), i).is_none(),
                "`{m}` is in two rows of the layer table (the second: {layer})"
            );
        }
    }
    let reexports = root_reexports(&src);
    let mut violations = Vec::new();
    let mut checked = 0usize;
    for (path, module, uses) in crate_uses(&src) {
        let Some(own) = module.first() else {
            continue; // lib.rs: declares the modules, uses none of them
        };
        let own_row = *row_of.get(own).unwrap_or_else(|| {
            panic!(
                "module `{own}` ({}) is in no row of the layer table in ARCHITECTURE.md: put it in the layer it belongs to",
                path.display()
            )
        });
        for (target, written) in uses {
            let Some(top) = top_module(&target, &reexports) else {
                continue;
            };
            checked += 1;
            if &top == own {
                continue;
            }
            match row_of.get(&top) {
                Some(&row) if row > own_row => {}
                Some(&row) => violations.push(format!(
                    "{}: `{written}` — `{own}` ({}) uses `{top}` ({}), a layer {}",
                    path.display(),
                    table[own_row].0,
                    table[row].0,
                    if row == own_row {
                        "beside it"
                    } else {
                        "above it"
                    }
                )),
                None => violations.push(format!(
                    "{}: `{written}` names `{top}`, which is in no row of the layer table",
                    path.display()
                )),
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} uses found: the parser is not reading the crate"
    );
    assert!(
        violations.is_empty(),
        "modules using a layer above or beside their own:\n{}",
        violations.join("\n")
    );
}

/// The node of a crate's root file (`lib.rs`/`main.rs`) and the items defined there.
const ROOT: &str = "(crate root)";

/// The edges between the top-level modules of a crate (`a` uses `b`). A name re-exported at
/// the root counts as a use of the module it comes from; an item defined in the root file is
/// the node [`ROOT`], which uses every module (it declares them and calls or re-exports
/// them), so a module using such an item closes a circle.
fn module_edges(crate_name: &str) -> BTreeMap<String, BTreeSet<String>> {
    module_edges_in(&crate_dir(crate_name).join("src"))
}

fn module_edges_in(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = source_files(src)
        .into_iter()
        .filter_map(|(_, m)| m.first().cloned())
        .collect();
    let reexports = root_reexports(src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.insert(ROOT.to_string(), modules.clone());
    for (_, module, uses) in crate_uses(src) {
        let own = module.first().cloned().unwrap_or_else(|| ROOT.to_string());
        for (target, _) in uses {
            let Some(top) = top_module(&target, &reexports).map(|m| {
                if modules.contains(&m) {
                    m
                } else {
                    ROOT.to_string()
                }
            }) else {
                continue;
            };
            if top != own {
                edges.entry(own.clone()).or_default().insert(top);
            }
        }
    }
    edges
}

/// The crate-root rules of [`module_edges`], on a crate made for the test.
#[test]
fn edges_follow_root_reexports_and_count_root_items() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).expect("src");
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).expect("write");
    write(
        "lib.rs",
        "mod a;\nmod b;\npub use b::Thing;\npub fn helper() {}\n",
    );
    write(
        "a.rs",
        "use crate::Thing;\npub fn f() { crate::helper() }\n",
    );
    write("b.rs", "pub struct Thing;\n");
    let edges = module_edges_in(&src);
    assert_eq!(
        edges
            .get("a")
            .map(|e| e.iter().map(String::as_str).collect::<Vec<_>>()),
        Some(vec![ROOT, "b"])
    );
    assert_eq!(
        find_cycle(&edges),
        Some(vec![ROOT.to_string(), "a".to_string(), ROOT.to_string()])
    );
}

/// A circle of modules, if there is one (depth-first search).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn walk(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = walk(next, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(c) = walk(node, edges, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_cycle_finder_finds_a_circle() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&edges), None);
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn the_bench_and_the_sandbox_have_no_module_circles() {
    for crate_name in ["xmemo-bench", "xmemo-sandbox", "xmemo-server"] {
        let edges = module_edges(crate_name);
        assert!(
            edges.len() > 3,
            "{crate_name}: only {} modules use another: the parser is not reading it",
            edges.len()
        );
        if let Some(cycle) = find_cycle(&edges) {
            panic!(
                "{crate_name}: these modules use each other in a circle: {}",
                cycle.join(" → ")
            );
        }
    }
}
