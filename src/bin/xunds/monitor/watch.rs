//! One watched slab: finding it, reading it read-only, and knowing which
//! process writes it.
//!
//! A watch keeps one descriptor of the slab file it found and maps it only
//! for the moment of a read ([`ReadOnlySlab::from_file`]), so the monitor
//! holds one mapping at a time however many slabs it watches. Everything is
//! read through [`Reader`] (a `PROT_READ` mapping with the header gate and
//! the record hash protocol). What can go wrong with the file is reported
//! as a string for the runtime's `error`, never as a panic:
//!
//! - not there (yet): `...: No such file or directory`;
//! - not a slab, too short, header zero (mid-commit or released), bad
//!   magic or version: the reader's own refusal, retried next period;
//! - truncated while watched: the length is taken with `fstat` on our own
//!   descriptor before every read, and a short file is not mapped;
//! - deleted while watched: our descriptor keeps the inode, so its last
//!   values are still read and a note says the file is gone;
//! - replaced (another inode at the path): opened afresh.
//!
//! Each time the slab may have become another writer's (opened afresh, or
//! committed again after a release) the watch's [`Watch::generation`] grows;
//! the engine also compares the writer itself (lock holder and tag).

use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use xunds::nds::{ReadOnlySlab, Reader, Snapshot, REQUIRED_SIZE};

/// A successful read of one slab.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The counter words and the records, as the reader returned them.
    pub snap: Snapshot,
    /// The process holding the writer's lock at the read (every writer
    /// holds it for its life; the kernel drops it when the writer dies).
    pub holder: Option<u32>,
}

impl Sample {
    /// The runtime's tag: the fresh process-info-ext record's (up to 255
    /// bytes), else the fresh process-info record's (up to 31), if any.
    pub fn tag(&self) -> Option<String> {
        let (ext, short) = (&self.snap.process_info_ext, &self.snap.process_info);
        let ext = ext.clone().fresh().map(|p| p.tag_str().into_owned());
        let short = short.clone().fresh().map(|p| p.tag_str().into_owned());
        ext.into_iter().chain(short).find(|t| !t.is_empty())
    }
}

/// One watched slab path.
#[derive(Default)]
pub struct Watch {
    /// The slab's path.
    pub path: PathBuf,
    /// Our descriptor of the file found at the path.
    opened: Option<File>,
    /// A read found the slab not committed (released, or not yet) since
    /// the last good read: the next good read is of a new commit.
    released: bool,
    /// Grows each time the slab may hold a new writer's counters: opened
    /// afresh after an earlier file, or committed again after a release.
    pub generation: u64,
}

impl Watch {
    /// Watch `path` (nothing is opened yet).
    pub fn new(path: PathBuf) -> Watch {
        Watch {
            path,
            ..Watch::default()
        }
    }

    /// Read the slab now. `Ok` carries the sample and a non-fatal note
    /// (the file was deleted but is still read through our descriptor);
    /// `Err` says why nothing could be read.
    pub fn sample(&mut self) -> Result<(Sample, Option<String>), String> {
        let shown = self.path.display().to_string();
        let at = |e: &dyn std::fmt::Display| format!("{shown}: {e}");
        let mut note = None;
        match std::fs::metadata(&self.path) {
            Ok(m) => {
                let id = |f: &File| f.metadata().map(|o| (o.dev(), o.ino())).ok();
                let same = self.opened.as_ref().and_then(id) == Some((m.dev(), m.ino()));
                if !same && self.opened.take().is_some() {
                    self.released = true;
                }
            }
            Err(e) if self.opened.is_none() => return Err(at(&e)),
            Err(_) => {
                note = Some(at(
                    &"slab file deleted while watched; reading it through the monitor's descriptor",
                ))
            }
        }
        let open = || ReadOnlySlab::open_with_file(&self.path).map(|(_, f)| f);
        let file = self.opened.take().map_or_else(open, Ok);
        let file = file.map_err(|e| at(&e))?;
        let read = match file.metadata() {
            Err(e) => Err(at(&format_args!("fstat: {e}"))),
            Ok(m) if m.len() < REQUIRED_SIZE as u64 => Err(at(&format_args!(
                "slab truncated to {} bytes (needs {REQUIRED_SIZE})",
                m.len()
            ))),
            Ok(_) => ReadOnlySlab::from_file(&file)
                .and_then(Reader::attach)
                .and_then(|r| r.snapshot())
                .map_err(|e| at(&e)),
        };
        // Released, truncated or gone bad: open afresh next time (whatever
        // is there then may be another writer's).
        let snap = read.inspect_err(|_| self.released = true)?;
        if std::mem::take(&mut self.released) {
            self.generation += 1;
        }
        let holder = xunds::hal::mem::lock_holder(&file);
        self.opened = Some(file);
        Ok((Sample { snap, holder }, note))
    }
}

/// The pid in a default slab name, `xunds-<pid>.nds`.
pub fn pid_from_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_prefix("xunds-")?.strip_suffix(".nds")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The slabs `xunds run` leaves in `dir` by default (`xunds-<pid>.nds`),
/// sorted by path; an error when `dir` cannot be read.
pub fn discover(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let paths = std::fs::read_dir(dir)?.filter_map(|e| Some(e.ok()?.path()));
    let mut out: Vec<PathBuf> = paths.filter(|p| pid_from_name(p).is_some()).collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_carry_the_pid() {
        assert_eq!(pid_from_name(Path::new("/dev/shm/xunds-42.nds")), Some(42));
        assert_eq!(pid_from_name(Path::new("xunds-.nds")), None);
        assert_eq!(pid_from_name(Path::new("xunds-test-a-42")), None);
        assert_eq!(pid_from_name(Path::new("xunds-4x2.nds")), None);
        assert_eq!(pid_from_name(Path::new("xunds-99999999999.nds")), None);
    }
}
