//! The kinds are closed: a strategy's or a host's name, as a string, appears in its own file
//! alone (where its kind says its name) and nowhere else in the library's code — no
//! `if strategy == "window-exec"` anywhere, no hard-coded list of names: a new kind is a file
//! and a variant of its enum. Tests are not the library's code (they name kinds freely), nor
//! is a line saying it holds an option's value that happens to be spelt like a kind.
//!
//! A strategy's notices are its own too: their types live in its module, `Say` (in
//! `src/base/`) carries them as `Say::Strategy`, and nothing in `src/base/` names one.
//!
//! Outputs are one trait over every command (`run`/`report`, `conform`, `daemon-capacity`):
//! each output of a run the library implements is in its registry, once; `conform` and
//! `daemon-capacity` list every format of their one report; and the committed run
//! directories hold what their registry writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use relay_bench::{Dest, Moment, Output, Say};

/// The marker of a line whose string is an option's value, not a kind's name.
const NOT_A_KIND: &str = "not a kind:";

/// Files declared `#[cfg(test)] mod NAME;` by their parent: test code of their own.
fn test_only(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for w in lines.windows(2) {
            if w[0].trim() == "#[cfg(test)]" {
                let decl = w[1].trim().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
                if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                    out.push(p.with_file_name(format!("{name}.rs")));
                }
            }
        }
    }
    out
}

fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut paths);
    paths.sort();
    let tests = test_only(&paths);
    paths
        .into_iter()
        .filter(|p| !tests.contains(p))
        // A file of tests (a module of its own), or the tests at the end of a file, aside.
        .filter(|p| {
            !p.ends_with("tests.rs") && !p.file_name().is_some_and(|n| n.to_string_lossy().ends_with("_tests.rs"))
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            // Up to the tests module: a test-only item above it (a helper marked
            // `#[cfg(test)]`) is no reason to stop reading the library's code.
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("").to_owned();
            (p, code)
        })
        .collect()
}

#[test]
fn no_kind_is_named_outside_its_own_file() {
    let mut kinds: Vec<&str> = relay_bench::RUNNERS.iter().map(|k| k.name()).collect();
    kinds.extend(relay_bench::WRITERS.iter().map(|k| k.name()));
    kinds.extend(relay_bench::HOSTS.iter().map(|k| k.name()));
    kinds.sort();
    kinds.dedup();
    assert!(kinds.len() >= 8, "the registries were read: {kinds:?}");
    // A kind's own file says its name where the kind names itself: in a `name` function, as
    // a constant, or in its `named!` list. Anywhere else the name is a leak.
    let mut leaks: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (path, code) in sources() {
        let lines: Vec<&str> = code.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let code_part = line.split("//").next().unwrap_or("");
            if line.contains(NOT_A_KIND) || n > 0 && lines[n - 1].contains(NOT_A_KIND) {
                continue;
            }
            let decl = code_part.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            let naming = decl.starts_with("const ")
                || decl.starts_with("names [")
                || lines[n.saturating_sub(5)..n].iter().any(|l| l.contains("fn name") || l.contains("fn label"));
            for k in &kinds {
                if code_part.contains(&format!("\"{k}\"")) && !naming {
                    leaks.entry(k).or_default().push(format!("{}:{}", path.display(), n + 1));
                }
            }
        }
    }
    let leaks: Vec<String> = leaks.iter().map(|(k, places)| format!("{k:?} in {places:?}")).collect();
    assert!(leaks.is_empty(), "kind names outside their own file:\n{}", leaks.join("\n"));
}

