//! A run file the recorder thread appends to: the event logs and `calls.csv` write through
//! it, never stop for a write error, and say the first one when the case closes.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// A run file appended to through a buffer: once a write fails, the writes after it are
/// skipped, and the first error is kept for [`Appended::flush`].
pub(crate) struct Appended {
    out: BufWriter<File>,
    failed: Option<io::Error>,
}

impl Appended {
    /// Opens `path` to append, buffered by `capacity` bytes.
    pub(crate) fn open(path: &Path, capacity: usize) -> io::Result<Appended> {
        // Never through a link planted at its name, never a FIFO or a device.
        crate::base::runfiles::note(path);
        let file = crate::base::fsio::open_to_write(path, true)?;
        Ok(Appended { out: BufWriter::with_capacity(capacity, file), failed: None })
    }

    /// Whether the file was empty when opened (nothing is written before the first flush of
    /// the buffer).
    pub(crate) fn is_empty(&self) -> io::Result<bool> {
        Ok(self.out.get_ref().metadata()?.len() == 0)
    }

    /// Writes through `write`, unless a write failed before; keeps the first error.
    #[inline]
    pub(crate) fn write(&mut self, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) {
        if self.failed.is_none() {
            if let Err(e) = write(&mut self.out) {
                self.failed = Some(e);
            }
        }
    }

    /// Flushes; the first write error, if any, is returned.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.out.flush()
    }
}
