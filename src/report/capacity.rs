//! What a `daemon-capacity` run directory holds: the formats every side command writes
//! ([`FORMATS`](super::side::FORMATS)), rendered from the capacity report and published by the same
//! loop as a run's outputs ([`super::side::publish`]: each file under a temp name, renamed into
//! place once it rendered whole): `capacity.json` (the typed report), `capacity.md` (a table per
//! step, the failure point, the per-exec costs, the machine's facts), `capacity.html` (the same
//! document on one page) and the console table, the two documents from one [`Doc`]: the formats of
//! [`super::side`], which `conform` shares.

use super::doc::{code, inline, plain, Block, Doc, Section, Span, Table};
use super::output::Moment;
use super::side::SideReport;
use crate::base::units::human_us;
use crate::results::capacity::{how, CapacityReport, How, Outcome, Step};

impl SideReport for CapacityReport {
    const FILES: [&'static str; 3] = ["capacity.json", "capacity.md", "capacity.html"];
    const CONSOLE: (&'static str, &'static str) = ("console table", "(the console)");

    /// A capacity report is rewritten after each step ([`Moment::Case`], so a killed ramp
    /// still leaves its report) and at the end ([`Moment::End`]).
    fn written_at(moment: Moment) -> bool {
        matches!(moment, Moment::Case | Moment::End)
    }

    /// The capacity report as a document: what the command measures and how the ramp ended,
    /// then the machine and daemon, a row per step, the failure point, the cost per held exec
    /// and the cleanup.
    fn document(&self) -> Doc {
        let outcome = match self.outcome {
            Outcome::Running => ("RUNNING", true),
            Outcome::Completed => ("COMPLETED", true),
            Outcome::FailurePoint => ("FAILURE POINT FOUND", true),
            Outcome::Stopped => ("STOPPED", false),
            Outcome::Interrupted => ("INTERRUPTED", false),
        };
        Doc {
            title: "Daemon capacity: held execs on one sandbox-agent daemon".into(),
            outcome,
            verdict: None,
            lead: vec![
                Block::Para(inline(ABOUT)),
                Block::Para(vec![Span::Strong("Outcome:".into()), Span::Text(format!(" {}", verdict(self)))]),
            ],
            sections: vec![
                Section::new("machine", "Machine and daemon", machine(self)),
                Section::new("steps", "Steps", steps(self)),
                Section::new("failure-point", "Failure point", failure(self)),
                Section::new("costs", "Cost per held exec", costs(self)),
                Section::new("cleanup", "Cleanup", cleanup(self)),
            ],
        }
    }

    /// The short table printed on the console.
    fn table(&self) -> String {
        let mut t = format!(
            "{:>6} {:>7} {:>10} {:>10} {:>10} {:>6} {:>7} {:>8}\n",
            "held", "running", "p50", "p99", "RSS", "fds", "threads", "children"
        );
        for s in &self.steps {
            t.push_str(&format!(
                "{:>6} {:>7} {:>10} {:>10} {:>10} {:>6} {:>7} {:>8}\n",
                s.held,
                num(s.running.map(u64::from)),
                latency(s, s.probe.p50),
                latency(s, s.probe.p99),
                mib(s.readings.rss_kib),
                num(s.readings.fds),
                num(s.readings.threads),
                num(s.readings.children),
            ));
        }
        t.push_str(&format!("{}\n", verdict(self)));
        let f = &self.costs.fit;
        if f.rss_kib.is_some() || f.fds.is_some() {
            let v = |l: &Option<crate::results::capacity::Line>| {
                l.map_or_else(|| "–".into(), |l| format!("{:.2}", l.per_exec))
            };
            t.push_str(&format!(
                "per held exec: RSS {} KiB, {} fds, {} threads (least squares over {} steps)\n",
                v(&f.rss_kib),
                v(&f.fds),
                v(&f.threads),
                self.steps.len()
            ));
        }
        t
    }
}

/// What capacity.md opens with: what the command measures and how to run it.
pub(crate) const ABOUT: &str = "What it measures: how many held execs one sandbox-agent daemon takes. The \
event-driven relay holds one watch window (a held `POST /v1/processes/run`) per active agent turn, so a \
sandbox's daemon holds as many as it has active turns. At each step the ramp holds N execs at once, each \
on its own HTTP connection as a runner's would be (a program that sleeps past the ramp), then times the \
next exec (a `true` run on a new connection: its round trip, connect included) and reads the daemon's \
RSS, open fds, threads and child processes from /proc. It stops at `--max` or where the daemon fails \
(an error status, a refused or reset connection, a probe timeout, the daemon dying), saying how, and \
then cancels every held request, kills every held program (a closed connection does not end it) and \
stops the daemon it started. How to run it: `relay-bench daemon-capacity` (a daemon of its own on \
loopback; `--sandbox-agent PATH` names the binary), or `--url http://HOST:PORT` for one already running \
(`--pid PID` when it runs on this machine, for its /proc readings); `--max`, `--steps`, `--samples`; \
`--nofile hard|N` sets the started daemon's soft open-files limit; `--out DIR`.";

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "–".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

fn num(v: Option<u64>) -> String {
    v.map_or_else(|| "–".into(), |n| n.to_string())
}

fn per(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:+.2}{unit}"))
}

