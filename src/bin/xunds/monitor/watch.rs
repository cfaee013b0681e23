//! One watched slab: finding it, attaching read-only, re-checking the file
//! before every read, and knowing which process writes it.
//!
//! Everything here reads the slab only through [`Reader`] (a `PROT_READ`
//! mapping with the header gate and the record hash protocol). What can go
//! wrong with the file is checked before each read and reported as a string
//! for the runtime's `error`, never as a panic:
//!
//! - not there (yet): `cannot open ...: No such file or directory`;
//! - not a slab, too short, header zero (mid-commit), bad magic or version:
//!   the reader's own refusal, retried next period;
//! - released (header back to zero) during a read: `slab detached`;
//! - truncated while watched: the length is taken with `fstat` on our own
//!   descriptor of the same inode before every read, and a short file is
//!   dropped before its mapping is touched;
//! - deleted while watched: the mapping (and so the inode) stays valid, so
//!   the last values are still read and the error says the file is gone;
//! - replaced (another inode at the path): re-attached.

use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use xunds::nds::index::{CORES, NC_COUNTERS, ND_COUNTERS};
use xunds::nds::{ReadOnlySlab, Reader, RecordRead, Snapshot, REQUIRED_SIZE};
use xunds::wire::nds::counters::NcCounter;

use super::sys;

/// The cumulative counter words of one slab at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counters {
    /// The ND counters.
    pub nd: [u64; ND_COUNTERS],
    /// Per core, its NC counters.
    pub nc: [[u64; NC_COUNTERS]; CORES],
}

impl Counters {
    /// All zero: the baseline of a runtime's first report.
    pub fn zero() -> Counters {
        Counters {
            nd: [0; ND_COUNTERS],
            nc: [[0; NC_COUNTERS]; CORES],
        }
    }

    /// Core `core`'s counter `c`.
    pub fn nc(&self, core: usize, c: NcCounter) -> u64 {
        self.nc[core][c as usize]
    }

    /// Counter `c` summed over every core.
    pub fn sum(&self, c: NcCounter) -> u64 {
        (0..CORES).fold(0u64, |a, core| a.wrapping_add(self.nc(core, c)))
    }

    /// `true` when any counter word is below `earlier`'s: the slab was
    /// re-created under us and the monotone counters restarted.
    pub fn went_back(&self, earlier: &Counters) -> bool {
        // Only the monotone outcome counters are compared (memory gauges go
        // down on unload).
        (0..CORES).any(|core| {
            MONOTONE
                .iter()
                .any(|c| self.nc(core, *c) < earlier.nc(core, *c))
        })
    }

    /// Cores with any non-zero counter: the cores this runtime uses.
    pub fn cores_in_use(&self) -> impl Iterator<Item = usize> + '_ {
        (0..CORES).filter(|c| self.nc[*c].iter().any(|v| *v != 0))
    }
}

/// Counters that only ever grow while a slab lives.
const MONOTONE: [NcCounter; 5] = [
    NcCounter::InferenceCount,
    NcCounter::InferCompleted,
    NcCounter::InferCompletedWithErr,
    NcCounter::LatencyTotal,
    NcCounter::MacCount,
];

/// A successful read of one slab.
#[derive(Clone, Debug)]
pub struct Sample {
    /// When it was taken.
    pub at: Instant,
    /// The counter words.
    pub counters: Counters,
    /// The records and counters as the reader returned them.
    pub snap: Snapshot,
}

/// Attached state: the mapping and our own descriptor of the same inode.
struct Attached {
    reader: Reader,
    file: File,
    dev: u64,
    ino: u64,
}

/// The process that writes a slab: the holder of its writer lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Not known (no pid in the file name, no writer holds the lock).
    Unknown,
    /// Running, with its start instant (for the first period).
    Alive { pid: u32 },
    /// Was running (or named by the file) and is gone now.
    Exited { pid: u32 },
}

impl Owner {
    /// The pid, 0 when unknown (neuron-monitor's `pid` field).
    pub fn pid(&self) -> u32 {
        match self {
            Owner::Unknown => 0,
            Owner::Alive { pid } | Owner::Exited { pid } => *pid,
        }
    }
}

/// One watched slab path.
///
/// Every [`Watch::sample`] may change the attachment and the owner, and
/// more than one caller samples (the monitor's periods and its Prometheus
/// scrapes). So the transitions a caller acts on are counted here, where
/// they happen, never inferred from the state before and after one's own
/// call: a caller keeps the [`Watch::generation`] and [`Watch::exits`] it
/// last acted on and compares them with the current ones, and sees every
/// re-attach and every exit whoever's sample found it.
pub struct Watch {
    path: PathBuf,
    attached: Option<Attached>,
    owner: Owner,
    generation: u64,
    attaches: u64,
    exits: u64,
}

impl Watch {
    /// Watch `path` (nothing is opened yet).
    pub fn new(path: PathBuf) -> Watch {
        Watch {
            path,
            attached: None,
            owner: Owner::Unknown,
            generation: 0,
            attaches: 0,
            exits: 0,
        }
    }

    /// The slab's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The writing process.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// Grows each time the slab became a new instance whose counters start
    /// afresh: re-attached after a detach (released, truncated, replaced).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Grows each time the owner became [`Owner::Exited`] (from alive, from
    /// unknown, or anew after a re-attach).
    pub fn exits(&self) -> u64 {
        self.exits
    }

    /// The only place the owner changes, so that no exit goes uncounted.
    fn set_owner(&mut self, owner: Owner) {
        let was_exited = matches!(self.owner, Owner::Exited { .. });
        if !was_exited && matches!(owner, Owner::Exited { .. }) {
            self.exits += 1;
        }
        self.owner = owner;
    }

