//! The C conformance program (`examples/c/conformance/`): a C header of
//! every ABI block written from docs/abi.md alone and a C reader of a slab
//! (header rules, region map, counter bands, FNV-1a records with the retry),
//! checked against `xunds layout --json` and `xunds nds dump --json` (the
//! documents of docs/abi.md §8). The program does not include `xunds.h` and
//! shares no code with the crate, so agreement means the page is enough to
//! reimplement both ABIs.
//!
//! Each test builds the program with gcc (C11, `-Wall -Wextra -Wpedantic
//! -Werror`, AddressSanitizer and UndefinedBehaviorSanitizer, no recovery)
//! and fails on any sanitizer report. They need gcc, so a plain `cargo test`
//! skips them; `.ci/run`'s C conformance step runs them:
//! `cargo test --release --test cli -- --ignored c_conformance::`.

use crate::nds_support;

use crate::nds_support::writer as stress;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use nds_support::{live_stress_writer, xunds, TempSlab};
use serde_json::Value;
use xunds::wire::nds::model::{MemUsageInfo, ModelRecord};
use xunds::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo};

/// The compiler flags CI builds the C program with.
const CFLAGS: &[&str] = &[
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Werror",
    "-O1",
    "-g",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
];

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/c/conformance")
}

/// The program, built once per test run. `abi.h` is also compiled alone:
/// it must stand on `<stdint.h>`, `<stddef.h>` and `<stdbool.h>`.
fn program() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-conformance");
        std::fs::create_dir_all(&out).unwrap();
        let bin = out.join("conformance");
        let gcc = |args: &[&OsStr]| {
            let o = Command::new("gcc")
                .args(CFLAGS)
                .args(args)
                .output()
                .expect("run gcc (the C conformance tests need it)");
            assert!(
                o.status.success(),
                "gcc {args:?} failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        let header = source_dir().join("abi.h");
        gcc(&[
            "-fsyntax-only".as_ref(),
            "-x".as_ref(),
            "c".as_ref(),
            header.as_os_str(),
        ]);
        let src = source_dir().join("conformance.c");
        gcc(&[src.as_os_str(), "-o".as_ref(), bin.as_os_str()]);
        bin
    })
}

/// A finished process: exit code and both streams.
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self, who: &str) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "{who}: stdout is not one JSON document ({e}):\n{}",
                self.stdout
            )
        })
    }
}

fn finish(mut c: Command) -> Out {
    let o = c.output().expect("spawn");
    Out {
        code: o.status.code(),
        stdout: String::from_utf8(o.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Run the C program; any sanitizer report fails the test.
fn c_program<S: AsRef<OsStr>>(args: &[S]) -> Out {
    let mut c = Command::new(program());
    c.args(args)
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        .env("UBSAN_OPTIONS", "print_stacktrace=1");
    let out = finish(c);
    assert!(
        !out.stderr.contains("Sanitizer") && !out.stderr.contains("runtime error"),
        "the C program tripped a sanitizer:\n{}",
        out.stderr
    );
    out
}

fn xunds_cmd<S: AsRef<OsStr>>(args: &[S]) -> Out {
    finish(xunds(args))
}

/// Every difference between two JSON values, as `path: C <c> xunds <x>`.
/// Objects compare as maps (key order is not compared), arrays in order.
fn diff(path: &str, c: &Value, x: &Value, out: &mut Vec<String>) {
    match (c, x) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) => diff(&format!("{path}.{k}"), va, vb, out),
                    None => out.push(format!("{path}.{k}: only in C ({va})")),
                }
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    out.push(format!("{path}.{k}: only in xunds ({vb})"));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!(
                    "{path}: C has {} entries, xunds {}",
                    a.len(),
                    b.len()
                ));
            }
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if c != x => out.push(format!("{path}: C {c} xunds {x}")),
        _ => {}
    }
}

fn assert_same(what: &str, c: &Value, x: &Value) {
    let mut d = Vec::new();
    diff("", c, x, &mut d);
    assert!(
        d.is_empty(),
        "{what}: the C program and xunds disagree in {} places:\n{}",
        d.len(),
        d.join("\n")
    );
}

