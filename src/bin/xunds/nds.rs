//! `xunds nds`: read a datastore slab, and clean up the slabs of ended runs.
//!
//! - `xunds nds dump PATH [--json]`: attach read-only (`PROT_READ`) to any
//!   slab a conforming writer produced and print the header, process info,
//!   the non-zero counters per core by name and the model records with their
//!   hash state. The text form is annotated hex plus decoded fields; `--json`
//!   prints one document:
//!   `{"header":{"magic_ok","version"},"process_info":{..},
//!   "process_info_ext":{"tag"},"nd_counters":{"NAME":n},
//!   "cores":{"0":{"NAME":n}},"models":[{"slot","model_id","model_node_id",
//!   "name","uuid","nc_index","sg_index","state","mem_usage":{"host":{..},
//!   "device":{..}}}]}` with only non-zero counters and mem-usage entries.
//! - `xunds nds clean [--dir DIR] [--dry-run]`: remove the `xunds-<pid>.nds`
//!   slabs in DIR (default `/dev/shm`) whose writer has exited.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use indexmap::IndexMap;
use serde::Serialize;
use xunds::nds::{Counter, NdsError, ReadOnlySlab, Reader, RecordRead, Slab, Snapshot};
use xunds::wire::nds::header::{self, Header};
use xunds::wire::nds::model::{MemLocation, MemSlot, MemUsageInfo, ModelRecord};
use xunds::wire::nds::process::VersionInfo;
use xunds::wire::nds::region;

/// Read a datastore slab.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Read a datastore slab (read-only) and print it.
    ///
    /// Attaches read-only to any slab a conforming writer produced and prints
    /// the header, process info, the non-zero counters per core by name and
    /// the model records with their hash state, as annotated hex plus decoded
    /// fields, or with --json as one document.
    Dump {
        /// The slab file.
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// Print one JSON document (the module docs give its shape).
        #[arg(long)]
        json: bool,
    },
    /// Remove the slabs runs left behind: every `xunds-<pid>.nds` in DIR
    /// whose writer has exited.
    ///
    /// `xunds run` leaves its slab for `xunds nds dump`, and on /dev/shm
    /// that holds memory until someone removes it. A file is removed only
    /// when the pid in its name is not running, it is a regular file, no
    /// writer holds its writer's lock (every writer holds that lock for its
    /// life; the kernel drops it when the writer dies) and it is a slab
    /// (exactly 262,144 bytes, its header committed or zero). A shared lock,
    /// which keeps writers out without being one (a run starting meanwhile
    /// waits), is held while the file is unlinked. Prints one line per file,
    /// then the counts; exit 1 when a removal fails.
    Clean(CleanArgs),
}

#[derive(clap::Args)]
pub struct CleanArgs {
    /// The directory [default: /dev/shm, where `xunds run` puts its
    /// slab].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Hold each lock this long before the unlink (tests: a run that
    /// starts meanwhile).
    #[arg(long, value_name = "MS", default_value_t = 0, hide = true)]
    hold_ms: u64,
}

pub fn main(c: Command) -> ExitCode {
    let at = |p: &Path, e: NdsError| format!("{}: {e}", p.display());
    let (command, r) = match c {
        Command::Dump { path, json } => ("dump", dump(&path, json).map_err(|e| at(&path, e))),
        Command::Clean(a) => ("clean", clean(a)),
    };
    // A failure while running: one line `xunds nds <command>: <what>`, exit 1.
    r.map_or_else(
        |e| crate::fail(1, &format!("xunds nds {command}"), e),
        |()| ExitCode::SUCCESS,
    )
}

fn dump(path: &Path, json: bool) -> Result<(), NdsError> {
    let slab = ReadOnlySlab::open(path)?;
    // The header word as found, for the report even when attach refuses.
    // Ordering: Acquire, partner: the writer's Release header commit in
    // `Writer::new` (docs/abi.md §2.3); the reader re-checks it anyway.
    let word = slab.load_u64(region::HEADER_OFF, Ordering::Acquire);
    let reader = Reader::attach(slab).inspect_err(|_| match json {
        true => crate::print_json(&obj! { header: header_json(word) }),
        false => print!("{}", header_text(word)),
    })?;
    let snap = reader.snapshot()?;
    match json {
        true => crate::print_json(&snapshot_json(word, &snap)),
        false => print!("{}", snapshot_text(path, word, &snap)),
    }
    Ok(())
}

