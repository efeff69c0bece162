//! The layering holds: each folder under `src/` is a layer, in the order `src/lib.rs`
//! declares them (`mod base;` first); every path a file names through `crate::` or
//! `super::` — in a `use` tree, braces and all, or inline in code — reaches a module of its
//! own layer or a lower one, and the modules of one layer (the files and folders directly
//! in it) import each other without a cycle. Nothing here is a table to keep in step: the
//! layers are the folders, their order is lib.rs's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layers, bottom-up: the `mod NAME;` lines of lib.rs, in order.
fn layers() -> Vec<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    lib.lines().filter_map(|l| l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';'))).map(str::to_owned).collect()
}

/// Every source file under `src/` (lib.rs and main.rs aside) with its module path
/// (`src/sandbox/host/remote.rs` -> `["sandbox", "host", "remote"]`; a `mod.rs` is its folder).
fn files() -> Vec<(Vec<String>, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&src(), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(src()).unwrap().with_extension("");
            let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            if module.last().is_some_and(|l| l == "mod") {
                module.pop();
            }
            let top_file = module.len() == 1 && (module[0] == "lib" || module[0] == "main");
            (!top_file).then(|| (module, std::fs::read_to_string(&p).unwrap()))
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Punct(char),
}

/// The tokens of Rust source that paths are made of: comments, string, byte-string, raw
/// string and character literals are skipped; a lifetime is an identifier.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let (mut i, mut out) = (0usize, Vec::new());
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == 'r' && (at(i + 1) == '#' || at(i + 1) == '"') && {
            let mut j = i + 1;
            while at(j) == '#' {
                j += 1;
            }
            at(j) == '"'
        } {
            // A raw string: r#"..."#, as many hashes to close as to open.
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if ch == '"' || (ch == 'b' && at(i + 1) == '"') {
            i += if ch == 'b' { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            let start = if ch == 'b' { i + 1 } else { i };
            // A character literal ('x', '\n', '\u{1F600}'), or a lifetime ('a).
            if at(start + 1) == '\\' {
                let mut j = start + 2;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if at(start + 2) == '\'' {
                i = start + 3;
            } else {
                i = start + 1;
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let s = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[s..i].iter().collect()));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::Colons);
            i += 2;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

/// Reads one path tree at `toks[*i]` (after its root and the `::` that follows it):
/// `a::b`, `a::{b, c::{d, e as f}}`, `a::*`; appends every whole path to `out`.
fn tree(toks: &[Tok], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Tok::Ident(s)) => {
                *i += 1;
                if s != "self" {
                    path.push(s.clone());
                }
                if toks.get(*i) == Some(&Tok::Colons) {
                    *i += 1;
                    continue;
                }
                out.push(path);
                return;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some(Tok::Punct('}')) | None => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        Some(Tok::Ident(w)) if w == "as" => *i += 2,
                        _ => tree(toks, i, path.clone(), out),
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                *i += 1;
                out.push(path);
                return;
            }
            _ => {
                out.push(path);
                return;
            }
        }
    }
}

