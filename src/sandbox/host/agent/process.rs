//! A sandbox-agent daemon started by relay-bench for one sandbox: spawned on a free
//! loopback port, killed and reaped with its host, and struck by the fault schedule (a
//! restart kills it and starts it again on its port; a pause freezes it).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::START_BOUND;
use crate::sandbox::host::{DaemonControl, DelayProxy, NotApplied};

/// A daemon process started for one sandbox; killed and reaped when dropped. The fault
/// schedule can stop it for a while (a restart) or freeze it (a pause).
pub struct AgentProcess {
    bin: PathBuf,
    port: u16,
    child: Arc<Mutex<Option<Running>>>,
    /// The daemon's base URL (`http://127.0.0.1:PORT`).
    pub base: String,
}

impl AgentProcess {
    /// Starts `bin` on a free loopback port and waits until it answers.
    pub fn start(bin: &Path) -> io::Result<AgentProcess> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = spawn_daemon(bin, port)?;
        Ok(AgentProcess {
            bin: bin.to_path_buf(),
            port,
            child: Arc::new(Mutex::new(Some(Running(child)))),
            base: format!("http://127.0.0.1:{port}"),
        })
    }

    /// The daemon's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The daemon's process id; `None` while a restart has it down.
    pub fn pid(&self) -> Option<u32> {
        self.child.lock().expect("daemon lock").as_ref().map(|c| c.0.id())
    }

    /// How the daemon ended, if it has; `None` while it runs. It is not reaped here (only
    /// its drop reaps it), so its pid stays its group's until then.
    pub(crate) fn exit_status(&self) -> Option<std::process::ExitStatus> {
        let pid = self.child.lock().expect("daemon lock").as_ref()?.0.id();
        // SAFETY: waitid only writes the siginfo it is given; WNOWAIT leaves the child a
        // zombie for its drop to reap.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let peeked =
            unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        // SAFETY: si_pid and si_status are set by a waitid that found a child (zero otherwise).
        let (found, status) = unsafe { (info.si_pid(), info.si_status()) };
        if peeked != 0 || found == 0 {
            return None;
        }
        // Back to a wait(2) status word: an exit code in the high byte, else the signal.
        let raw = if info.si_code == libc::CLD_EXITED { status << 8 } else { status };
        Some(std::os::unix::process::ExitStatusExt::from_raw(raw))
    }

    /// Kills the daemon (its connections reset, its runs end), starts it again on the same
    /// port after `down`. Refused while a restart is under way. A daemon that will not start
    /// again stays down (every request then fails and says so); one started after its case
    /// ended is killed at once.
    pub fn restart(&self, down: Duration) -> Result<(), NotApplied> {
        let killed = self.child.lock().expect("daemon lock").take().ok_or(NotApplied::Restarting)?;
        drop(killed);
        let (slot, bin, port) = (Arc::downgrade(&self.child), self.bin.clone(), self.port);
        std::thread::spawn(move || {
            std::thread::sleep(down);
            let Ok(c) = spawn_daemon(&bin, port) else { return };
            // Its case gone meanwhile: dropped here, so killed.
            if let Some(slot) = slot.upgrade() {
                *slot.lock().expect("daemon lock") = Some(Running(c));
            }
        });
        Ok(())
    }

    /// SIGSTOP, then SIGCONT after `d`: the daemon accepts nothing and answers nothing.
    pub fn pause(&self, d: Duration) -> Result<(), NotApplied> {
        let pid = self.child.lock().expect("daemon lock").as_ref().map(|c| c.0.id() as i32).ok_or(NotApplied::Down)?;
        // SAFETY: kill() only sends a signal to the daemon this process started.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let child = Arc::downgrade(&self.child);
        std::thread::spawn(move || {
            std::thread::sleep(d);
            if let Some(slot) = child.upgrade() {
                if let Some(c) = slot.lock().expect("daemon lock").as_ref() {
                    // SAFETY: as above.
                    unsafe { libc::kill(c.0.id() as i32, libc::SIGCONT) };
                }
            }
        });
        Ok(())
    }
}

