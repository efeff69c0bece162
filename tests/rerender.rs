//! Every committed run re-renders to the summary.md it was committed with, byte for byte:
//! the report is a function of the run's own files (summary.json and the interval logs).
//! Through `relay-bench report DIR`, as a user draws a run again.

mod common;

use std::path::Path;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn committed_runs_re_render_to_their_own_summary_md() {
    let runs = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs");
    let mut checked = 0;
    // A daemon-capacity run has no summary.json (tests/daemon_capacity.rs re-renders it).
    for run in
        std::fs::read_dir(&runs).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("summary.json").is_file())
    {
        let t = tempfile::tempdir().unwrap();
        std::fs::copy(run.join("summary.json"), t.path().join("summary.json")).unwrap();
        copy_tree(&run.join("hdr"), &t.path().join("hdr"));
        let o = std::process::Command::new(common::BIN).arg("report").arg(t.path()).output().unwrap();
        assert!(o.status.success(), "{}: {}", run.display(), String::from_utf8_lossy(&o.stderr));
        let charts = std::fs::read_dir(t.path().join("charts")).map_or(0, |d| d.count());
        assert!(charts > 0, "{}: charts drawn", run.display());
        let want = std::fs::read_to_string(run.join("summary.md")).unwrap();
        let got = std::fs::read_to_string(t.path().join("summary.md")).unwrap();
        assert!(got == want, "{}: summary.md re-renders differently", run.display());
        for e in walk(t.path()) {
            let rel = e.strip_prefix(t.path()).unwrap().to_string_lossy().into_owned();
            assert!(!rel.contains(".tmp"), "a temp file left: {rel}");
        }
        checked += 1;
    }
    assert!(checked >= 3, "the committed runs were found: {checked}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