/// Every module path a file names, made absolute: `crate::a::b` is `[a, b, ..]`;
/// `super::x` climbs from the module it is written in (an inline `mod tests { .. }` is one
/// more level).
fn imports(module: &[String], text: &str) -> Vec<Vec<String>> {
    let toks = tokens(text);
    let mut out = Vec::new();
    // Inline modules open at a brace depth: (depth, name).
    let (mut depth, mut inline): (usize, Vec<usize>) = (0, Vec::new());
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Tok::Ident(m)
                if m == "mod"
                    && matches!(toks.get(i + 1), Some(Tok::Ident(_)))
                    && toks.get(i + 2) == Some(&Tok::Punct('{')) =>
            {
                inline.push(depth);
            }
            Tok::Ident(root) if (root == "crate" || root == "super") && toks.get(i + 1) == Some(&Tok::Colons) => {
                let mut base: Vec<String> = if root == "crate" { Vec::new() } else { module.to_vec() };
                if root == "super" {
                    // The module this is written in: the file's, or an inline one inside it.
                    base.extend(std::iter::repeat_n("<inline>".to_owned(), inline.len()));
                    let mut j = i;
                    while matches!(&toks.get(j), Some(Tok::Ident(s)) if s == "super")
                        && toks.get(j + 1) == Some(&Tok::Colons)
                    {
                        base.pop();
                        j += 2;
                    }
                    i = j;
                } else {
                    i += 2;
                }
                let mut found = Vec::new();
                tree(&toks, &mut i, base, &mut found);
                out.extend(found.into_iter().filter(|p| p.first().is_none_or(|s| s != "<inline>")));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[test]
fn paths_are_read_from_use_trees_and_code() {
    let text = r#"
        use crate::base::{units::human, fields::{Fields, ScenarioError as E}};
        use super::{x, y::*};
        // use crate::app::cli; (a comment names nothing)
        const S: &str = "crate::app::nothing";
        fn f<'a>(c: char) -> bool { c == '{' || crate::report::export::Json::new().is() }
        #[cfg(test)]
        mod tests { use super::*; use super::super::z; }
    "#;
    let got = imports(&["sandbox".into(), "host".into(), "remote".into()], text);
    let heads: Vec<String> = got.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        heads,
        [
            "base::units::human",
            "base::fields::Fields",
            "base::fields::ScenarioError",
            "sandbox::host::x",
            "sandbox::host::y",
            "report::export::Json::new",
            "sandbox::host::remote",
            "sandbox::host::z",
        ]
    );
}

/// A source file: its module path, its layer's index, the absolute paths it imports.
type File = (Vec<String>, usize, Vec<Vec<String>>);

fn read_all() -> (Vec<String>, Vec<File>) {
    let layers = layers();
    assert!(layers.len() >= 8, "the layers were read from lib.rs: {layers:?}");
    let mut out = Vec::new();
    for (module, text) in files() {
        let own = layers.iter().position(|l| *l == module[0]).unwrap_or_else(|| {
            panic!("src/{} is in no layer: its folder is not declared in src/lib.rs", module.join("/"))
        });
        out.push((module.clone(), own, imports(&module, &text)));
    }
    (layers, out)
}

#[test]
fn every_file_imports_only_its_layer_or_lower_ones() {
    let (layers, files) = read_all();
    let mut upward = BTreeSet::new();
    for (module, own, paths) in &files {
        for p in paths {
            let Some(theirs) = p.first().and_then(|h| layers.iter().position(|l| l == h)) else {
                // The crate's root is above every layer: a name it declares or re-exports
                // (`crate::BoxFut`) is reached through the layer that owns it.
                if let Some(h) = p.first() {
                    upward.insert(format!("src/{} imports crate::{h} (the crate's root)", module.join("/")));
                }
                continue;
            };
            if theirs > *own {
                upward.insert(format!(
                    "src/{} (layer {}) imports {} (layer {})",
                    module.join("/"),
                    layers[*own],
                    p.join("::"),
                    layers[theirs]
                ));
            }
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.into_iter().collect::<Vec<_>>().join("\n"));
}

#[test]
fn the_modules_of_one_layer_import_each_other_without_a_cycle() {
    let (_, files) = read_all();
    // Nodes: `layer/module` (the files and folders directly in a layer folder; its mod.rs
    // is the layer itself and stays out: it only declares and re-exports).
    let node = |p: &[String]| (p.len() >= 2).then(|| format!("{}/{}", p[0], p[1]));
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, _, paths) in &files {
        let Some(from) = node(module) else { continue };
        let entry = graph.entry(from.clone()).or_default();
        for to in paths.iter().filter(|p| p.first() == module.first()).filter_map(|p| node(p)) {
            if to != from {
                entry.insert(to);
            }
        }
    }
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
fn modules_are_folders_with_a_mod_rs() {
    // `foo.rs` beside `foo/` is the other module style: one style throughout.
    let (_, files) = read_all();
    let mut mixed = Vec::new();
    for (module, _, _) in &files {
        let file = src().join(module.join("/")).with_extension("rs");
        if file.is_file() && src().join(module.join("/")).is_dir() {
            mixed.push(file.display().to_string());
        }
    }
    assert!(mixed.is_empty(), "modules written as `name.rs` beside `name/` (use name/mod.rs): {mixed:?}");
}

#[test]
fn no_source_file_passes_600_lines() {
    let mut long = Vec::new();
    for (module, text) in files() {
        let n = text.lines().count();
        if n > 600 {
            long.push(format!("src/{}: {n} lines", module.join("/")));
        }
    }
    assert!(long.is_empty(), "files of more than 600 lines: {long:?}");
}

/// No function in `src/` passes this many lines, tests included: a function that long is
/// several steps, each worth a name.
const LONG_FUNCTION: usize = 80;

/// Each function's name and length in lines: from its `fn` line to the `}` at its indent.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let body = l.trim_start();
        let indent = &l[..l.len() - body.len()];
        let head = ["pub(crate) ", "pub(super) ", "pub ", "async ", "const ", "unsafe "]
            .iter()
            .fold(body, |b, p| b.strip_prefix(p).unwrap_or(b));
        let Some(rest) = head.strip_prefix("fn ") else { continue };
        if l.trim_end().ends_with(';') {
            continue;
        }
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let close = format!("{indent}}}");
        if let Some(n) = lines[i + 1..].iter().position(|x| x.trim_end() == close) {
            out.push((name, n + 2));
        }
    }
    out
}

#[test]
fn no_function_passes_80_lines() {
    let mut long: Vec<(usize, String)> = Vec::new();
    for (module, text) in files() {
        for (name, n) in function_lengths(&text) {
            if n > LONG_FUNCTION {
                long.push((n, format!("src/{}: {name}", module.join("/"))));
            }
        }
    }
    long.sort_by(|a, b| b.cmp(a));
    assert!(long.is_empty(), "{} functions of more than {LONG_FUNCTION} lines: {long:?}", long.len());
}

#[test]
fn a_functions_length_runs_to_its_closing_brace() {
    let text = "fn a() {\n    x;\n}\n\nimpl S {\n    pub(crate) async fn b(&self) {\n        if y {\n        }\n    }\n    fn c();\n}\n";
    assert_eq!(function_lengths(text), [("a".to_owned(), 3), ("b".to_owned(), 4)]);
}

/// Where a library function may still return `Result<_, String>`, each with why: none. All of
/// `src/` returns typed errors (thiserror) that carry their data and say what to do; a file
/// added here says why it cannot.
const STRING_ERRORS_ALLOWED: &[(&str, &str)] = &[];

/// The error type of each `Result<T, String>` (and `type Err = String` / `type Error = String`)
/// in `toks`, outside `#[cfg(test)] mod`s: the name of the enclosing `fn`, or "type".
fn string_errors(toks: &[Tok]) -> Vec<String> {
    let ident = |i: usize, s: &str| matches!(toks.get(i), Some(Tok::Ident(x)) if x == s);
    let punct = |i: usize, c: char| toks.get(i) == Some(&Tok::Punct(c));
    let mut out = Vec::new();
    let (mut i, mut fn_at) = (0usize, None::<usize>);
    while i < toks.len() {
        // `#[cfg(test)] mod name {` (`pub(crate) mod` too): skipped to its closing brace.
        let mut m = i + 7;
        while ident(m, "pub") || ident(m, "crate") || ident(m, "super") || punct(m, '(') || punct(m, ')') {
            m += 1;
        }
        if punct(i, '#') && punct(i + 1, '[') && ident(i + 2, "cfg") && ident(i + 4, "test") && ident(m, "mod") {
            let mut j = m;
            while j < toks.len() && !punct(j, '{') && !punct(j, ';') {
                j += 1;
            }
            if punct(j, '{') {
                let mut depth = 0;
                while j < toks.len() {
                    depth += i32::from(punct(j, '{')) - i32::from(punct(j, '}'));
                    j += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            i = j;
            continue;
        }
        if ident(i, "fn") {
            fn_at = Some(i);
        }
        if ident(i, "type")
            && (ident(i + 1, "Err") || ident(i + 1, "Error"))
            && punct(i + 2, '=')
            && ident(i + 3, "String")
        {
            out.push("type".to_owned());
        }
        if ident(i, "Result") && punct(i + 1, '<') {
            // The type arguments at depth 1, split at their commas (`->` is no bracket).
            let (mut j, mut depth, mut args) = (i + 2, 1, vec![Vec::new()]);
            while j < toks.len() && depth > 0 {
                let arrow = punct(j, '>') && j > 0 && punct(j - 1, '-');
                if punct(j, '<') {
                    depth += 1;
                } else if punct(j, '>') && !arrow {
                    depth -= 1;
                }
                if depth == 1 && punct(j, ',') {
                    args.push(Vec::new());
                } else if depth > 0 {
                    args.last_mut().unwrap().push(toks[j].clone());
                }
                j += 1;
            }
            let string = args.len() == 2 && args[1] == [Tok::Ident("String".into())];
            let name = fn_at.and_then(|f| match toks.get(f + 1) {
                Some(Tok::Ident(n)) => Some(n.clone()),
                _ => None,
            });
            if string {
                out.push(name.unwrap_or_else(|| "?".to_owned()));
            }
        }
        i += 1;
    }
    out
}

#[test]
fn library_errors_are_typed_not_strings() {
    let mut found = Vec::new();
    for (module, text) in files() {
        let file = format!("{}.rs", module.join("/"));
        let is_tests = module.last().is_some_and(|m| m == "tests");
        if is_tests
            || STRING_ERRORS_ALLOWED.iter().any(|(f, _)| *f == file || format!("{}/mod.rs", module.join("/")) == *f)
        {
            continue;
        }
        found.extend(string_errors(&tokens(&text)).into_iter().map(|f| format!("src/{file}: {f}")));
    }
    assert!(
        found.is_empty(),
        "Result<_, String> in the library (give it a thiserror type whose message says what to do, or add the file \
         to STRING_ERRORS_ALLOWED saying why): {found:?}"
    );
}

#[test]
fn the_string_error_check_sees_nested_types_and_skips_tests() {
    let toks = tokens(
        "fn a() -> Result<Vec<u8>, String> {}\n\
         fn b() -> Result<(), Typed> {}\n\
         impl FromStr for X { type Err = String; }\n\
         fn c(f: impl Fn() -> u8) -> Result<Box<dyn Fn() -> u8>, String> {}\n\
         fn write(&self, out: &mut Staged) -> Result<(), String> {}\n\
         #[cfg(test)]\nmod tests { fn d() -> Result<(), String> { let s = \"}\"; } }\n\
         #[cfg(test)]\npub(crate) mod helpers { fn f() -> Result<(), String> {} }\n\
         fn e() -> Result<(), String> {}",
    );
    assert_eq!(string_errors(&toks), ["a", "type", "c", "write", "e"]);
}
