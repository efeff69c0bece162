//! The layering written down in `src/lib.rs` holds: every `crate::` path in a module names
//! a module of its own layer or a lower one, and modules of one layer import each other
//! without a cycle. The table in `lib.rs` is the one place the layers are written; this
//! test reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `module -> layer`, from the `| N name | `a`, `b` | ... |` rows of lib.rs's docs.
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! | ")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let Some(layer) = cells.first().and_then(|c| c.split_whitespace().next()).and_then(|n| n.parse().ok()) else {
            continue;
        };
        for m in cells[1].split(", ") {
            out.insert(m.trim_matches('`').to_owned(), layer);
        }
    }
    out
}

/// Every source file and the top module it belongs to.
fn files() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    walk(&src, &mut paths);
    paths
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let top = rel.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
            (top != "lib" && top != "main").then(|| (top, std::fs::read_to_string(&p).unwrap()))
        })
        .collect()
}

/// The top modules a file's code (not its comments) names through `crate::`.
fn imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().map(str::trim_start).filter(|l| !l.starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_module_has_a_layer_and_imports_only_downward() {
    let layers = layers();
    assert!(layers.len() > 20, "the table in lib.rs was read: {layers:?}");
    let mut upward = Vec::new();
    for (top, text) in files() {
        let Some(&own) = layers.get(&top) else { panic!("module `{top}` has no layer in src/lib.rs") };
        for dep in imports(&text) {
            let Some(&theirs) = layers.get(&dep) else { continue }; // a type at the root (BoxFut)
            if theirs > own {
                upward.push(format!("{top} (layer {own}) imports {dep} (layer {theirs})"));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn modules_of_one_layer_import_each_other_without_a_cycle() {
    let layers = layers();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (top, text) in files() {
        let own = layers.get(&top).copied();
        let deps: Vec<String> =
            imports(&text).into_iter().filter(|d| *d != top && layers.get(d).copied() == own).collect();
        graph.entry(top).or_default().extend(deps);
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(1) => {
                let from = path.iter().position(|p| p == n).unwrap();
                let mut cycle = path[from..].to_vec();
                cycle.push(n.to_owned());
                return Some(cycle);
            }
            Some(2) => return None,
            _ => {}
        }
        state.insert(n.to_owned(), 1);
        path.push(n.to_owned());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if let Some(cycle) = visit(n, &graph, &mut state, &mut Vec::new()) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn no_source_file_passes_600_lines_by_much() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut long = Vec::new();
    for (top, text) in files() {
        let n = text.lines().count();
        if n > 650 {
            long.push(format!("{top}: a file of {n} lines"));
        }
    }
    assert!(long.is_empty(), "{} has files of more than ~600 lines: {long:?}", src.display());
}
