//! Calibration: the raw floor of this machine, measured beside the cases so a reader sees
//! how close each strategy gets to the limit: a rename's inotify event delivery (the floor
//! of any watch wake), the same with the list of the dir and the read of the request that a
//! pickup makes after its wake, on the thread the event woke (the floor of a local pickup),
//! the overshoot of a short timer (the floor of any poll), and the cost of listing a small
//! relay dir (paid on every scan).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::base::clock;
use crate::base::fsio::{temp_name, write_new};
use crate::record::recorder::{new_histogram, LatencyStats};
use crate::sandbox::dir::{DirWatch, EventFilter, WatchHandle};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// A request's rename onto its final name -> the watcher's callback (µs).
    pub inotify_rename_us: LatencyStats,
    /// A request's rename -> the event -> a list of the dir and a read of the request, on
    /// the watch's own thread: a pickup's floor, with no hop to the runner's task (µs).
    /// Absent from runs made before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inotify_pickup_us: Option<LatencyStats>,
    /// A 1 ms tokio sleep's overshoot (µs).
    pub timer_overshoot_1ms_us: LatencyStats,
    /// `read_dir` of a relay dir holding 16 files (µs).
    pub list_16_files_us: LatencyStats,
    /// Renames whose event never arrived within 1 s.
    pub inotify_missed: u64,
}

use crate::base::units::record;

/// Measures the floor with `samples` of each probe in a scratch dir under `root`.
pub(crate) async fn calibrate(root: &Path, samples: u32) -> std::io::Result<Calibration> {
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
    let pickup = pickup_floor(&path, samples)?;

    let mut timer = new_histogram();
    for _ in 0..samples {
        let t0 = Instant::now();
        clock::sleep(Duration::from_millis(1)).await;
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
        inotify_pickup_us: Some(LatencyStats::of(&pickup)),
        timer_overshoot_1ms_us: LatencyStats::of(&timer),
        list_16_files_us: LatencyStats::of(&list),
        inotify_missed: missed,
    })
}

/// A pickup's floor in `path`: rename -> the event -> list the dir and read the request, on
/// the thread the event woke; `samples` of them (a rename whose pickup does not come within
/// 1 s is left out).
fn pickup_floor(path: &Path, samples: u32) -> std::io::Result<hdrhistogram::Histogram<u64>> {
    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let tx = std::sync::Mutex::new(tx);
    let dir = path.to_path_buf();
    let watch = DirWatch::arm(
        path,
        Box::new(move |seen| {
            if let crate::sandbox::dir::Seen::Name(name, crate::sandbox::dir::Change::Appeared) = seen {
                if crate::base::protocol::classify(name) == crate::base::protocol::FileKind::Request {
                    let listed = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
                    let read = std::fs::read(dir.join(name)).map(|b| b.len()).unwrap_or(0);
                    std::hint::black_box((listed, read));
                    let _ = tx.lock().expect("calibration channel").send(Instant::now());
                }
            }
        }),
    )?;
    let mut pickup = new_histogram();
    for i in 0..samples {
        let name = format!("pick-{i}.req.json");
        while rx.try_recv().is_ok() {}
        let tmp = path.join(temp_name(&name));
        std::fs::write(&tmp, br#"{"toolName":"x","toolCallId":"c","args":{}}"#)?;
        let before = Instant::now();
        std::fs::rename(&tmp, path.join(&name))?;
        if let Ok(at) = rx.recv_timeout(Duration::from_secs(1)) {
            record(&mut pickup, at.saturating_duration_since(before));
        }
        std::fs::remove_file(path.join(&name))?;
    }
    watch.disarm();
    Ok(pickup)
}