/// A binary started as the daemon that did not serve as one (it exited, or never listened):
/// the binary the user named, or installed, is not a sandbox-agent daemon.
#[derive(Debug, thiserror::Error)]
#[error("{bin} is not a working sandbox-agent daemon: {why}; give the sandbox-agent binary (scripts/install-sandbox-agent.sh installs it)")]
pub(super) struct NotADaemon {
    bin: String,
    why: String,
}

/// Whether `e` says a binary is not a daemon ([`NotADaemon`]): the user's to fix.
pub(crate) fn is_not_a_daemon(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<NotADaemon>())
}

/// Starts the daemon on `port` and waits (10 s at most) until it listens.
fn spawn_daemon(bin: &Path, port: u16) -> io::Result<std::process::Child> {
    let mut child = spawner_thread_spawn(bin, port)?;
    let deadline = std::time::Instant::now() + START_BOUND;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(io::Error::other(NotADaemon {
                bin: bin.display().to_string(),
                why: format!("it exited at start ({status})"),
            }));
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let why = format!("it did not listen on port {port} within 10 s");
            return Err(io::Error::other(NotADaemon { bin: bin.display().to_string(), why }));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(child)
}

type SpawnRequest = (PathBuf, u16, std::sync::mpsc::Sender<io::Result<std::process::Child>>);

/// Spawns the daemon from one thread that lives as long as relay-bench. The daemon asks the
/// kernel for SIGKILL when its parent dies (no orphan, even after a SIGKILL of relay-bench),
/// and Linux counts the parent as the *thread* that spawned it: a short-lived thread (a
/// restart's) would take its daemon with it.
fn spawner_thread_spawn(bin: &Path, port: u16) -> io::Result<std::process::Child> {
    static SPAWNER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<SpawnRequest>>> = std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("sandbox-agent-spawner".into())
            .spawn(move || {
                for (bin, port, reply) in rx {
                    let _ = reply.send(command(&bin, port).spawn());
                }
            })
            .expect("a thread");
        Mutex::new(tx)
    });
    let (reply, answer) = std::sync::mpsc::channel();
    spawner
        .lock()
        .expect("spawner lock")
        .send((bin.to_path_buf(), port, reply))
        .map_err(|_| io::Error::other("the daemon spawner thread is gone"))?;
    answer.recv().map_err(|_| io::Error::other("the daemon spawner thread is gone"))?
}

fn command(bin: &Path, port: u16) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["server", "--no-token", "--no-telemetry", "-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // A process group of its own: what it runs (a window's watch program, a writer) is in
    // it and ends with it, and a Ctrl-C at the terminal reaches relay-bench alone, which
    // still needs the daemon to bring the case's files back.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // SAFETY: prctl in the child before exec, async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// A daemon process that is killed and reaped when dropped, wherever it is dropped (a slot
/// overwritten, a restart that outlived its case), and with it every process it started
/// (its group): a held window's watch program does not outlive its daemon.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        // Reaped only below (exit_status only looks), so its pid is still the group's id
        // even when the daemon died first: what it started goes with it either way.
        let group = -(self.0.id() as i32);
        // SAFETY: kill() only sends signals, to the group this process made for its daemon;
        // a paused daemon is resumed so that it can die.
        unsafe {
            libc::kill(group, libc::SIGCONT);
            libc::kill(group, libc::SIGKILL);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the fault schedule acts on: the sandbox's daemon (`None`: one already running,
/// which relay-bench did not start and strikes only on the wire) and, with a profile, the
/// proxy in front of it.
pub(crate) struct AgentControl {
    pub process: Option<Arc<AgentProcess>>,
    pub proxy: Option<Arc<DelayProxy>>,
}

impl DaemonControl for AgentControl {
    fn restart(&self, down: Duration) -> Result<(), NotApplied> {
        self.process.as_ref().ok_or(NotApplied::NotStarted { action: "restarted" })?.restart(down)
    }

    fn disconnect(&self) -> Result<(), NotApplied> {
        DelayProxy::disconnect_any(self.proxy.as_deref())
    }

    fn pause(&self, d: Duration) -> Result<(), NotApplied> {
        self.process.as_ref().ok_or(NotApplied::NotStarted { action: "paused" })?.pause(d)
    }

    fn blackhole(&self, d: Duration) -> Result<(), NotApplied> {
        DelayProxy::blackhole_any(self.proxy.as_deref(), d)
    }
}
