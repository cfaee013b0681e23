//! `xunds nds`: read a datastore slab, plus hidden helpers the cross-process
//! tests run as a second process.
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
//! - `xunds nds stress-writer PATH [--create] [--seed S] [--ops N] [--live L]`
//!   (hidden): publish, update and delete self-checking records
//!   ([`xunds::nds::stress`]) until killed or for N operations.
//! - `xunds nds add PATH --core C --counter K --times N` (hidden): attach as
//!   a counter writer and add 1 to NC counter (C, K) N times.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use xunds::nds::{
    stress, Counter, NdsError, ReadOnlySlab, Reader, RecordRead, Slab, Snapshot, Writer,
};
use xunds::prng::SplitMix64;
use xunds::wire::nds::counters::NcCounter;
use xunds::wire::nds::header::{self, Header};
use xunds::wire::nds::model::{MemLocation, MemSlot, ModelRecord};
use xunds::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo};
use xunds::wire::nds::{c_str_lossy, region};

use crate::json::Json;

pub fn main(args: &[String]) -> ExitCode {
    let rest = args.get(1..).unwrap_or(&[]);
    match args.first().map(String::as_str) {
        Some("dump") => dump(rest),
        Some("stress-writer") => stress_writer(rest),
        Some("add") => add(rest),
        _ => crate::usage_error("nds: expected `nds dump PATH [--json]`"),
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("xunds: {e}");
    ExitCode::FAILURE
}

/// `--name value` options and positional arguments.
struct Opts<'a> {
    positional: Vec<&'a str>,
    flags: Vec<&'a str>,
    values: Vec<(&'a str, &'a str)>,
}

fn parse_opts<'a>(args: &'a [String], flags: &[&str], valued: &[&str]) -> Result<Opts<'a>, String> {
    let mut o = Opts {
        positional: Vec::new(),
        flags: Vec::new(),
        values: Vec::new(),
    };
    let mut it = args.iter().map(String::as_str);
    while let Some(a) = it.next() {
        if flags.contains(&a) {
            o.flags.push(a);
        } else if valued.contains(&a) {
            let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
            o.values.push((a, v));
        } else if a.starts_with("--") {
            return Err(format!("unknown option {a:?}"));
        } else {
            o.positional.push(a);
        }
    }
    Ok(o)
}

impl Opts<'_> {
    fn num(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.values.iter().rev().find(|(k, _)| *k == name) {
            None => Ok(default),
            Some((_, v)) => v
                .parse()
                .map_err(|_| format!("{name}: not a number: {v:?}")),
        }
    }
    /// [`Opts::num`] for a `u32` option: a value past `u32::MAX` is refused,
    /// not truncated.
    fn num_u32(&self, name: &str, default: u32) -> Result<u32, String> {
        let v = self.num(name, u64::from(default))?;
        u32::try_from(v).map_err(|_| format!("{name}: {v} is out of range (at most {})", u32::MAX))
    }
    fn path(&self, cmd: &str) -> Result<&Path, String> {
        match self.positional.as_slice() {
            [p] => Ok(Path::new(p)),
            _ => Err(format!("{cmd}: expected exactly one PATH")),
        }
    }
}

// ---- dump ----

fn dump(args: &[String]) -> ExitCode {
    let o = match parse_opts(args, &["--json"], &[]) {
        Ok(o) => o,
        Err(e) => return crate::usage_error(&format!("nds dump: {e}")),
    };
    let path = match o.path("nds dump") {
        Ok(p) => p,
        Err(e) => return crate::usage_error(&e),
    };
    let json = o.flags.contains(&"--json");
    let slab = match ReadOnlySlab::open(path) {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", path.display())),
    };
    // The header word as found, for the report even when attach refuses.
    // Ordering: Acquire, partner: the writer's Release header commit in
    // `Writer::new` (seed 004 §2); the reader re-checks it anyway.
    let word = slab.load_u64(region::HEADER_OFF, Ordering::Acquire);
    let reader = match Reader::attach(slab) {
        Ok(r) => r,
        Err(e) => {
            if json {
                println!("{}", Json::obj().with("header", header_json(word)).render());
            } else {
                print!("{}", header_text(word));
            }
            return fail(format!("{}: {e}", path.display()));
        }
    };
    let snap = match reader.snapshot() {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", path.display())),
    };
    if json {
        println!("{}", snapshot_json(word, &snap).render());
    } else {
        print!("{}", snapshot_text(path, word, &snap));
    }
    ExitCode::SUCCESS
}

fn header_json(word: u64) -> Json {
    let h = Header::from_word(word);
    Json::obj()
        .with("magic_ok", h.magic == header::MAGIC)
        .with("version", h.version)
}

fn version_json(v: &VersionInfo) -> Json {
    Json::obj()
        .with("major", v.major)
        .with("minor", v.minor)
        .with("build", v.build)
}