fn clean(a: CleanArgs) -> Result<(), String> {
    let dir = a.dir.unwrap_or_else(crate::monitor::default_dir);
    let paths = crate::monitor::discover(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (mut removed, mut kept, mut failed) = (0u32, 0u32, 0u32);
    let (did, verb) = match a.dry_run {
        true => ("would remove", "would be removed"),
        false => ("removed", "removed"),
    };
    for path in paths {
        let shown = path.display();
        let locked = match left_behind(&path) {
            Ok(f) => f,
            Err(why) => {
                kept += 1;
                println!("kept {shown}: {why}");
                continue;
            }
        };
        std::thread::sleep(std::time::Duration::from_millis(a.hold_ms));
        let removal = match a.dry_run {
            true => Ok(()),
            false => std::fs::remove_file(&path),
        };
        match removal {
            Ok(()) => {
                removed += 1;
                println!("{did} {shown}");
            }
            // Another clean, holding the same shared lock, was first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                kept += 1;
                println!("kept {shown}: removed meanwhile");
            }
            Err(e) => {
                failed += 1;
                println!("not removed {shown}: {e}");
            }
        }
        // The lock goes with the descriptor, after the unlink.
        drop(locked);
    }
    println!("{removed} {verb}, {kept} kept");
    if failed > 0 {
        return Err(format!("{failed} could not be removed"));
    }
    Ok(())
}

/// How many ended runs' default-named slabs a run leaves in place when it
/// starts (for `xunds nds dump` and `xunds monitor --once` after a run).
const KEEP_ENDED: usize = 8;

/// Remove the default-named slabs of ended runs in the default directory
/// (the test of [`left_behind`]: pid not running, writer's lock free, a
/// slab) but the [`KEEP_ENDED`] most recently modified: what every `xunds
/// run` without `--slab` does before it creates its own, so ended runs'
/// slabs do not pile up in `/dev/shm` (at most [`KEEP_ENDED`] stay, 256 KiB
/// each). Quiet: a slab that cannot be removed stays for `xunds nds clean`
/// to report.
pub fn prune_left_behind() {
    let Ok(paths) = crate::monitor::discover(&crate::monitor::default_dir()) else {
        return;
    };
    let mut ended: Vec<_> = paths
        .into_iter()
        .filter_map(|p| {
            let f = left_behind(&p).ok()?;
            let at = f.metadata().and_then(|m| m.modified()).ok()?;
            Some((at, p, f))
        })
        .collect();
    ended.sort_by_key(|e| std::cmp::Reverse(e.0));
    for (_, path, locked) in ended.into_iter().skip(KEEP_ENDED) {
        let _ = std::fs::remove_file(&path);
        // The lock goes with the descriptor, after the unlink.
        drop(locked);
    }
}