// ---- layout ----

/// A field or region: `(name, offset, size)`.
type Field = (String, u64, u64);
/// A block: `(name, size, fields)`.
type Block = (String, u64, Vec<Field>);

/// `(name, offset, size)` of each entry of a `fields` or `nds_regions` array.
fn triples(v: &Value) -> Vec<Field> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().expect("name").to_string(),
                f["offset"].as_u64().expect("offset"),
                f["size"].as_u64().expect("size"),
            )
        })
        .collect()
}

#[test]
#[ignore = "builds a C program with gcc; .ci/run's C conformance step runs it"]
fn the_c_header_lays_out_every_block_as_xunds_layout_does() {
    let c = c_program(&["layout"]);
    assert_eq!(c.code, Some(0), "{}", c.stderr);
    let c = c.json("conformance layout");
    let x = xunds_cmd(&["layout", "--json"]);
    assert_eq!(x.code, Some(0), "{}", x.stderr);
    let x = x.json("xunds layout --json");

    let blocks = |v: &Value| -> Vec<Block> {
        v["blocks"]
            .as_array()
            .expect("blocks")
            .iter()
            .map(|b| {
                (
                    b["name"].as_str().expect("block name").to_string(),
                    b["size"].as_u64().expect("block size"),
                    triples(&b["fields"]),
                )
            })
            .collect()
    };
    let (cb, xb) = (blocks(&c), blocks(&x));
    let mut problems = Vec::new();
    let names = |v: &[Block]| -> Vec<String> { v.iter().map(|b| b.0.clone()).collect() };
    if names(&cb) != names(&xb) {
        problems.push(format!(
            "blocks: C {:?}\n   xunds {:?}",
            names(&cb),
            names(&xb)
        ));
    }
    let c_by_name: BTreeMap<_, _> = cb.iter().map(|b| (b.0.clone(), b)).collect();
    let mut fields = 0;
    for (name, size, xf) in &xb {
        let Some((_, csize, cf)) = c_by_name.get(name) else {
            continue;
        };
        if csize != size {
            problems.push(format!("{name}: size C {csize} xunds {size}"));
        }
        let only_x: Vec<_> = xf.iter().filter(|f| !cf.contains(f)).collect();
        let only_c: Vec<_> = cf.iter().filter(|f| !xf.contains(f)).collect();
        for f in &only_x {
            problems.push(format!("{name}: xunds field {f:?} not in C"));
        }
        for f in &only_c {
            problems.push(format!("{name}: C field {f:?} not in xunds"));
        }
        if cf == xf {
            fields += xf.len();
        } else if only_x.is_empty() && only_c.is_empty() {
            problems.push(format!("{name}: the same fields in another order"));
        }
    }
    let (cr, xr) = (triples(&c["nds_regions"]), triples(&x["nds_regions"]));
    if cr != xr {
        problems.push(format!("nds_regions: C {cr:?}\n   xunds {xr:?}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Both documents whole, so nothing outside blocks and regions differs.
    assert_same("layout", &c, &x);
    assert!(xb.len() >= 19 && fields >= 200 && xr.len() == 10);
    eprintln!(
        "C conformance, layout: {} blocks, {fields} fields, {} NDS regions agree (name, offset, size)",
        xb.len(),
        xr.len()
    );
}

// ---- dump ----

/// What one dump comparison covered.
#[derive(Debug, Default)]
struct Covered {
    counters: usize,
    records: usize,
}

/// `conformance dump PATH` and `xunds nds dump --json PATH` exit alike and
/// print the same document, counter by counter and record by record.
fn compare_dumps(what: &str, slab: &Path) -> Covered {
    let c = c_program(&[OsStr::new("dump"), slab.as_os_str()]);
    let x = xunds_cmd(&[
        OsStr::new("nds"),
        OsStr::new("dump"),
        OsStr::new("--json"),
        slab.as_os_str(),
    ]);
    assert_eq!(
        c.code, x.code,
        "{what}: exit codes differ\nC: {}\nxunds: {}",
        c.stderr, x.stderr
    );
    if x.stdout.trim().is_empty() {
        assert!(c.stdout.trim().is_empty(), "{what}: C printed {}", c.stdout);
        return Covered::default();
    }
    let (cj, xj) = (c.json("conformance dump"), x.json("xunds nds dump --json"));
    assert_same(what, &cj, &xj);
    let len = |v: &Value| v.as_object().map_or(0, |o| o.len());
    Covered {
        counters: len(&xj["nd_counters"])
            + xj["cores"]
                .as_object()
                .map_or(0, |cores| cores.values().map(len).sum()),
        records: xj["models"].as_array().map_or(0, |m| m.len())
            + usize::from(xj.get("process_info").is_some())
            + usize::from(xj.get("process_info_ext").is_some()),
    }
}

/// `xunds run --slab SLAB ARGS --json`: its report.
fn xunds_run(slab: &TempSlab, args: &[&str]) -> Value {
    let slab_arg = ["run", "--json", "--slab", slab.path().to_str().unwrap()];
    let out = xunds_cmd(&[&slab_arg[..], args].concat());
    assert_eq!(out.code, Some(0), "xunds run {args:?}: {}", out.stderr);
    out.json("xunds run --json")
}

fn dump_json(slab: &Path) -> Value {
    let x = xunds_cmd(&[
        OsStr::new("nds"),
        OsStr::new("dump"),
        OsStr::new("--json"),
        slab.as_os_str(),
    ]);
    assert_eq!(x.code, Some(0), "{}", x.stderr);
    x.json("xunds nds dump --json")
}

#[test]
#[ignore = "builds a C program with gcc; .ci/run's C conformance step runs it"]
fn the_c_reader_reads_the_slab_of_a_100k_run_as_nds_dump_does() {
    let slab = TempSlab::new("c-conformance-run");
    let report = xunds_run(&slab, &["--executions", "100000"]);
    let n = compare_dumps("a 10^5-execution run", slab.path());
    let x = dump_json(slab.path());
    let models = x["models"].as_array().unwrap();
    // The default run: 4 cores x 2 models, every record fresh.
    assert_eq!(models.len(), 8);
    assert!(models.iter().all(|m| m["state"] == "fresh"));
    assert_eq!(x["process_info"]["state"], "fresh");
    assert_eq!(report["executions"], 100_000);
    let completed: u64 = (0..4)
        .map(|c| {
            x["cores"][c.to_string()]["INFER_COMPLETED"]
                .as_u64()
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(Some(completed), report["completed_ok"].as_u64());
    eprintln!(
        "C conformance, 10^5-execution run: {} counters and {} records agree",
        n.counters, n.records
    );
}

/// The slab of a faulted 16-core run (EXT counter bands, 32 model records).
fn faulted_run(slab: &TempSlab) {
    let _ = xunds_run(
        slab,
        &[
            "--executions",
            "3000",
            "--vncs",
            "16",
            "--models",
            "2",
            "--faults",
            "corrupt:addr@#20/core1,corrupt:len@#20/core9,error:hw@#10/core12,nq_overflow@#5/core3",
            "--recover",
            "--timeout-ms",
            "50",
        ],
    );
}

/// The region map as `xunds layout --json` gives it: name -> (offset, size).
fn regions() -> BTreeMap<String, (usize, usize)> {
    let x = xunds_cmd(&["layout", "--json"]).json("xunds layout --json");
    triples(&x["nds_regions"])
        .into_iter()
        .map(|(n, o, s)| (n, (o as usize, s as usize)))
        .collect()
}

const MODEL_RECORD: usize = 672;

/// FNV-1a-32 of a record with its hash word zeroed, stored at +0
/// (docs/abi.md §2.8).
fn restamp(rec: &mut [u8]) {
    rec[..4].fill(0);
    let mut h: u32 = 0x811c_9dc5;
    for &b in rec.iter() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    rec[..4].copy_from_slice(&h.to_le_bytes());
}

/// A name with escapes, multi-byte UTF-8 and ill-formed sequences (a lone
/// continuation byte, 0xFF, an overlong lead, a surrogate, and a four-byte
/// sequence cut short by the NUL).
const TRICKY_NAME: &[u8] = b"q\"b\\s\x01\x1f\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x80 \xff \xe0\x80\xaf \xed\xa0\x80 \xf0\x9f\x98";

#[test]
#[ignore = "builds a C program with gcc; .ci/run's C conformance step runs it"]
fn the_c_reader_agrees_on_every_counter_and_record_state() {
    let run = TempSlab::new("c-conformance-faulted");
    faulted_run(&run);
    let n = compare_dumps("a faulted 16-core run", run.path());
    eprintln!(
        "C conformance, faulted 16-core run: {} counters and {} records agree",
        n.counters, n.records
    );
    let base = std::fs::read(run.path()).unwrap();
    let r = regions();
    let models_off = r["model_records"].0;
    let rec =
        |slot: usize| models_off + slot * MODEL_RECORD..models_off + (slot + 1) * MODEL_RECORD;
    let bitmap_off = r["model_bitmap"].0;
    let set_bitmap = |b: &mut [u8], f: &dyn Fn(u64) -> u64| {
        let w = u64::from_le_bytes(b[bitmap_off..bitmap_off + 8].try_into().unwrap());
        b[bitmap_off..bitmap_off + 8].copy_from_slice(&f(w).to_le_bytes());
    };

    // Every u64 of the four counter regions distinct and non-zero (the EXT
    // pad words too, which are not counters): any band or name mix-up shows.
    let mut a = base.clone();
    for region in [
        "nd_counters",
        "nc_counters",
        "ext_nc_counters",
        "ext_nc_data",
    ] {
        let (off, size) = r[region];
        for at in (off..off + size).step_by(8) {
            let v = ((at as u64) << 20) | 0xC0DE;
            a[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    // Slot 0 torn (a body byte changed under its hash); slot 1 unpublished
    // (hash zero, bit set); slot 2 hashed with its bit clear (still listed);
    // slot 3 fresh with the tricky name, a uuid and two reserved mem-usage
    // slots; slot 40 empty with its bit set; slot 50 a fresh record without
    // its bit.
    a[rec(0).start + 0x10] ^= 0x20;
    a[rec(1).start..rec(1).start + 4].fill(0);
    set_bitmap(&mut a, &|w| (w & !(1 << 2)) | (1 << 40));
    let mut r3 = a[rec(3)].to_vec();
    r3[0x0c..0x10c].fill(0);
    r3[0x0c..0x0c + TRICKY_NAME.len()].copy_from_slice(TRICKY_NAME);
    for (i, b) in r3[0x10c..0x11c].iter_mut().enumerate() {
        *b = 0xF0 | i as u8;
    }
    r3[0x120 + 7 * 16..0x120 + 7 * 16 + 8].copy_from_slice(&77u64.to_le_bytes());
    r3[0x120 + 23 * 16 + 8..0x120 + 23 * 16 + 12].copy_from_slice(&5u32.to_le_bytes());
    restamp(&mut r3);
    a[rec(3)].copy_from_slice(&r3);
    let mut r50 = a[rec(4)].to_vec();
    r50[4..8].copy_from_slice(&0x5050u32.to_le_bytes());
    restamp(&mut r50);
    a[rec(50)].copy_from_slice(&r50);
    // Process info torn (its stale copy is shown); process-info-ext torn
    // (its tag is null).
    let pi = r["process_info"].0;
    a[pi + 8] ^= 1;
    let ext = r["process_info_ext"].0;
    a[ext + 4] ^= 1;

    let slab = TempSlab::new("c-conformance-edited");
    std::fs::write(slab.path(), &a).unwrap();
    let n = compare_dumps("an edited slab", slab.path());
    let x = dump_json(slab.path());
    let state = |slot: u64| -> String {
        let m = x["models"].as_array().unwrap();
        let m = m.iter().find(|m| m["slot"] == slot).expect("slot listed");
        m["state"].as_str().unwrap().to_string()
    };
    // The edits read as intended (so the comparison above covered them).
    assert_eq!(state(0), "torn");
    assert_eq!(state(1), "unpublished");
    assert_eq!(state(2), "fresh");
    assert_eq!(state(3), "fresh");
    assert_eq!(state(40), "unpublished");
    assert_eq!(state(50), "fresh");
    assert_eq!(x["process_info"]["state"], "torn");
    assert_eq!(x["process_info_ext"]["tag"], Value::Null);
    assert_eq!(x["cores"].as_object().unwrap().len(), 16);
    // 31 ND + 16 x 95 NC counters, each non-zero.
    assert_eq!(n.counters, 31 + 16 * 95);
    eprintln!(
        "C conformance, edited slab: {} counters and {} records agree (torn, unpublished, \
         unlisted-but-hashed, ill-formed UTF-8)",
        n.counters, n.records
    );

    // Process info unpublished (zeros shown); process-info-ext fresh with the
    // tricky tag.
    let mut b = base.clone();
    b[pi..pi + 4].fill(0);
    let mut e = b[ext..ext + 260].to_vec();
    e[4..].fill(0);
    e[4..4 + TRICKY_NAME.len()].copy_from_slice(TRICKY_NAME);
    restamp(&mut e);
    b[ext..ext + 260].copy_from_slice(&e);
    std::fs::write(slab.path(), &b).unwrap();
    compare_dumps("process records edited", slab.path());
    let x = dump_json(slab.path());
    assert_eq!(x["process_info"]["state"], "unpublished");
    assert!(x["process_info_ext"]["tag"]
        .as_str()
        .unwrap()
        .contains('\u{FFFD}'));

    // Exactly the region map long: read alike.
    std::fs::write(slab.path(), &base[..67_200]).unwrap();
    compare_dumps("a 67,200-byte slab", slab.path());
}

#[test]
#[ignore = "builds a C program with gcc; .ci/run's C conformance step runs it"]
fn the_c_reader_refuses_what_nds_dump_refuses() {
    let run = TempSlab::new("c-conformance-refuse");
    let _ = xunds_run(&run, &["--executions", "200"]);
    let base = std::fs::read(run.path()).unwrap();
    let slab = TempSlab::new("c-conformance-refused");
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: [(&str, Edit); 5] = [
        ("zero header", Box::new(|b| b[..8].fill(0))),
        ("bad magic", Box::new(|b| b[..4].copy_from_slice(b"NDS\0"))),
        (
            "bad version",
            Box::new(|b| b[4..8].copy_from_slice(&100_001i32.to_le_bytes())),
        ),
        ("negative version", Box::new(|b| b[4..8].fill(0xFF))),
        (
            "one byte short of the map",
            Box::new(|b| b.truncate(67_199)),
        ),
    ];
    for (what, edit) in cases {
        let mut b = base.clone();
        edit(&mut b);
        std::fs::write(slab.path(), &b).unwrap();
        let x = xunds_cmd(&[
            OsStr::new("nds"),
            OsStr::new("dump"),
            OsStr::new("--json"),
            slab.path().as_os_str(),
        ]);
        assert_eq!(x.code, Some(1), "{what}: xunds nds dump should refuse");
        compare_dumps(what, slab.path());
    }
}

// ---- a live writer ----

fn counter_u32(v: &Value) -> u32 {
    u32::try_from(v.as_u64().expect("a number")).expect("a u32")
}

fn c_bytes<const N: usize>(s: &str) -> [u8; N] {
    let mut b = [0u8; N];
    b[..s.len()].copy_from_slice(s.as_bytes());
    b
}

/// The model record a dump entry shows (its hash aside).
fn model_from_json(m: &Value) -> ModelRecord {
    let mut r = ModelRecord {
        model_id: counter_u32(&m["model_id"]),
        model_node_id: counter_u32(&m["model_node_id"]),
        name: c_bytes(m["name"].as_str().unwrap()),
        nc_index: counter_u32(&m["nc_index"]) as u8,
        sg_index: counter_u32(&m["sg_index"]) as u8,
        ..ModelRecord::EMPTY
    };
    let uuid = m["uuid"].as_str().unwrap();
    for (i, b) in r.uuid.iter_mut().enumerate() {
        *b = u8::from_str_radix(&uuid[2 * i..2 * i + 2], 16).unwrap();
    }
    const SLOTS: [&str; 12] = [
        "CODE",
        "TENSORS",
        "CONSTANTS",
        "SCRATCHPAD",
        "MISC",
        "RESERVED_5",
        "RESERVED_6",
        "RESERVED_7",
        "RESERVED_8",
        "RESERVED_9",
        "RESERVED_10",
        "RESERVED_11",
    ];
    for (l, loc) in ["host", "device"].into_iter().enumerate() {
        for (slot, u) in m["mem_usage"][loc].as_object().unwrap() {
            let s = SLOTS.iter().position(|n| n == slot).expect("a slot name");
            r.mem_usage[l][s] = MemUsageInfo {
                total_size: u["total_size"].as_u64().unwrap(),
                chunk_count: counter_u32(&u["chunk_count"]),
            };
        }
    }
    r
}

fn version_from_json(v: &Value) -> VersionInfo {
    VersionInfo {
        major: counter_u32(&v["major"]) as u8,
        minor: counter_u32(&v["minor"]) as u8,
        build: counter_u32(&v["build"]),
    }
}

#[test]
#[ignore = "builds a C program with gcc; .ci/run's C conformance step runs it"]
fn the_c_reader_never_takes_a_torn_record_from_a_live_writer_for_fresh() {
    let slab = TempSlab::new("c-conformance-live");
    let mut writer = live_stress_writer(slab.path());
    let (mut fresh, mut unpublished, mut torn) = (0u32, 0u32, 0u32);
    for _ in 0..60 {
        let c = c_program(&[OsStr::new("dump"), slab.path().as_os_str()]);
        assert_eq!(c.code, Some(0), "{}", c.stderr);
        let d = c.json("conformance dump");
        for m in d["models"].as_array().unwrap() {
            match m["state"].as_str().unwrap() {
                "fresh" => {
                    fresh += 1;
                    let r = model_from_json(m);
                    assert!(stress::is_consistent(&r), "a torn model read as fresh: {m}");
                }
                "unpublished" => unpublished += 1,
                _ => torn += 1,
            }
        }
        let p = &d["process_info"];
        if p["state"] == "fresh" {
            fresh += 1;
            let pi = ProcessInfo {
                hash: 0,
                framework_type: counter_u32(&p["framework_type"]),
                tag: c_bytes(p["tag"].as_str().unwrap()),
                framework_version: version_from_json(&p["framework_version"]),
                fal_version: version_from_json(&p["fal_version"]),
                runtime_version: version_from_json(&p["runtime_version"]),
            };
            assert!(
                stress::process_info_is_consistent(&pi),
                "torn process info: {p}"
            );
        }
        if let Some(tag) = d["process_info_ext"]["tag"].as_str() {
            fresh += 1;
            let e = ProcessInfoExt {
                hash: 0,
                tag: c_bytes(tag),
            };
            assert!(
                stress::process_info_ext_is_consistent(&e),
                "torn ext: {tag}"
            );
        }
    }
    writer.kill().unwrap();
    writer.wait().unwrap();
    assert!(fresh > 0, "no fresh record read");
    // Whatever the killed writer left (even a record mid-update) reads alike.
    let n = compare_dumps("a killed stress writer's slab", slab.path());
    eprintln!(
        "C conformance, live writer: {fresh} fresh (all consistent), {unpublished} unpublished, \
         {torn} torn in 60 dumps; after the kill {} records agree",
        n.records
    );
}