fn process_info_json(p: &RecordRead<ProcessInfo>) -> Json {
    let d = ProcessInfo::default();
    let r = p.any_copy().unwrap_or(&d);
    Json::obj()
        .with("state", p.state_name())
        .with("framework_type", r.framework_type)
        .with("tag", r.tag_str().into_owned())
        .with("framework_version", version_json(&r.framework_version))
        .with("fal_version", version_json(&r.fal_version))
        .with("runtime_version", version_json(&r.runtime_version))
}

fn process_info_ext_json(p: &RecordRead<ProcessInfoExt>) -> Json {
    // Only a fresh tag is printed as a value; anything else is null (a torn
    // copy is never shown as good).
    let tag = match p {
        RecordRead::Fresh(r) => Json::Str(r.tag_str().into_owned()),
        _ => Json::Null,
    };
    Json::obj().with("tag", tag)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mem_usage_json(r: &ModelRecord) -> Json {
    let mut out = Json::obj();
    for loc in MemLocation::ALL {
        let mut entries = Json::obj();
        for slot in MemSlot::ALL {
            let u = r.usage(*loc, *slot);
            if u.total_size != 0 || u.chunk_count != 0 {
                entries.push(
                    slot.name(),
                    Json::obj()
                        .with("total_size", u.total_size)
                        .with("chunk_count", u.chunk_count),
                );
            }
        }
        out.push(&loc.name().to_ascii_lowercase(), entries);
    }
    out
}

fn model_json(slot: usize, m: &RecordRead<ModelRecord>) -> Json {
    let empty = ModelRecord::EMPTY;
    let r = m.any_copy().unwrap_or(&empty);
    Json::obj()
        .with("slot", slot)
        .with("model_id", r.model_id)
        .with("model_node_id", r.model_node_id)
        .with("name", r.name_str().into_owned())
        .with("uuid", hex(&r.uuid))
        .with("nc_index", r.nc_index)
        .with("sg_index", r.sg_index)
        .with("state", m.state_name())
        .with("mem_usage", mem_usage_json(r))
}

/// (name, slab offset, value) of every non-zero ND counter, in index order.
fn nd_nonzero(s: &Snapshot) -> Vec<(String, usize, u64)> {
    s.nd.iter()
        .enumerate()
        .filter(|(_, v)| **v != 0)
        .filter_map(|(i, v)| {
            Counter::nd_index(i as u32)
                .ok()
                .map(|c| (c.name().to_string(), c.offset(), *v))
        })
        .collect()
}

/// Per core with any non-zero counter: (core, [(name, slab offset, value)]).
#[allow(clippy::type_complexity)]
fn nc_nonzero(s: &Snapshot) -> Vec<(usize, Vec<(String, usize, u64)>)> {
    let mut out = Vec::new();
    for (core, row) in s.nc.iter().enumerate() {
        let vals: Vec<(String, usize, u64)> = row
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0)
            .filter_map(|(i, v)| {
                Counter::nc_index(core as u32, i as u32)
                    .ok()
                    .map(|c| (c.name().to_string(), c.offset(), *v))
            })
            .collect();
        if !vals.is_empty() {
            out.push((core, vals));
        }
    }
    out
}

fn snapshot_json(word: u64, s: &Snapshot) -> Json {
    let mut nd = Json::obj();
    for (name, _, v) in nd_nonzero(s) {
        nd.push(&name, v);
    }
    let mut cores = Json::obj();
    for (core, vals) in nc_nonzero(s) {
        let mut c = Json::obj();
        for (name, _, v) in vals {
            c.push(&name, v);
        }
        cores.push(&core.to_string(), c);
    }
    let models: Vec<Json> = s
        .models
        .iter()
        .map(|(slot, m)| model_json(slot.index(), m))
        .collect();
    Json::obj()
        .with("header", header_json(word))
        .with("process_info", process_info_json(&s.process_info))
        .with(
            "process_info_ext",
            process_info_ext_json(&s.process_info_ext),
        )
        .with("nd_counters", nd)
        .with("cores", cores)
        .with("models", models)
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
        RecordRead::Fresh(_) => "fresh".into(),
        RecordRead::Unpublished => "unpublished".into(),
        RecordRead::Torn(s) => format!("torn ({:?}); stale copy shown", s.reason),
    }
}