fn latency(s: &Step, stat: f64) -> String {
    if s.probe.count == 0 {
        "–".into()
    } else {
        human_us(stat)
    }
}

/// One sentence on how the ramp ended.
pub(crate) fn verdict(r: &CapacityReport) -> String {
    match (r.outcome, &r.failure) {
        (Outcome::Completed, _) => format!("completed: {} held execs reached, no failure", r.reached()),
        (Outcome::Running, _) => format!("running: {} held execs so far", r.reached()),
        (Outcome::Interrupted, _) => format!("interrupted after the step at {} held execs", r.reached()),
        (Outcome::FailurePoint, Some(f)) => format!("failure point at step {}: {}", f.step, f.said),
        (Outcome::Stopped, Some(f)) => format!("stopped at step {} (not the daemon's failure): {}", f.step, f.said),
        (o, None) => format!("{}: {} held execs", o.name(), r.reached()),
    }
}

/// capacity.md, rendered from the report alone (a committed run's must re-render to itself).
pub fn markdown(r: &CapacityReport) -> String {
    super::doc::document(&r.document())
}

/// capacity.html: the same document on one self-contained page.
pub fn html(r: &CapacityReport) -> String {
    super::html::document_page(&r.document())
}

/// The machine, the daemon and its limits, and the ramp's plan.
fn machine(r: &CapacityReport) -> Vec<Block> {
    let m = &r.machine;
    let d = &r.daemon;
    let mem = m.mem_total_kib.map_or_else(|| "unknown".into(), |k| format!("{:.1} GiB", k as f64 / 1048576.0));
    let limit = |l: &Option<crate::results::capacity::Limit>| l.map_or_else(|| "unknown".into(), |l| l.describe());
    let whose = if d.started_here { "started by relay-bench" } else { "already running (--url)" };
    let pid = d.pid.map_or_else(|| "not on this machine: no /proc readings".into(), |p| format!("pid {p}"));
    let mut nofile = limit(&d.open_files);
    if let Some(before) = &d.open_files_as_started {
        nofile.push_str(&format!(" (as started: {}; set by --nofile)", before.describe()));
    }
    let rows = [
        ("kernel", format!("{} {} ({})", m.os, m.kernel, m.arch)),
        ("cpus", m.cpus.to_string()),
        ("memory", mem),
        ("build", format!("relay-bench {}, {}", m.suite_version, m.build)),
        ("daemon", format!("{}, {whose}, {} ({pid})", d.version, d.url)),
        ("daemon's open files (Max open files)", nofile),
        ("daemon's max processes", limit(&d.max_processes)),
        ("daemon's cgroup pids.max", d.cgroup_pids_max.clone().unwrap_or_else(|| "none".into())),
        ("relay-bench's open files", limit(&m.client_open_files)),
        (
            "load average (1, 5, 15 min)",
            format!(
                "{} at the start, {} at the end",
                m.load_start.as_deref().unwrap_or("unknown"),
                m.load_end.as_deref().unwrap_or("–")
            ),
        ),
        ("started", format!("{} (took {:.1} s)", r.started, r.duration_ms as f64 / 1000.0)),
        ("command", code(&r.command)),
    ];
    let p = &r.ramp;
    vec![
        Block::Table(Table::new("fact|value", rows.into_iter().map(|(k, v)| vec![k.to_owned(), v]))),
        Block::Para(inline(format!(
            "Steps {} (max {}); {} probes per step; each held exec runs {} with timeoutMs {}; each probe runs {} \
             with timeoutMs {}.",
            p.steps.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            p.max,
            p.samples,
            code(&p.held_argv.join(" ")),
            p.hold_timeout_ms,
            code(&p.probe_argv.join(" ")),
            p.probe_timeout_ms,
        ))),
    ]
}

