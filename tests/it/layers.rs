//! The layer rules of `AGENTS.md`, checked against the source itself.
//!
//! The table under "Layers, top to bottom" places every module of `src/` in a row. Every
//! `crate::…` and `super::…` path outside comments and tests is read as a reference from
//! its file to the file that defines the path's longest known prefix. Then:
//!
//! - no module refers to one in a row above its own;
//! - no two modules refer to each other, directly or around a longer circle;
//! - no two files refer to each other (a parent's `mod.rs` naming its children by their
//!   bare names is the module's face, and is not read as a reference).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: where it is, the module path it defines, and its code with comments
/// and its test module left out.
struct Source {
    file: String,
    module: Vec<String>,
    code: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The rows of the layer table in `AGENTS.md`: each top-level module of `src/` with the
/// index of its row, top first.
fn layer_rows() -> BTreeMap<String, usize> {
    let agents = std::fs::read_to_string(root().join("AGENTS.md")).expect("read AGENTS.md");
    let table = agents
        .split("| layer | modules | job |")
        .nth(1)
        .expect("AGENTS.md has the layer table (`| layer | modules | job |`)");
    let mut rows = BTreeMap::new();
    for (index, line) in table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .enumerate()
    {
        let modules = line.split('|').nth(2).expect("a modules column");
        for entry in modules.split('`').skip(1).step_by(2) {
            let name = entry.strip_prefix("src/").unwrap_or_else(|| {
                panic!("`{entry}` in AGENTS.md's layer table is not under src/")
            });
            let name = name.trim_end_matches('/').trim_end_matches(".rs");
            let earlier = rows.insert(name.to_owned(), index);
            assert!(
                earlier.is_none(),
                "`{name}` is in two rows of the layer table"
            );
        }
    }
    assert!(rows.len() > 10, "the layer table was not read: {rows:?}");
    rows
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Every library file outside tests (`*_tests.rs`, `tests.rs`, `#[cfg(test)] mod`).
fn sources() -> Vec<Source> {
    let src = root().join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let mut sources = Vec::new();
    for path in paths {
        let file = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .into_owned();
        let name = path
            .file_stem()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if file.starts_with("bin/")
            || file == "main.rs"
            || file == "lib.rs"
            || name == "tests"
            || name.ends_with("_tests")
        {
            continue;
        }
        let mut module: Vec<String> = file
            .trim_end_matches(".rs")
            .split('/')
            .map(str::to_owned)
            .collect();
        if name == "mod" {
            module.pop();
        }
        let text = std::fs::read_to_string(&path).expect("read source");
        let code = text
            .split("#[cfg(test)]\nmod ")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        sources.push(Source { file, module, code });
    }
    sources
}

/// The paths a use tree starting at `text` names: `a::b`, `a::{b, c::d}`, `a::b::*`.
fn use_tree(text: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut path = prefix.to_vec();
    if text.starts_with('{') {
        return group(text, 1, &path, out);
    }
    loop {
        let start = at;
        while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
            at += 1;
        }
        if at > start {
            path.push(text[start..at].to_owned());
        }
        if text[at..].starts_with("::{") {
            return group(text, at + 3, &path, out);
        } else if text[at..].starts_with("::") {
            at += 2;
        } else {
            out.push(path);
            return at;
        }
    }
}

/// The paths of a `{a, b::c}` group whose items start at `at`; where the group ends.
fn group(text: &str, mut at: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let skip_space = |at: usize| at + text[at..].len() - text[at..].trim_start().len();
    loop {
        at = skip_space(at);
        if at >= text.len() {
            return at;
        }
        if text[at..].starts_with('}') {
            return at + 1;
        }
        at = skip_space(at + use_tree(&text[at..], prefix, out));
        if text[at..].starts_with(',') {
            at += 1;
        } else if !text[at..].starts_with('}') {
            return at;
        }
    }
}

/// Every module path `source` names through `crate::` or `super::`, made absolute.
fn named_paths(source: &Source) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let code = &source.code;
    for (start, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        // An inner `super::` of `super::super::x` was read with the first.
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut base: Vec<String> = Vec::new();
        let mut rest = &code[start..];
        if let Some(after) = rest.strip_prefix("crate::") {
            rest = after;
        } else {
            base.clone_from(&source.module);
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
        }
        let mut found = Vec::new();
        use_tree(rest, &base, &mut found);
        paths.extend(found);
    }
    paths
}

