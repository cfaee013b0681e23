//! The second process of the cross-process tests, and its self-checking
//! records.
//!
//! [`model`] builds the model record for version `v`: every byte of it is a
//! function of `v` (which is also its `model_id`), so any copy that mixes two
//! versions fails [`is_consistent`]. A stress writer (another process, see
//! [`super::writer`]) publishes, updates and deletes such records as fast as
//! it can; a reader in the test process checks that every record it gets
//! back as [`Fresh`](xunds::nds::RecordRead::Fresh) is consistent. The check
//! does not use the FNV hash, so it also catches a torn copy whose hash
//! happened to match.
//!
//! The writer is this test binary run again as its one ignored test,
//! `nds_support::nds_writer_process`, its job in the environment: the
//! shipped `xunds` carries no test hooks.

use std::io::Write as _;
use std::path::Path;

use xunds::prng::SplitMix64;
use xunds::wire::nds::model::{
    MemUsageInfo, ModelRecord, MEM_USAGE_LOCATIONS, MEM_USAGE_SLOTS, NAME_LEN, UUID_LEN,
};
use xunds::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo, EXT_TAG_LEN, TAG_LEN};

use xunds::nds::{Counter, MappedSlab, ModelSlot, NdsError, SlabMut, Writer};

/// The model record for version `v` (`v != 0`): `model_id = v`, and every
/// other byte (name, uuid, indices, the whole mem-usage grid) derived from `v`.
pub fn model(v: u32) -> ModelRecord {
    let mut rng = SplitMix64::new(u64::from(v) ^ 0x6e64_735f_7374_7265);
    let mut r = ModelRecord {
        model_id: v,
        model_node_id: rng.next_u32(),
        ..ModelRecord::EMPTY
    };
    let mut name = [0u8; NAME_LEN];
    for b in name.iter_mut().take(NAME_LEN - 1) {
        *b = b'a' + (rng.below(26) as u8);
    }
    r.name = name;
    let mut uuid = [0u8; UUID_LEN];
    rng.fill(&mut uuid);
    r.uuid = uuid;
    r.nc_index = rng.below(16) as u8;
    r.sg_index = rng.next_u32() as u8;
    for loc in 0..MEM_USAGE_LOCATIONS {
        for slot in 0..MEM_USAGE_SLOTS {
            r.mem_usage[loc][slot] = MemUsageInfo {
                total_size: rng.next_u64(),
                chunk_count: rng.next_u32(),
            };
        }
    }
    r
}

/// The process-info record for version `v`.
pub fn process_info(v: u32) -> ProcessInfo {
    let mut tag = [0u8; TAG_LEN];
    let s = format!("stress-{v:08x}");
    tag[..s.len()].copy_from_slice(s.as_bytes());
    ProcessInfo {
        hash: 0,
        framework_type: v,
        tag,
        framework_version: VersionInfo {
            major: v as u8,
            minor: (v >> 8) as u8,
            build: v,
        },
        fal_version: VersionInfo {
            major: 1,
            minor: 2,
            build: !v,
        },
        runtime_version: VersionInfo {
            major: 2,
            minor: 31,
            build: v.rotate_left(7),
        },
    }
}

/// The process-info-ext record for version `v`: the tag is `v` in hex,
/// repeated (31 times, NUL-terminated).
pub fn process_info_ext(v: u32) -> ProcessInfoExt {
    let mut tag = [0u8; EXT_TAG_LEN];
    let unit = format!("{v:08x}");
    for (i, b) in tag.iter_mut().take(EXT_TAG_LEN - 8).enumerate() {
        *b = unit.as_bytes()[i % 8];
    }
    ProcessInfoExt { hash: 0, tag }
}

/// Model records a stress writer keeps live at once.
const LIVE: u64 = 6;

