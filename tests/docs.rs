//! The docs a newcomer reads: every "SPEC §N" cited in the sources, scenarios and docs is a
//! section of docs/spec.md; the README stays a guide (at most 200 lines, the main job and
//! the tests near the top, the three jobs in the first screen); every relative link in the
//! README and docs/ names a file that exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs" || x == "toml" || x == "md") {
            out.push(p);
        }
    }
}

/// The section numbers docs/spec.md has (`## §3 Wake strategies`).
fn spec_sections() -> Vec<u32> {
    let spec = std::fs::read_to_string(root().join("docs/spec.md")).unwrap();
    spec.lines().filter_map(|l| l.strip_prefix("## §")?.split_whitespace().next()?.parse().ok()).collect()
}

#[test]
fn every_spec_citation_resolves_in_docs_spec_md() {
    let sections = spec_sections();
    assert_eq!(sections, (1..=9).collect::<Vec<_>>(), "docs/spec.md keeps §1–§9 in order");
    let mut files = Vec::new();
    for d in ["src", "scenarios", "docs", "tests", "scripts"] {
        walk(&root().join(d), &mut files);
    }
    files.push(root().join("README.md"));
    let mut cited = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, _) in text.match_indices("SPEC §") {
            let n: String = text[i + "SPEC §".len()..].chars().take_while(char::is_ascii_digit).collect();
            // "SPEC §N", where the docs speak of citations, cites nothing.
            let Ok(n) = n.parse::<u32>() else { continue };
            assert!(sections.contains(&n), "{}: SPEC §{n} is no section of docs/spec.md", f.display());
            cited += 1;
        }
    }
    assert!(cited > 20, "the sources cite the spec ({cited} citations found)");
}

#[test]
fn the_readme_is_a_guide_with_the_jobs_in_its_first_screen() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    assert!(lines.len() <= 200, "README.md has {} lines; it is a guide of at most 200", lines.len());
    let at = |needle: &str| {
        lines.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("README.md lacks {needle:?}"))
    };
    let intro = at("## Install and run");
    assert!(intro <= 8, "what it is takes at most 6 lines before the install ({intro})");
    assert!(at("cargo run --release -- run ") < at("## Three jobs"), "the main job before the jobs");
    assert!(at("cargo test ") < at("## Three jobs"), "the tests before the jobs");
    for job in ["### A rollout verdict", "### Comparing strategies", "### Benchmarking in CI"] {
        assert!(at(job) < 100, "{job} is in the first screens ({})", at(job));
    }
    assert!(readme.contains("docs/glossary.md") && readme.contains("docs/spec.md"));
}

#[test]
fn relative_links_in_the_readme_and_docs_name_files_that_exist() {
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    for f in files.iter().filter(|f| f.extension().is_some_and(|x| x == "md")) {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap();
            if target.is_empty() || target.contains("://") || target.contains(' ') {
                continue;
            }
            let path = f.parent().unwrap().join(target);
            assert!(path.exists(), "{}: link to {target}, which does not exist", f.display());
        }
    }
}

/// docs/reliability.md names the test holding each promise: every one it names exists.
#[test]
fn every_test_the_reliability_page_names_exists() {
    let page = std::fs::read_to_string(root().join("docs/reliability.md")).unwrap();
    let mut sources = Vec::new();
    for d in ["src", "tests"] {
        walk(&root().join(d), &mut sources);
    }
    let code: String = sources
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "rs"))
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let mut named = 0;
    for name in page.split('`').skip(1).step_by(2) {
        // A test's name: snake case of several words (not a path, a flag or a file).
        let is_test = name.matches('_').count() >= 4
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if is_test {
            assert!(code.contains(&format!("fn {name}(")), "docs/reliability.md names {name}, which no test is");
            named += 1;
        }
    }
    assert!(named >= 20, "the page names the tests that hold it ({named})");
}
