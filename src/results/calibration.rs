//! Calibration: the raw floor of this machine, measured beside the cases so a reader sees
//! how close each strategy gets to the limit. Three numbers: a rename's inotify event
//! delivery (the floor of any watch wake), the overshoot of a short timer (the floor of any
//! poll), and the cost of listing a small relay dir (paid on every scan).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::base::fsio::{temp_name, write_new};
use crate::record::recorder::{new_histogram, LatencyStats};
use crate::sandbox::dir::{DirWatch, EventFilter, WatchHandle};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// A request's rename onto its final name -> the watcher's callback (µs).
    pub inotify_rename_us: LatencyStats,
    /// A 1 ms tokio sleep's overshoot (µs).
    pub timer_overshoot_1ms_us: LatencyStats,
    /// `read_dir` of a relay dir holding 16 files (µs).
    pub list_16_files_us: LatencyStats,
    /// Renames whose event never arrived within 1 s.
    pub inotify_missed: u64,
}

use crate::base::units::record;

/// Measures the floor with `samples` of each probe in a scratch dir under `root`.
pub async fn calibrate(root: &Path, samples: u32) -> std::io::Result<Calibration> {
    let dir = tempfile::Builder::new().prefix("relay-bench-calibration-").tempdir_in(root)?;
    let path = dir.path().to_path_buf();

    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let tx = std::sync::Mutex::new(tx);
    let watch = DirWatch::arm(
        &path,
        Box::new(move |seen| {
            if EventFilter::Requests.wants(seen) {
                let _ = tx.lock().expect("calibration channel").send(Instant::now());
            }
        }),
    )?;
    let mut inotify = new_histogram();
    let mut missed = 0;
    for i in 0..samples {
        let name = format!("cal-{i}.req.json");
        // A rename is reported twice (the new name, then the from/to pair): drop leftovers.
        while rx.try_recv().is_ok() {}
        // Timed from just before the rename: the event is often queued before it returns.
        let tmp = path.join(temp_name(&name));
        write_new(&tmp, b"{}")?;
        let before = Instant::now();
        std::fs::rename(&tmp, path.join(&name))?;
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(at) => record(&mut inotify, at.saturating_duration_since(before)),
            Err(_) => missed += 1,
        }
        std::fs::remove_file(path.join(&name))?;
    }
    watch.disarm();

    let mut timer = new_histogram();
    for _ in 0..samples {
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_millis(1)).await;
        record(&mut timer, t0.elapsed().saturating_sub(Duration::from_millis(1)));
    }

    for i in 0..16 {
        std::fs::write(path.join(format!("f{i}.res.json")), b"{}")?;
    }
    let mut list = new_histogram();
    for _ in 0..samples {
        let t0 = Instant::now();
        let n = std::fs::read_dir(&path)?.count();
        record(&mut list, t0.elapsed());
        debug_assert_eq!(n, 16);
    }
    Ok(Calibration {
        inotify_rename_us: LatencyStats::of(&inotify),
        timer_overshoot_1ms_us: LatencyStats::of(&timer),
        list_16_files_us: LatencyStats::of(&list),
        inotify_missed: missed,
    })
}
