//! `relay-bench serve` as a child the tests drive, and the small helpers the hostile-input
//! tests share.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::BIN;

/// Everything a finished command said, stdout then stderr.
pub fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A scenario `name` of one virtual-clock case `case` (a second of simulated calls).
pub fn virtual_scenario(name: &str, case: &str) -> String {
    format!(
        "name = \"{name}\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"{case}\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n"
    )
}

/// `relay-bench run -q --no-calibration --relay-root ROOT/relay --out OUT EXTRA...` in `root`.
pub fn run_in(root: &Path, out: &Path, extra: &[&str]) -> Output {
    std::fs::create_dir_all(root.join("relay")).unwrap();
    Command::new(BIN)
        .current_dir(root)
        .args(["run", "-q", "--no-calibration", "--relay-root", "relay", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// `relay-bench serve --dir DIR EXTRA...`, returned once it printed its banner; its stdout
/// is read on (and handed back when it ends), so a full pipe never stalls it.
pub struct Serve {
    child: Option<Child>,
    rest: Option<std::thread::JoinHandle<String>>,
}

impl Serve {
    pub fn start(dir: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "--every", "100ms", "--dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        out.read_line(&mut banner).unwrap();
        assert!(banner.starts_with("serving "), "{banner}");
        let rest = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut s);
            s
        });
        Serve { child: Some(child), rest: Some(rest) }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// One SIGTERM; its output and how long it took to end (killed after 60 s).
    pub fn terminate(mut self) -> (Output, Duration) {
        let mut child = self.child.take().unwrap();
        let t0 = Instant::now();
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = t0.elapsed();
        let _ = child.kill();
        let mut out = child.wait_with_output().unwrap();
        out.stdout = self.rest.take().unwrap().join().unwrap().into_bytes();
        (out, took)
    }

    /// One SIGTERM; everything it said.
    pub fn stop(self) -> Output {
        self.terminate().0
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