/// The slab file at `path` (a default name, `xunds-<pid>.nds`), open with a
/// remover's lock held, when the run that wrote it is over; else why it
/// stays. Over means: the pid in the name is not running (a live process
/// keeps the files named for it), no writer holds the writer's lock (every
/// writer holds it for its life; the kernel drops it when the writer dies),
/// the path still names the file locked (not replaced or removed
/// meanwhile), and the file is a slab ([`xunds::nds::is_slab_file`]).
/// Symbolic links and other non-files stay.
///
/// The lock is a shared one ([`xunds::hal::mem::lock_shared`]): it keeps
/// writers out until the unlink, and a run that starts on the path
/// meanwhile waits it out instead of taking this process for another
/// writer.
fn left_behind(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(pid) = crate::monitor::pid_from_name(path) {
        if Path::new("/proc").join(pid.to_string()).exists() {
            return Err(format!("process {pid} is running"));
        }
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    if let Err(e) = xunds::hal::mem::lock_shared(&file) {
        return Err(match xunds::hal::mem::lock_holder(&file) {
            // 0: a holder in another pid namespace.
            Some(pid) if pid != 0 => format!("process {pid} writes it"),
            _ if e.kind() == std::io::ErrorKind::WouldBlock => "a live process writes it".into(),
            _ => format!("its lock: {e}"),
        });
    }
    // The file as locked, and what the path names now.
    let m = file.metadata().map_err(|e| e.to_string())?;
    if !m.file_type().is_file() {
        return Err("not a regular file".into());
    }
    if !xunds::hal::mem::path_names(path, &m, false).map_err(|e| e.to_string())? {
        return Err("replaced while it was looked at".into());
    }
    if !xunds::nds::is_slab_file(&file, m.len()) {
        let len = m.len();
        return Err(format!(
            "not a slab ({len} bytes, or its header is not a slab's)"
        ));
    }
    Ok(file)
}

fn header_json(word: u64) -> impl Serialize {
    let h = Header::from_word(word);
    obj! { magic_ok: h.magic == header::MAGIC, version: h.version }
}

fn version_json(v: &VersionInfo) -> impl Serialize {
    obj! { major: v.major, minor: v.minor, build: v.build }
}

/// Every non-zero counter word in index order, ND first: (core, name, slab
/// offset, value), `None` for an ND counter.
fn nonzero(s: &Snapshot) -> Vec<(Option<usize>, String, usize, u64)> {
    let nd = s.counters.nd.iter().enumerate();
    let nd = nd.map(|(i, v)| (None, Counter::nd_index(i as u32), v));
    let nc = s.counters.nc.iter().enumerate().flat_map(|(core, row)| {
        let counter = move |i| Counter::nc_index(core as u32, i as u32);
        row.iter()
            .enumerate()
            .map(move |(i, v)| (Some(core), counter(i), v))
    });
    nd.chain(nc)
        .filter(|(_, _, v)| **v != 0)
        .filter_map(|(core, c, v)| {
            let c = c.ok()?;
            Some((core, c.name().to_string(), c.offset(), *v))
        })
        .collect()
}

/// The non-zero mem-usage cells of a model record: (location, slot, cell).
fn mem_usage(r: &ModelRecord) -> impl Iterator<Item = (MemLocation, MemSlot, MemUsageInfo)> + '_ {
    MemLocation::ALL.into_iter().flat_map(move |loc| {
        MemSlot::ALL
            .into_iter()
            .map(move |slot| (loc, slot, r.usage(loc, slot)))
            .filter(|(_, _, u)| u.total_size != 0 || u.chunk_count != 0)
    })
}

/// The `--json` document (keys in this order; counters in index order).
fn snapshot_json(word: u64, s: &Snapshot) -> impl Serialize + '_ {
    let p = s.process_info.any_copy().copied().unwrap_or_default();
    let counters = nonzero(s);
    let by_core = |core: Option<usize>| -> IndexMap<String, u64> {
        let mine = counters.iter().filter(|c| c.0 == core);
        mine.map(|(_, name, _, v)| (name.clone(), *v)).collect()
    };
    let in_use = s.counters.cores_in_use();
    let cores = in_use.map(|c| (c.to_string(), by_core(Some(c))));
    let models = s.models.iter().map(|(slot, m)| {
        let r = m.any_copy().unwrap_or(&ModelRecord::EMPTY);
        let mem = MemLocation::ALL.map(|loc| {
            let cells = mem_usage(r).filter(|c| c.0 == loc).map(|(_, slot, u)| {
                let cell = obj! { total_size: u.total_size, chunk_count: u.chunk_count };
                (slot.name(), cell)
            });
            let cells: IndexMap<_, _> = cells.collect();
            (loc.name().to_ascii_lowercase(), cells)
        });
        obj! {
            slot: slot.index(),
            model_id: r.model_id,
            model_node_id: r.model_node_id,
            name: r.name_str().into_owned(),
            uuid: crate::hex(&r.uuid),
            nc_index: r.nc_index,
            sg_index: r.sg_index,
            state: m.state_name(),
            mem_usage: mem.into_iter().collect::<IndexMap<_, _>>(),
        }
    });
    obj! {
        header: header_json(word),
        process_info: obj! {
            state: s.process_info.state_name(),
            framework_type: p.framework_type,
            tag: p.tag_str().into_owned(),
            framework_version: version_json(&p.framework_version),
            fal_version: version_json(&p.fal_version),
            runtime_version: version_json(&p.runtime_version),
        },
        // Only a fresh tag is a value: a torn copy is never shown as good.
        process_info_ext: obj! {
            tag: s.process_info_ext.clone().fresh().map(|r| r.tag_str().into_owned())
        },
        nd_counters: by_core(None),
        cores: cores.collect::<IndexMap<_, _>>(),
        models: models.collect::<Vec<_>>(),
    }
}