    /// Read the slab now. `Ok` carries the sample and a non-fatal note
    /// (e.g. the file was deleted but its mapping is still read); `Err` says
    /// why nothing could be read.
    pub fn sample(&mut self) -> Result<(Sample, Option<String>), String> {
        let mut note = None;
        match std::fs::metadata(&self.path) {
            Ok(m) => {
                let same = self
                    .attached
                    .as_ref()
                    .is_some_and(|a| a.dev == m.dev() && a.ino == m.ino());
                if !same && self.attached.take().is_some() {
                    note = Some(format!(
                        "{}: replaced by another file; re-attached",
                        self.path.display()
                    ));
                    self.set_owner(Owner::Unknown);
                }
            }
            Err(e) => {
                if self.attached.is_none() {
                    return Err(format!("cannot open {}: {e}", self.path.display()));
                }
                note = Some(format!(
                    "{}: slab file deleted while watched; reading its last mapping",
                    self.path.display()
                ));
            }
        }
        if self.attached.is_none() {
            self.attached = Some(attach(&self.path)?);
            // A slab that was detached (released, truncated, replaced) and
            // is committed again is a new instance: its counters start at
            // zero.
            if self.attaches > 0 {
                self.generation += 1;
            }
            self.attaches += 1;
        }
        let a = self.attached.as_ref().expect("attached above");
        // Truncation check on our own descriptor: a mapping past the end of
        // its file faults (SIGBUS) on access, so a short file is dropped
        // before the mapping is read.
        let len = match a.file.metadata() {
            Ok(m) => m.len(),
            Err(e) => {
                self.attached = None;
                return Err(format!("{}: fstat: {e}", self.path.display()));
            }
        };
        if len < REQUIRED_SIZE as u64 {
            self.attached = None;
            return Err(format!(
                "{}: slab truncated to {len} bytes while watched (needs {REQUIRED_SIZE})",
                self.path.display()
            ));
        }
        let snap = match a.reader.snapshot() {
            Ok(s) => s,
            Err(e) => {
                // Released or gone bad: attach afresh next time.
                self.attached = None;
                return Err(format!("{}: {e}", self.path.display()));
            }
        };
        self.refresh_owner();
        let counters = Counters {
            nd: snap.nd,
            nc: snap.nc,
        };
        Ok((
            Sample {
                at: Instant::now(),
                counters,
                snap,
            },
            note,
        ))
    }

    /// Find or re-check the writing process: the holder of the exclusive
    /// lock every writer keeps on its slab for its life
    /// ([`xunds::hal::mem::lock_holder`]). A writer seen before whose lock is
    /// free has exited; with none seen, the pid in a default slab name
    /// (`xunds-<pid>.nds`) names a writer that has exited. A new writer on
    /// the same path takes over (its counters restarting is seen by the
    /// engine, not here).
    fn refresh_owner(&mut self) {
        let Some(a) = self.attached.as_ref() else {
            return;
        };
        let owner = match (xunds::hal::mem::lock_holder(&a.file), self.owner) {
            (Some(pid), _) => Owner::Alive { pid },
            (None, Owner::Alive { pid } | Owner::Exited { pid }) => Owner::Exited { pid },
            (None, Owner::Unknown) => match pid_from_name(&self.path) {
                Some(pid) => Owner::Exited { pid },
                None => Owner::Unknown,
            },
        };
        self.set_owner(owner);
    }

    /// When the runtime started: the process's start time, else the slab
    /// file's modification time, else now.
    pub fn started(&self) -> Instant {
        let since = match self.owner {
            Owner::Alive { pid } => sys::process_age(pid),
            _ => None,
        }
        .or_else(|| {
            let m = std::fs::metadata(&self.path).ok()?;
            let t = m.created().or_else(|_| m.modified()).ok()?;
            SystemTime::now().duration_since(t).ok()
        })
        .unwrap_or_default();
        Instant::now()
            .checked_sub(since)
            .unwrap_or_else(Instant::now)
    }
}

fn attach(path: &Path) -> Result<Attached, String> {
    // One open (non-blocking, regular files only: a FIFO left in the
    // directory would otherwise block the open for good), mapped and kept:
    // the checks before each read look at the mapped file.
    let (slab, file) =
        ReadOnlySlab::open_with_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let m = file
        .metadata()
        .map_err(|e| format!("{}: fstat: {e}", path.display()))?;
    let reader = Reader::attach(slab).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Attached {
        reader,
        file,
        dev: m.dev(),
        ino: m.ino(),
    })
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
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| pid_from_name(p).is_some())
        .collect();
    out.sort();
    Ok(out)
}

/// A record's state as a group error ("" when fresh or unpublished).
pub fn record_error<R>(what: &str, r: &RecordRead<R>) -> Option<String> {
    match r {
        RecordRead::Torn(s) => Some(format!("{what}: torn record ({:?}), not used", s.reason)),
        _ => None,
    }
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

    #[test]
    fn counters_sum_and_go_back() {
        let mut a = Counters::zero();
        a.nc[3][NcCounter::InferCompleted as usize] = 5;
        a.nc[0][NcCounter::InferCompleted as usize] = 2;
        assert_eq!(a.sum(NcCounter::InferCompleted), 7);
        assert_eq!(a.cores_in_use().collect::<Vec<_>>(), vec![0, 3]);
        let z = Counters::zero();
        assert!(z.went_back(&a));
        assert!(!a.went_back(&z));
    }
}
