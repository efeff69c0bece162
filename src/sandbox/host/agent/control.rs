//! What relay-bench itself asks of a daemon, beside the runner's requests: the checks before
//! a run (health, version), and the in-sandbox side of a case (`in_sandbox = true`), laid
//! out, uploaded, started, timed and brought back through these. They are the bench's
//! requests, not the relay's: none is in the request rates, and none crosses the delay proxy
//! (a real remote sandbox has no proxy; its network is in every request alike). Each is
//! counted by what it is for ([`BenchRequests`]), so a daemon's own log reconciles with a
//! report: the runner's requests over the whole case plus these are every request it saw.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use hyper::Method;
use serde::Deserialize;

use super::api::{decode, Api};
use crate::base::units::monotonic_ns;
use crate::sandbox::dir::ExecOutput;

/// The daemon buffers at most 2 MiB of a request's body (axum's default limit): larger files
/// go up in parts of this size and are joined in the sandbox.
pub(crate) const UPLOAD_PART: usize = 2 << 20;
/// How long a short command in the sandbox may take.
const SHORT_MS: u64 = 30_000;

/// One reading of the sandbox's clock: this machine's monotonic clock before the request
/// went and after its answer came, and the sandbox's in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClockReading {
    pub sent_ns: u64,
    pub back_ns: u64,
    pub sandbox_ns: u64,
}

/// A background process in the sandbox, as the daemon reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessState {
    Running,
    /// Exited (`None`: by a signal, or the daemon does not know its code).
    Exited(Option<i32>),
}

/// The daemon's process record (`GET /v1/processes/{id}`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProcessRecord {
    id: String,
    status: String,
    exit_code: Option<i32>,
}

crate::base::named! {
/// What one of relay-bench's own requests to a daemon is for, and its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchRequest {
    /// `GET /v1/health`: the daemon answers and takes the token (before the run).
    Health,
    /// `POST /v1/processes/run` of the daemon's binary `--version` (before the run).
    Version,
    /// `POST /v1/fs/mkdir`.
    Mkdir,
    /// `PUT /v1/fs/file`: a file (or a part of the program) uploaded.
    Upload,
    /// `POST /v1/processes/run`: a short command (joining the program's parts, a clock reading).
    Command,
    /// `GET /v1/fs/file`: a file brought back (a writer's log).
    Fetch,
    /// `GET /v1/fs/entries`: a dir's names (the files left at the end).
    Names,
    /// `DELETE /v1/fs/entry?recursive=true`.
    Remove,
    /// `POST /v1/processes`: a background process started.
    Spawn,
    /// `GET /v1/processes/{id}`.
    State,
    /// `POST /v1/processes/{id}/kill`.
    Kill,
}
names ["health", "version", "mkdir", "upload", "command", "fetch", "names", "remove", "spawn", "state", "kill"]
}

impl BenchRequest {
    /// Its method and route, as a daemon's log shows it.
    pub fn route(self) -> &'static str {
        match self {
            BenchRequest::Health => "GET /v1/health",
            BenchRequest::Version | BenchRequest::Command => "POST /v1/processes/run",
            BenchRequest::Mkdir => "POST /v1/fs/mkdir",
            BenchRequest::Upload => "PUT /v1/fs/file",
            BenchRequest::Fetch => "GET /v1/fs/file",
            BenchRequest::Names => "GET /v1/fs/entries",
            BenchRequest::Remove => "DELETE /v1/fs/entry",
            BenchRequest::Spawn => "POST /v1/processes",
            BenchRequest::State => "GET /v1/processes/{id}",
            BenchRequest::Kill => "POST /v1/processes/{id}/kill",
        }
    }
}

/// relay-bench's own requests to a case's daemons, counted by [`BenchRequest`]; shared by
/// the case's host spec (its checks before the run) and every sandbox's [`SandboxControl`].
#[derive(Debug, Default)]
pub(crate) struct BenchRequests([AtomicU64; BenchRequest::ALL.len()]);