/// One stress step on `w` driven by `rng`, with `next` the next version
/// number (incremented per record written): keep about [`LIVE`] model
/// records, updating in place most of the time, sometimes deleting or
/// committing, and now and then rewriting the process-info records.
fn step<S: SlabMut>(w: &Writer<S>, rng: &mut SplitMix64, next: &mut u32) -> Result<(), NdsError> {
    let mut version = || {
        *next = next.wrapping_add(1).max(1);
        *next
    };
    match rng.below(16) {
        0 => w.publish_process_info(&process_info(version())),
        1 => w.publish_process_info_ext(&process_info_ext(version())),
        _ => {
            let slot = ModelSlot::new(rng.below(LIVE) as usize)?;
            match w.model_state(slot) {
                xunds::fsm::record::RecordState::Published => {
                    if rng.chance(1, 8) {
                        w.delete_model(slot)
                    } else {
                        w.update_model(slot, &model(version()))
                    }
                }
                _ => w.commit_model(&model(version())).map(|_| ()),
            }
        }
    }
}

/// What a writer process does: `stress CREATE SEED OPS` (publish, update
/// and delete records on the slab, created when CREATE is 1, for OPS steps
/// or, with 0, until killed; `ready` on stdout once the slab is committed) or
/// `add CORE COUNTER TIMES` (attach as a counter co-writer and add 1 to that
/// NC counter TIMES times).
pub fn run(job: &str, path: &Path) -> Result<(), NdsError> {
    let words: Vec<&str> = job.split_whitespace().collect();
    let num = |i: usize| -> u64 { words[i].parse().expect("a writer job's number") };
    match words[0] {
        "stress" => {
            let w = match num(1) {
                1 => Writer::create(path),
                _ => MappedSlab::open(path).and_then(Writer::attach),
            }?;
            println!("ready");
            let _ = std::io::stdout().flush();
            let (seed, ops) = (num(2), num(3));
            let mut rng = SplitMix64::new(seed);
            // Versions start from the seed's low bits (any value is fine:
            // the records are self-checking for whatever version they carry).
            let mut next = (seed as u32).wrapping_mul(1 << 20);
            let mut done = 0u64;
            while ops == 0 || done < ops {
                step(&w, &mut rng, &mut next)?;
                done += 1;
            }
            Ok(())
        }
        "add" => {
            let c = Counter::nc_index(num(1) as u32, num(2) as u32)?;
            // A counter co-writer: atomic adds only, so no writer's lock.
            let w = MappedSlab::open_unlocked(path).and_then(Writer::attach)?;
            (0..num(3)).try_for_each(|_| w.add(c, 1).map(drop))
        }
        other => panic!("unknown writer job {other:?}"),
    }
}

// ---- the reader side: does a record read back equal the one its version makes? ----

/// `true` when `r` is exactly [`model`]`(r.model_id)` (the hash word aside).
pub fn is_consistent(r: &ModelRecord) -> bool {
    r.model_id != 0
        && ModelRecord {
            hash: r.hash,
            ..model(r.model_id)
        } == *r
}

/// `true` when `p` is exactly [`process_info`]`(p.framework_type)`.
pub fn process_info_is_consistent(p: &ProcessInfo) -> bool {
    ProcessInfo {
        hash: p.hash,
        ..process_info(p.framework_type)
    } == *p
}

/// `true` when `p` is [`process_info_ext`] of the version its tag encodes.
pub fn process_info_ext_is_consistent(p: &ProcessInfoExt) -> bool {
    let v = std::str::from_utf8(&p.tag[..8])
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok());
    match v {
        Some(v) => {
            ProcessInfoExt {
                hash: p.hash,
                ..process_info_ext(v)
            } == *p
        }
        None => false,
    }
}

#[test]
fn records_are_self_checking() {
    let a = model(7);
    assert!(is_consistent(&a));
    let b = model(8);
    assert_ne!(a, b);
    let mut mix = a;
    mix.mem_usage[1][11] = b.mem_usage[1][11];
    assert!(!is_consistent(&mix));
    assert!(!is_consistent(&ModelRecord::EMPTY));
    assert!(process_info_is_consistent(&process_info(9)));
    let mut p = process_info(9);
    p.runtime_version.build ^= 1;
    assert!(!process_info_is_consistent(&p));
    assert!(process_info_ext_is_consistent(&process_info_ext(
        0xdead_beef
    )));
    let mut e = process_info_ext(3);
    e.tag[200] ^= 1;
    assert!(!process_info_ext_is_consistent(&e));
}