fn snapshot_text(path: &Path, word: u64, s: &Snapshot) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "nds slab {}", path.display());
    out.push_str(&header_text(word));

    let _ = writeln!(
        out,
        "\nprocess_info: {}",
        record_state_text(&s.process_info)
    );
    if let Some(p) = s.process_info.any_copy() {
        let _ = writeln!(
            out,
            "  framework_type {}  tag {:?}  framework {}  fal {}  runtime {}",
            p.framework_type,
            p.tag_str(),
            version_text(&p.framework_version),
            version_text(&p.fal_version),
            version_text(&p.runtime_version)
        );
        out.push_str(&indent(&p.dump()));
    }
    let _ = writeln!(
        out,
        "\nprocess_info_ext: {}",
        record_state_text(&s.process_info_ext)
    );
    if let Some(p) = s.process_info_ext.any_copy() {
        let _ = writeln!(out, "  tag {:?}", p.tag_str());
    }

    let _ = writeln!(out, "\nnd_counters (non-zero):");
    for (name, off, v) in nd_nonzero(s) {
        let _ = writeln!(out, "  +{off:#07x} {name:<32} {v}");
    }
    for (core, vals) in nc_nonzero(s) {
        let _ = writeln!(out, "core {core} (non-zero):");
        for (name, off, v) in vals {
            let _ = writeln!(out, "  +{off:#07x} {name:<32} {v}");
        }
    }

    let _ = writeln!(out, "\nmodels (bitmap {:#018x}):", s.model_bitmap);
    for (slot, m) in &s.models {
        let _ = writeln!(out, "slot {slot}: {}", record_state_text(m));
        if let Some(r) = m.any_copy() {
            let _ = writeln!(
                out,
                "  model_id {}  model_node_id {}  name {:?}  uuid {}  nc_index {}  sg_index {}",
                r.model_id,
                r.model_node_id,
                c_str_lossy(&r.name),
                hex(&r.uuid),
                r.nc_index,
                r.sg_index
            );
            for loc in MemLocation::ALL {
                for ms in MemSlot::ALL {
                    let u = r.usage(*loc, *ms);
                    if u.total_size != 0 || u.chunk_count != 0 {
                        let _ = writeln!(
                            out,
                            "  mem_usage {} {}: total_size {} chunk_count {}",
                            loc.name(),
                            ms.name(),
                            u.total_size,
                            u.chunk_count
                        );
                    }
                }
            }
            out.push_str(&indent(&r.dump()));
        }
    }
    out
}

// ---- hidden helpers for the cross-process tests ----

fn stress_writer(args: &[String]) -> ExitCode {
    let run = || -> Result<(), String> {
        let o = parse_opts(args, &["--create"], &["--seed", "--ops", "--live"])?;
        let path = o.path("nds stress-writer")?;
        let seed = o.num("--seed", 1)?;
        let ops = o.num("--ops", 0)?;
        let live = o.num_u32("--live", 6)?;
        let w = if o.flags.contains(&"--create") {
            Writer::create(path)
        } else {
            xunds::nds::MappedSlab::open(path).and_then(Writer::attach)
        }
        .map_err(|e: NdsError| e.to_string())?;
        // Tell the parent the slab is committed and records are flowing.
        println!("ready");
        let _ = std::io::stdout().flush();
        let mut rng = SplitMix64::new(seed);
        // Versions start from the seed's low bits (any value is fine: the
        // records are self-checking for whatever version they carry).
        let mut next = (seed as u32).wrapping_mul(1 << 20);
        let mut done = 0u64;
        while ops == 0 || done < ops {
            stress::step(&w, &mut rng, &mut next, live).map_err(|e| e.to_string())?;
            done += 1;
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("nds stress-writer: {e}")),
    }
}

fn add(args: &[String]) -> ExitCode {
    let run = || -> Result<(), String> {
        let o = parse_opts(args, &[], &["--core", "--counter", "--times"])?;
        let path = o.path("nds add")?;
        let core = o.num_u32("--core", 0)?;
        let counter = o.num_u32("--counter", NcCounter::InferCompleted.index())?;
        let times = o.num("--times", 1)?;
        let c = Counter::nc_index(core, counter).map_err(|e| e.to_string())?;
        // A counter co-writer: atomic adds only, so no writer's lock.
        let w = xunds::nds::MappedSlab::open_unlocked(path)
            .and_then(Writer::attach)
            .map_err(|e| e.to_string())?;
        for _ in 0..times {
            w.add(c, 1).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("nds add: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let args: Vec<String> = ["p", "--ops", "5", "--create"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = parse_opts(&args, &["--create"], &["--ops"]).unwrap();
        assert_eq!(o.path("x").unwrap(), Path::new("p"));
        assert_eq!(o.num("--ops", 0).unwrap(), 5);
        assert_eq!(o.num("--seed", 9).unwrap(), 9);
        assert!(o.flags.contains(&"--create"));
        assert!(parse_opts(&args, &[], &["--ops"]).is_err());
    }

    #[test]
    fn u32_options_are_range_checked_not_truncated() {
        let args: Vec<String> = ["p", "--core", "4294967296", "--counter", "7"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = parse_opts(&args, &[], &["--core", "--counter"]).unwrap();
        // 2^32 used to become core 0 (`as u32`), silently.
        let e = o.num_u32("--core", 0).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        assert_eq!(o.num_u32("--counter", 1), Ok(7));
        assert_eq!(o.num_u32("--live", 6), Ok(6));
    }

    #[test]
    fn header_json_shape() {
        assert_eq!(
            header_json(header::HEADER_PROTO).render(),
            r#"{"magic_ok":true,"version":100000}"#
        );
        assert_eq!(header_json(0).render(), r#"{"magic_ok":false,"version":0}"#);
    }
}