/// A row per step: held execs, the next exec's round trip, the daemon's readings.
fn steps(r: &CapacityReport) -> Vec<Block> {
    let rows = r.steps.iter().map(|s| {
        let open = if s.held == 0 { "–".into() } else { format!("{:.1} ms", s.open_ms) };
        vec![
            s.held.to_string(),
            num(s.running.map(u64::from)),
            open,
            latency(s, s.probe.p50),
            latency(s, s.probe.p99),
            latency(s, s.probe.max),
            s.probe.count.to_string(),
            mib(s.readings.rss_kib),
            num(s.readings.fds),
            num(s.readings.threads),
            num(s.readings.children),
        ]
    });
    vec![
        Block::Para(inline(
            "Held 0 is the baseline. *open*: from sending the step's new held execs to seeing them all running. \
             *next exec*: the probe's round trip (connect included).",
        )),
        Block::Table(Table::new(
            ">held|>running|>open|>next exec p50|>p99|>max|>probes|>RSS|>fds|>threads|>children",
            rows,
        )),
    ]
}

/// Where and how the ramp failed, with the limit it met when one is known.
fn failure(r: &CapacityReport) -> Vec<Block> {
    let Some(f) = &r.failure else {
        return vec![Block::Para(plain(format!("None: {}.", verdict(r))))];
    };
    let mut items = vec![
        plain(format!("step: {} (held execs running: {})", f.step, f.held)),
        plain(format!("during: {}", f.during)),
        plain(format!("how: {}", how(&f.how))),
    ];
    if let How::HttpStatus { body, .. } = &f.how {
        items.push(vec![Span::Text("the body, as the daemon sent it: ".into()), Span::Code(body.clone())]);
    }
    if let Some(l) = &f.limit {
        let used = l.used.map_or_else(String::new, |u| format!("{u} of "));
        let of = l.limit.map_or_else(|| "its limit".into(), |n| n.to_string());
        items.push(plain(format!("limit: {}'s {} ({used}{of}; {})", l.whose, l.what, l.evidence)));
    }
    let rd = &f.readings;
    items.push(plain(format!(
        "the daemon just after: RSS {}, {} fds, {} threads, {} children",
        mib(rd.rss_kib),
        num(rd.fds),
        num(rd.threads),
        num(rd.children)
    )));
    vec![Block::Para(plain(f.said.clone())), Block::List(items)]
}

/// What a held exec costs the daemon: the fitted lines and the slope between steps.
fn costs(r: &CapacityReport) -> Vec<Block> {
    let c = &r.costs;
    let fit = |l: &Option<crate::results::capacity::Line>, unit: &str| {
        l.map_or_else(
            || "–".into(),
            |l| format!("{:+.3}{unit} per held exec (at 0: {:.1}{unit})", l.per_exec, l.at_zero),
        )
    };
    let mut fits = vec![
        plain(format!("RSS: {}", fit(&c.fit.rss_kib, " KiB"))),
        plain(format!("fds: {}", fit(&c.fit.fds, ""))),
        plain(format!("threads: {}", fit(&c.fit.threads, ""))),
    ];
    if let (Some(at), Some(soft)) = (c.fd_limit_at, r.daemon.open_files.and_then(|l| l.soft)) {
        fits.push(plain(format!(
            "the fd line meets the daemon's soft limit ({soft}) at about {at:.0} held execs (a projection)"
        )));
    }
    let rows = c
        .intervals
        .iter()
        .map(|i| vec![i.from.to_string(), i.to.to_string(), per(i.rss_kib, ""), per(i.fds, ""), per(i.threads, "")]);
    vec![
        Block::Para(plain(format!("Least-squares over {} steps (the baseline included):", r.steps.len()))),
        Block::List(fits),
        Block::Para(plain("Between steps (the slope: change / change in held execs):")),
        Block::Table(Table::new(">from|>to|>RSS KiB/exec|>fds/exec|>threads/exec", rows)),
    ]
}

/// What the cleanup did: requests cancelled, programs killed, the daemon stopped.
fn cleanup(r: &CapacityReport) -> Vec<Block> {
    let text = match &r.cleanup {
        None => "Not yet (the ramp is running).".to_owned(),
        Some(k) => {
            let left =
                if k.left.is_empty() { "none left".to_owned() } else { format!("LEFT RUNNING: pids {:?}", k.left) };
            let daemon = match k.daemon_stopped {
                Some(true) => "; the daemon stopped",
                Some(false) => "; THE DAEMON IS STILL RUNNING",
                None => "; the daemon (not started here) left running",
            };
            format!("{} held requests cancelled, {} held programs killed, {left}{daemon}.", k.cancelled, k.killed)
        }
    };
    vec![Block::Para(plain(text))]
}