/// Which file defines `path`: the longest prefix of it that is a module of its own.
fn defining_file<'a>(
    path: &[String],
    files: &'a BTreeMap<Vec<String>, String>,
) -> Option<&'a String> {
    (1..=path.len())
        .rev()
        .find_map(|len| files.get(&path[..len]))
}

/// Each file's references to other files.
fn references(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let files: BTreeMap<Vec<String>, String> = sources
        .iter()
        .map(|source| (source.module.clone(), source.file.clone()))
        .collect();
    let mut references = BTreeMap::new();
    for source in sources {
        let targets: BTreeSet<String> = named_paths(source)
            .iter()
            .filter_map(|path| defining_file(path, &files))
            .filter(|target| **target != source.file)
            .cloned()
            .collect();
        references.insert(source.file.clone(), targets);
    }
    references
}

fn top_module(file: &str) -> &str {
    let first = file.split('/').next().expect("a name");
    first.trim_end_matches(".rs")
}

#[test]
fn every_module_has_a_row_in_the_layer_table() {
    let rows = layer_rows();
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("src")).expect("read src") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let name = name.trim_end_matches(".rs").to_owned();
        if !["bin", "main", "lib", "snapshots"].contains(&name.as_str()) {
            modules.insert(name);
        }
    }
    let in_table: BTreeSet<String> = rows.keys().cloned().collect();
    let unplaced: Vec<_> = modules.difference(&in_table).collect();
    let gone: Vec<_> = in_table.difference(&modules).collect();
    assert!(
        unplaced.is_empty(),
        "give these modules a row in AGENTS.md's layer table: {unplaced:?}"
    );
    assert!(
        gone.is_empty(),
        "AGENTS.md's layer table names modules that are gone: {gone:?}"
    );
}

#[test]
fn no_module_refers_to_a_layer_above_its_own() {
    let rows = layer_rows();
    let references = references(&sources());
    let mut upward = Vec::new();
    for (file, targets) in &references {
        let Some(&own) = rows.get(top_module(file)) else {
            continue;
        };
        for target in targets {
            let module = top_module(target);
            if rows.get(module).is_some_and(|&row| row < own) {
                upward.push(format!("src/{file} refers to src/{target}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "references to a layer above (see AGENTS.md, \"Layers\"):\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_two_modules_refer_to_each_other() {
    let references = references(&sources());
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, targets) in &references {
        let from = top_module(file);
        for target in targets {
            let to = top_module(target);
            if to != from {
                graph.entry(from).or_default().insert(to);
            }
        }
    }
    let circles = circles(&graph);
    assert!(circles.is_empty(), "modules in a circle: {circles:?}");
}

#[test]
fn no_two_files_refer_to_each_other() {
    let references = references(&sources());
    let mut pairs = Vec::new();
    for (file, targets) in &references {
        for target in targets {
            if file < target
                && references
                    .get(target)
                    .is_some_and(|back| back.contains(file))
            {
                pairs.push(format!("src/{file} <-> src/{target}"));
            }
        }
    }
    assert!(
        pairs.is_empty(),
        "files that refer to each other (move what both need to one of them, or below both):\n{}",
        pairs.join("\n")
    );
}

/// Each circle in `graph`, as the nodes on it, found by a depth-first walk.
fn circles<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    fn walk<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        found: &mut Vec<Vec<&'a str>>,
    ) {
        if let Some(at) = path.iter().position(|on| *on == node) {
            found.push(path[at..].to_vec());
            return;
        }
        if !done.insert(node) {
            return;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            walk(next, graph, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        walk(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn the_reader_sees_use_trees_and_paths() {
    let source = Source {
        file: "agent/codex/mod.rs".into(),
        module: vec!["agent".into(), "codex".into()],
        code: "use crate::{config::{AgentKind, Prices}, files};\nlet x = super::event::Usage::default();\nuse super::super::words::plural;".into(),
    };
    let paths: BTreeSet<String> = named_paths(&source)
        .into_iter()
        .map(|path| path.join("::"))
        .collect();
    for expected in [
        "config::AgentKind",
        "config::Prices",
        "files",
        "agent::event::Usage::default",
        "words::plural",
    ] {
        assert!(
            paths.contains(expected),
            "{expected} missing from {paths:?}"
        );
    }
    let mut graph = BTreeMap::new();
    graph.insert("a", BTreeSet::from(["b"]));
    graph.insert("b", BTreeSet::from(["c"]));
    graph.insert("c", BTreeSet::from(["a"]));
    assert_eq!(circles(&graph), [vec!["a", "b", "c"]]);
}