/// The leading identifier of a value's `Debug` text: an enum's variant, a struct's name.
fn debug_name(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The variants of `enum Say` in a file's code, and every `Say::Name` path it writes.
fn say_names(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_say = false;
    for line in code.lines() {
        let t = line.trim();
        if t.contains("enum Say {") {
            in_say = true;
            continue;
        }
        if in_say && t == "}" {
            in_say = false;
        }
        if in_say && t.starts_with(|c: char| c.is_ascii_uppercase()) {
            out.push(debug_name(t));
        }
        for (i, _) in line.match_indices("Say::") {
            out.push(debug_name(&line[i + "Say::".len()..]));
        }
    }
    out
}

#[test]
fn no_strategy_notice_is_named_in_base() {
    let mut said: Vec<_> = relay_bench::RUNNERS.iter().flat_map(|k| k.notices()).collect();
    said.extend(relay_bench::WRITERS.iter().flat_map(|k| k.notices()));
    assert!(said.len() >= 8, "the strategies brought their notices: {said:?}");
    // Each notice by the name its variant (or struct) has, and the path of its type.
    let mut notices: Vec<(String, &'static str)> = Vec::new();
    for s in &said {
        let Say::Strategy(n) = s else { panic!("a strategy's notice is a Say::Strategy: {s:?}") };
        let ty = n.type_name();
        assert!(!ty.starts_with("relay_bench::base::"), "{ty} is a strategy's notice defined in base/");
        notices.push((debug_name(&format!("{n:?}")), ty));
    }
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/base");
    let mut leaks = Vec::new();
    for (path, code) in sources().into_iter().filter(|(p, _)| p.starts_with(&base)) {
        let named = say_names(&code);
        for (name, ty) in &notices {
            let short = ty.rsplit("::").next().unwrap_or(ty);
            if named.contains(name) {
                leaks.push(format!("{}: Say::{name} is {ty}'s", path.display()));
            }
            if code.contains(short) {
                leaks.push(format!("{}: names {ty}", path.display()));
            }
        }
    }
    leaks.sort();
    leaks.dedup();
    assert!(leaks.is_empty(), "strategy notices named in base/:\n{}", leaks.join("\n"));
}

/// What a registry's outputs land as at the top of a run directory (`charts/<chart>.png`
/// lands as `charts`); their names, each once; each written at some moment.
fn check_registry<R: ?Sized, O: Output<R>>(what: &str, outputs: &[O]) -> Vec<String> {
    let mut names: Vec<&str> = outputs.iter().map(|o| o.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), outputs.len(), "{what}: an output's name given twice: {names:?}");
    let moments = [Moment::Progress, Moment::Case, Moment::End, Moment::Rerender];
    for o in outputs {
        assert!(moments.iter().any(|m| o.written_at(*m)), "{what}: {} is never written", o.name());
    }
    let mut tops: Vec<String> = outputs
        .iter()
        .filter(|o| o.dest() == Dest::RunDir)
        .map(|o| o.path().split(['/', '|']).next().unwrap().to_owned())
        .collect();
    let n = tops.len();
    tops.dedup();
    assert_eq!(tops.len(), n, "{what}: two outputs land on one path: {tops:?}");
    tops
}

#[test]
fn every_output_is_in_its_commands_registry_once_and_committed_runs_hold_what_it_writes() {
    use relay_bench::{Format, RunOutput, FORMATS};
    let run = check_registry("run", &RunOutput::ALL);
    let conform = check_registry::<relay_bench::ConformReport, _>("conform", &FORMATS);
    let capacity = check_registry::<relay_bench::CapacityReport, _>("daemon-capacity", &FORMATS);
    // Every variant in RunOutput::ALL: a new one does not compile here until it is named, and
    // ALL (named!) lists every variant (check_registry: each once).
    let seven = |o: RunOutput| match o {
        RunOutput::Json
        | RunOutput::Markdown
        | RunOutput::Hdr
        | RunOutput::Charts
        | RunOutput::Html
        | RunOutput::Table
        | RunOutput::JUnit => 7,
    };
    assert!(RunOutput::ALL.iter().all(|o| seven(*o) == RunOutput::ALL.len()), "every RunOutput is in ALL");
    let formats = [Format::Json, Format::Markdown, Format::Html, Format::Console];
    assert_eq!(FORMATS, formats, "every format of conform's and daemon-capacity's reports, in order");

    // In the archive: each committed run directory holds every file its registry writes there.
    let runs = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs");
    let mut seen = [0; 3];
    for dir in std::fs::read_dir(runs).unwrap().flatten().map(|e| e.path()) {
        let dirs = [dir.clone(), dir.join("runner"), dir.join("writer")];
        for d in dirs {
            let (k, tops) = if d.join("summary.json").is_file() {
                (0, &run)
            } else if d.join("conform.json").is_file() {
                (1, &conform)
            } else if d.join("capacity.json").is_file() {
                (2, &capacity)
            } else {
                continue;
            };
            seen[k] += 1;
            for top in tops {
                assert!(d.join(top).exists(), "{} has no {top}", d.display());
            }
        }
    }
    assert!(seen.iter().all(|n| *n > 0), "a committed run, conform run and capacity run each: {seen:?}");
}
