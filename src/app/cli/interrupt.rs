//! Ctrl-C, SIGTERM and SIGHUP: the first ends a command as it would end cleanly, with its
//! report (`run`, `conform`, `daemon-capacity`) or its outputs so far (`report`); a second
//! aborts at once, leaving no temp file and no report that claims it finished.

use std::sync::Arc;

use super::Exit;
use crate::base::console;
use crate::base::signal::Signal;

/// A signal closed by the first Ctrl-C, SIGTERM or SIGHUP (a terminal closed, a CI job
/// cancelled, `kill`): the command finishes as it would on Ctrl-C. A second one exits at once.
pub(super) fn on_interrupt(doing: &'static str) -> Arc<Signal> {
    let interrupt = Arc::new(Signal::new());
    // Registered here, before the work starts: a signal that arrives before the task first
    // runs is still caught (and not the default action, which kills without a report).
    let Ok(mut signals) = Interrupts::new() else { return interrupt };
    tokio::spawn({
        let interrupt = interrupt.clone();
        async move {
            let first = signals.next().await;
            console::err(&format!("\ninterrupted ({first}): {doing} (again to abort)"));
            interrupt.close();
            let again = signals.next().await;
            console::err(&format!("interrupted again ({again}): aborting"));
            // The stops that would end what relay-bench started do not run on an exit: the
            // black-box runners' process groups are killed here (daemons die with it), the
            // temp files of outputs being written are removed, and the reports written so far
            // say they were cut short.
            crate::base::fsio::kill_own_groups();
            crate::report::outdir::mark_interrupted();
            crate::base::fsio::remove_staged();
            std::process::exit(Exit::Interrupted as i32);
        }
    });
    interrupt
}

/// The signals that stop a command.
struct Interrupts {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn new() -> std::io::Result<Interrupts> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Interrupts {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next one's name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "Ctrl-C",
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}
