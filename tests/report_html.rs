//! report.html in a real browser: a committed run's page, rendered by `report` into a temp
//! dir, loaded by headless Chromium (Debian's `chromium`), with no error and no fetch (the
//! page's own check says so in the DOM: `#page-check[data-state=ok]`), no console message,
//! every chart inline, and a screenshot that is a real PNG of the window's size. Without
//! Chromium the test says it is skipped and why; `RELAY_BENCH_REQUIRE_BROWSER=1` (as
//! `.ci/run` sets) makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WINDOW: (u32, u32) = (1280, 2000);
/// A blank window's screenshot is a few KiB; a page of tables and charts is far more.
const MIN_SCREENSHOT_BYTES: u64 = 50_000;

/// `chromium` on PATH, or `None` after saying why the test is skipped (a panic under
/// `RELAY_BENCH_REQUIRE_BROWSER=1`: a skip in CI would be a pass that tested nothing).
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("chromium")).find(|p| p.is_file()));
    let required = std::env::var_os("RELAY_BENCH_REQUIRE_BROWSER").is_some_and(|v| v == "1");
    match found {
        Some(p) => Some(p),
        None if required => panic!(
            "{test}: RELAY_BENCH_REQUIRE_BROWSER=1 and no chromium on PATH (Debian: apt-get install -y chromium)"
        ),
        None => {
            eprintln!(
                "{test}: skipped: no chromium on PATH, so report.html is not loaded in a browser (Debian: apt-get \
                 install -y chromium; RELAY_BENCH_REQUIRE_BROWSER=1 makes this a failure)"
            );
            None
        }
    }
}

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

/// Runs headless Chromium on `page` with `args`, in a fresh profile, within two minutes;
/// returns its stdout and stderr.
fn chromium(bin: &Path, page: &Path, args: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read_out = std::thread::spawn(move || std::io::read_to_string(&mut out).unwrap_or_default());
    let read_err = std::thread::spawn(move || std::io::read_to_string(&mut err).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (read_out.join().unwrap(), read_err.join().unwrap());
    assert!(status.success(), "chromium {args:?}: {status}\n{err}");
    (out, err)
}

/// A PNG's width and height, from its IHDR chunk.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let signature = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || &bytes[..8] != signature || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&bytes[16..20]), be(&bytes[20..24])))
}

#[cfg_attr(not(has_chromium), ignore = "needs headless Chromium: apt-get install -y chromium")]
#[test]
fn a_committed_runs_page_loads_in_headless_chromium_with_no_error_and_renders() {
    let test = "report_html";
    let Some(bin) = chromium_or_skip(test) else { return };
    let runs = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs");
    // The rollout gate's verdict and decision chart; the fleet's section and charts.
    for (run, sections) in [
        ("20261130-vm", &["verdict", "decision", "results", "cases", "charts", "environment", "files"][..]),
        ("20261204-fleet-capacity", &["verdict", "decision", "results", "fleet", "charts", "environment"][..]),
    ] {
        let t = tempfile::tempdir().unwrap();
        std::fs::copy(runs.join(run).join("summary.json"), t.path().join("summary.json")).unwrap();
        copy_tree(&runs.join(run).join("hdr"), &t.path().join("hdr"));
        let done = relay_bench::rerender(t.path()).unwrap();
        assert_eq!(done.count("report.html"), 1, "{run}: the page is written by report");
        let page = t.path().join("report.html");
        let charts = done.count("charts") / 2;

        let dom_args = ["--enable-logging=stderr".to_owned(), "--v=0".to_owned(), "--dump-dom".to_owned()];
        let (dom, log) = chromium(&bin, &page, &dom_args);
        let check = dom
            .find("id=\"page-check\"")
            .map(|at| &dom[dom[..at].rfind('<').unwrap()..at + dom[at..].find("</p>").unwrap()])
            .unwrap_or_else(|| panic!("{run}: no #page-check in the DOM Chromium built:\n{dom}"));
        assert!(check.contains("data-state=\"ok\""), "{run}: the page's check: {check}");
        let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
        assert!(console.is_empty(), "{run}: console messages:\n{}", console.join("\n"));
        for id in sections {
            assert!(dom.contains(&format!("<section id=\"{id}\"")), "{run}: no {id} section");
        }
        assert_eq!(dom.matches("<svg ").count(), charts, "{run}: every chart inline");

        let shot = t.path().join("screenshot.png");
        let shot_args =
            [format!("--screenshot={}", shot.display()), format!("--window-size={},{}", WINDOW.0, WINDOW.1)];
        chromium(&bin, &page, &shot_args);
        let bytes = std::fs::read(&shot).unwrap_or_else(|e| panic!("{run}: no screenshot: {e}"));
        assert_eq!(png_size(&bytes), Some(WINDOW), "{run}: a PNG of the window's size");
        assert!(
            bytes.len() as u64 > MIN_SCREENSHOT_BYTES,
            "{run}: a screenshot of {} bytes is a blank page, not a report",
            bytes.len()
        );
    }
}

/// conform.html is the same page, built from the conform report's document: a committed
/// one loads with no error, no fetch and no console message, its sections there.
#[cfg_attr(not(has_chromium), ignore = "needs headless Chromium: apt-get install -y chromium")]
#[test]
fn a_committed_conform_page_loads_in_headless_chromium_with_no_error() {
    let Some(bin) = chromium_or_skip("report_html") else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs/20261201-conform-production/writer");
    let r: relay_bench::ConformReport =
        serde_json::from_str(&std::fs::read_to_string(dir.join("conform.json")).unwrap()).unwrap();
    let t = tempfile::tempdir().unwrap();
    let page = t.path().join("conform.html");
    std::fs::write(&page, relay_bench::conform_html(&r)).unwrap();
    let args = ["--enable-logging=stderr".to_owned(), "--v=0".to_owned(), "--dump-dom".to_owned()];
    let (dom, log) = chromium(&bin, &page, &args);
    assert!(dom.contains("data-state=\"ok\""), "the page's check:\n{dom}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages:\n{}", console.join("\n"));
    for id in ["results", "cases"] {
        assert!(dom.contains(&format!("<section id=\"{id}\"")), "no {id} section");
    }
}