impl BenchRequests {
    pub(crate) fn count(&self, r: BenchRequest) {
        self.0[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far, by name, those made only.
    pub(crate) fn by_name(&self) -> Vec<(&'static str, u64)> {
        BenchRequest::ALL
            .iter()
            .map(|r| (r.name(), self.0[*r as usize].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// relay-bench's own requests to one daemon.
pub(crate) struct SandboxControl {
    api: Api,
    counts: std::sync::Arc<BenchRequests>,
}

fn shell(script: &str, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), script.to_owned(), "sh".to_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    argv
}

/// A short command's failure as an error naming what was run.
fn succeeded(what: &str, out: ExecOutput) -> io::Result<ExecOutput> {
    if out.code == Some(0) {
        return Ok(out);
    }
    let why = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let code = out.code.map_or_else(|| "no exit code".to_owned(), |c| format!("exit {c}"));
    Err(io::Error::other(format!(
        "{what} in the sandbox failed ({code}{}{why})",
        if why.is_empty() { "" } else { ": " }
    )))
}

impl SandboxControl {
    /// `api`: the daemon's own address, never the delay proxy's; every request counted in
    /// `counts`.
    pub(crate) fn new(api: Api, counts: std::sync::Arc<BenchRequests>) -> SandboxControl {
        SandboxControl { api, counts }
    }

    /// `POST /v1/fs/mkdir`: `path` and its parents.
    pub(crate) async fn mkdir(&self, path: &str) -> io::Result<()> {
        self.counts.count(BenchRequest::Mkdir);
        self.api.send(Method::POST, self.api.at("/v1/fs/mkdir", path), None).await.map(drop)
    }

    /// `PUT /v1/fs/file` of a small file.
    pub(crate) async fn put(&self, path: &str, bytes: Vec<u8>) -> io::Result<()> {
        self.counts.count(BenchRequest::Upload);
        self.api.put_file(path, bytes).await
    }

    /// `GET /v1/fs/file`.
    pub(crate) async fn get(&self, path: &str) -> io::Result<Vec<u8>> {
        self.counts.count(BenchRequest::Fetch);
        self.api.send(Method::GET, self.api.at("/v1/fs/file", path), None).await
    }

    /// `DELETE /v1/fs/entry?recursive=true`: `path` and all under it (gone already is fine).
    pub(crate) async fn remove_tree(&self, path: &str) -> io::Result<()> {
        self.counts.count(BenchRequest::Remove);
        self.api.delete_entry(path, true).await
    }

    /// The names in `path` (`GET /v1/fs/entries`).
    pub(crate) async fn names(&self, path: &str) -> io::Result<Vec<String>> {
        #[derive(Deserialize)]
        struct Entry {
            name: String,
        }
        self.counts.count(BenchRequest::Names);
        let bytes = self.api.send(Method::GET, self.api.at("/v1/fs/entries", path), None).await?;
        Ok(decode::<Vec<Entry>>(&bytes)?.into_iter().map(|e| e.name).collect())
    }

    /// Uploads the executable `local` to `remote` in the sandbox: parts of [`UPLOAD_PART`],
    /// joined there, made executable, and its size checked. Returns its size.
    pub(crate) async fn upload_program(&self, local: &Path, remote: &str) -> io::Result<u64> {
        let bytes = std::fs::read(local).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", local.display())))?;
        let mut parts = Vec::new();
        for (i, chunk) in bytes.chunks(UPLOAD_PART).enumerate() {
            let part = format!("{remote}.part{i}");
            self.put(&part, chunk.to_vec()).await?;
            parts.push(part);
        }
        let mut args = vec![remote];
        args.extend(parts.iter().map(String::as_str));
        let join =
            shell(r#"out=$1; shift; cat "$@" > "$out" && chmod 755 "$out" && rm -f "$@" && wc -c < "$out""#, &args);
        self.counts.count(BenchRequest::Command);
        let out = succeeded("joining the uploaded program", self.api.run(&join, SHORT_MS).await?)?;
        let size: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0);
        if size != bytes.len() as u64 {
            return Err(io::Error::other(format!(
                "the program uploaded to {remote} has {size} bytes, not {}",
                bytes.len()
            )));
        }
        Ok(size)
    }

    /// What the daemon's own binary says to `--version` (the daemon has no version
    /// endpoint; the process it spawns reads its parent's executable).
    pub(crate) async fn version(&self) -> io::Result<String> {
        let argv = shell(r#"exec "$(readlink /proc/$PPID/exe)" --version"#, &[]);
        self.counts.count(BenchRequest::Version);
        let out = succeeded("asking the daemon's version", self.api.run(&argv, SHORT_MS).await?)?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// One reading of the sandbox's clock through `program sandbox-clock`.
    pub(crate) async fn read_clock(&self, program: &str) -> io::Result<ClockReading> {
        let argv = [program.to_owned(), "sandbox-clock".to_owned()];
        self.counts.count(BenchRequest::Command);
        let sent_ns = monotonic_ns();
        let out = self.api.run(&argv, SHORT_MS).await;
        let back_ns = monotonic_ns();
        let out = succeeded("sandbox-clock", out?)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let sandbox_ns = text
            .trim()
            .parse()
            .map_err(|_| io::Error::other(format!("sandbox-clock printed {:?}, not a number", text.trim())))?;
        Ok(ClockReading { sent_ns, back_ns, sandbox_ns })
    }

    /// Starts `argv` in the background (`POST /v1/processes`); returns its id.
    pub(crate) async fn spawn(&self, argv: &[String]) -> io::Result<String> {
        let (command, args) =
            argv.split_first().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty argv"))?;
        let body = serde_json::json!({ "command": command, "args": args });
        self.counts.count(BenchRequest::Spawn);
        let bytes = self.api.post_json("/v1/processes", body).await?;
        Ok(decode::<ProcessRecord>(&bytes)?.id)
    }

    /// Where a background process stands.
    pub(crate) async fn state(&self, id: &str) -> io::Result<ProcessState> {
        self.counts.count(BenchRequest::State);
        let uri = format!("{}/v1/processes/{id}", self.api.base);
        let rec: ProcessRecord = decode(&self.api.send(Method::GET, uri, None).await?)?;
        Ok(match rec.status.as_str() {
            "exited" => ProcessState::Exited(rec.exit_code),
            _ => ProcessState::Running,
        })
    }

    /// Kills a background process (SIGKILL; one that has exited already is fine).
    pub(crate) async fn kill(&self, id: &str) -> io::Result<()> {
        self.counts.count(BenchRequest::Kill);
        let uri = format!("{}/v1/processes/{id}/kill", self.api.base);
        self.api.send(Method::POST, uri, None).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_command_names_itself_its_code_and_what_it_said() {
        let err = succeeded("x", ExecOutput::exited(3, "", "no such file\n")).unwrap_err().to_string();
        assert_eq!(err, "x in the sandbox failed (exit 3: no such file)");
        assert!(succeeded("x", ExecOutput::exited(0, "ok", "")).is_ok());
    }
}