fn header_text(word: u64) -> String {
    let h = Header::from_word(word);
    let state = match header::check(word) {
        header::HeaderState::Committed => "committed".to_string(),
        header::HeaderState::Zero => "zero (not committed or released)".to_string(),
        header::HeaderState::BadMagic => "bad magic".to_string(),
        header::HeaderState::BadVersion { version } => format!("bad version {version}"),
    };
    format!("header: {state}\n{}", indent(&h.dump()))
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

fn version_text(v: &VersionInfo) -> String {
    format!("{}.{}.{}", v.major, v.minor, v.build)
}

fn record_state_text<R>(r: &RecordRead<R>) -> String {
    match r {
        RecordRead::Torn(s) => format!("torn ({:?}); stale copy shown", s.reason),
        _ => r.state_name().into(),
    }
}

fn snapshot_text(path: &Path, word: u64, s: &Snapshot) -> String {
    use std::fmt::Write as _;
    let mut out = format!("nds slab {}\n{}", path.display(), header_text(word));
    let state = record_state_text(&s.process_info);
    let _ = writeln!(out, "\nprocess_info: {state}");
    if let Some(p) = s.process_info.any_copy() {
        let (ty, tag) = (p.framework_type, p.tag_str());
        let versions = [&p.framework_version, &p.fal_version, &p.runtime_version];
        let [fw, fal, rt] = versions.map(version_text);
        let line = format!("framework {fw}  fal {fal}  runtime {rt}");
        let _ = writeln!(out, "  framework_type {ty}  tag {tag:?}  {line}");
        out.push_str(&indent(&p.dump()));
    }
    let ext = &s.process_info_ext;
    let _ = writeln!(out, "\nprocess_info_ext: {}", record_state_text(ext));
    if let Some(p) = ext.any_copy() {
        let _ = writeln!(out, "  tag {:?}", p.tag_str());
    }
    let _ = writeln!(out, "\nnd_counters (non-zero):");
    let mut core = None;
    for (c, name, off, v) in nonzero(s) {
        if c != core {
            core = c;
            let _ = writeln!(out, "core {} (non-zero):", c.unwrap_or_default());
        }
        let _ = writeln!(out, "  +{off:#07x} {name:<32} {v}");
    }
    let _ = writeln!(out, "\nmodels (bitmap {:#018x}):", s.model_bitmap);
    for (slot, m) in &s.models {
        let _ = writeln!(out, "slot {slot}: {}", record_state_text(m));
        if let Some(r) = m.any_copy() {
            let (id, node, name) = (r.model_id, r.model_node_id, r.name_str());
            let (uuid, nc, sg) = (crate::hex(&r.uuid), r.nc_index, r.sg_index);
            let ids = format!("model_id {id}  model_node_id {node}  name {name:?}");
            let _ = writeln!(out, "  {ids}  uuid {uuid}  nc_index {nc}  sg_index {sg}");
            for (loc, ms, u) in mem_usage(r) {
                let (l, m, t, c) = (loc.name(), ms.name(), u.total_size, u.chunk_count);
                let _ = writeln!(out, "  mem_usage {l} {m}: total_size {t} chunk_count {c}");
            }
            out.push_str(&indent(&r.dump()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_json_shape() {
        let json = |w| serde_json::to_string(&header_json(w)).unwrap();
        assert_eq!(
            json(header::HEADER_PROTO),
            r#"{"magic_ok":true,"version":100000}"#
        );
        assert_eq!(json(0), r#"{"magic_ok":false,"version":0}"#);
    }
}
