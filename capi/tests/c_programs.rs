//! The C programs of examples/c (`host_agent.c`, `core_agent.c`) and the
//! README's "Embedding from C" example, built against include/xunds.h and
//! libxunds.a with gcc (C11, `-Wall -Wextra -Werror`, AddressSanitizer and
//! UndefinedBehaviorSanitizer, no recovery), run, and their output checked;
//! `core_agent`'s slab file is read back by `xunds nds dump --json`. The
//! README example is also linked against libxunds.so, and the header's ABI
//! mirrors are checked against examples/c/conformance/abi.h.
//!
//! They need gcc and build the release libraries and binary with cargo, so
//! a plain `cargo test` skips them; `.ci/run` runs them:
//! `cargo test --release -p xunds-capi --test c_programs -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const CFLAGS: &[&str] = &[
    "-std=c11",
    "-D_GNU_SOURCE",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-O1",
    "-g",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/release`, with libxunds.a, libxunds.so and the xunds binary
/// built (once per run).
fn release_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        for args in [
            &["build", "--release", "-p", "xunds-capi"][..],
            &["build", "--release", "-p", "xunds", "--bin", "xunds"][..],
        ] {
            let st = Command::new(&cargo)
                .args(args)
                .current_dir(root())
                .status()
                .expect("run cargo");
            assert!(st.success(), "cargo {args:?} failed");
        }
        let dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target"))
            .join("release");
        for f in ["libxunds.a", "libxunds.so", "xunds"] {
            assert!(dir.join(f).exists(), "{} missing", dir.join(f).display());
        }
        dir
    })
}

/// Compile `src` (C) against include/xunds.h and `lib` into a program.
fn build(src: &Path, name: &str, lib: &[&str]) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&out).unwrap();
    let bin = out.join(name);
    let include = root().join("include");
    let o = Command::new("gcc")
        .args(CFLAGS)
        .arg("-I")
        .arg(&include)
        .arg(src)
        .args(lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&bin)
        .output()
        .expect("run gcc (the C program tests need it)");
    assert!(
        o.status.success(),
        "gcc {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    bin
}

fn static_lib() -> String {
    release_dir().join("libxunds.a").display().to_string()
}

fn run(cmd: &mut Command) -> String {
    let o: Output = cmd.output().expect("run the program");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{cmd:?} failed:\n{out}\n{err}");
    assert!(!err.contains("Sanitizer"), "sanitizer report:\n{err}");
    print!("{out}");
    out
}

/// The header alone compiles as C with only the standard headers it
/// includes (its core part needs stdint.h, stddef.h and stdbool.h).
#[test]
#[ignore = "needs gcc; .ci/run runs it"]
fn header_stands_alone() {
    let h = root().join("include/xunds.h");
    let o = Command::new("gcc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"])
        .args(["-fsyntax-only", "-x", "c"])
        .arg(&h)
        .output()
        .expect("run gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&h).unwrap();
    let includes: Vec<&str> = text.lines().filter(|l| l.starts_with("#include")).collect();
    assert_eq!(
        includes,
        [
            "#include <stdint.h>",
            "#include <stddef.h>",
            "#include <stdbool.h>"
        ]
    );
}

/// host_agent: 10^4 non-blocking schedules with completion fds, every
/// response checked against the model's reference; prints exec/s.
#[test]
#[ignore = "needs gcc; .ci/run runs it"]
fn host_agent_runs_ten_thousand() {
    let bin = build(
        &root().join("examples/c/host_agent.c"),
        "host_agent",
        &[&static_lib()],
    );
    let out = run(&mut Command::new(bin));
    assert!(
        out.contains("ok 10000 executions (10001 on the device"),
        "{out}"
    );
    let rate: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("exec/s "))
        .and_then(|r| r.trim().parse().ok())
        .expect("an exec/s line");
    assert!(rate > 0.0);
}

/// core_agent: the ring in the agent's memory between two pthreads, the
/// NDS writer and reader over its memory, and a slab file that the
/// command line's dump reads back with every value the agent wrote.
#[test]
#[ignore = "needs gcc; .ci/run runs it"]
fn core_agent_and_its_slab_file() {
    let bin = build(
        &root().join("examples/c/core_agent.c"),
        "core_agent",
        &[&static_lib()],
    );
    let slab = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("core-agent-{}.nds", std::process::id()));
    let _ = std::fs::remove_file(&slab);
    let out = run(Command::new(bin).arg(&slab));
    assert!(out.contains("ring ok 100000 jobs"), "{out}");
    assert!(out.contains("nds ok"), "{out}");
    let dump = run(Command::new(release_dir().join("xunds"))
        .args(["nds", "dump", "--json"])
        .arg(&slab));
    std::fs::remove_file(&slab).unwrap();
    let d: serde_json::Value = serde_json::from_str(&dump).unwrap();
    assert_eq!(d["header"]["magic_ok"], true);
    assert_eq!(d["cores"]["2"]["TIME_IN_USE"], 42, "NC 2 counter 0: 41 + 1");
    assert_eq!(d["nd_counters"]["RUNTIME_VERSION"], 7, "ND counter 0 set");
    let m = &d["models"][0];
    assert_eq!(m["state"], "fresh");
    assert_eq!(m["slot"], 0);
    assert_eq!(m["model_id"], 1234);
    assert_eq!(m["model_node_id"], 5);
    assert_eq!(m["name"], "c-agent-model");
    assert_eq!(m["nc_index"], 2);
    assert_eq!(m["mem_usage"]["device"]["CODE"]["total_size"], 4096);
    assert_eq!(m["mem_usage"]["device"]["CODE"]["chunk_count"], 2);
    let p = &d["process_info"];
    assert_eq!(p["state"], "fresh");
    assert_eq!(p["tag"], "core_agent");
    assert_eq!(p["framework_type"], 3);
    assert_eq!(
        p["runtime_version"],
        serde_json::json!({"major": 2, "minor": 31, "build": 7})
    );
}

/// The README's "Embedding from C" example, cut from README.md, compiles
/// and runs against the static and the shared library.
#[test]
#[ignore = "needs gcc; .ci/run runs it"]
fn readme_example_builds_and_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("```c\n").expect("README.md has a C example") + 5;
    let len = readme[start..].find("```").unwrap();
    let src = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme_agent.c");
    std::fs::write(&src, &readme[start..start + len]).unwrap();
    let bin = build(&src, "readme_agent", &[&static_lib()]);
    let out = run(&mut Command::new(bin));
    assert!(out.contains("status SUCCESS"), "{out}");
    let dir = release_dir().display().to_string();
    let shared = build(
        &src,
        "readme_agent_so",
        &[&format!("-L{dir}"), "-lxunds", &format!("-Wl,-rpath,{dir}")],
    );
    let out = run(&mut Command::new(shared));
    assert!(out.contains("status SUCCESS"), "{out}");
}

/// The header's ABI mirrors agree, field by field, with
/// examples/c/conformance/abi.h, the header written from docs/abi.md alone
/// (each `_Static_assert` below fails the compile on a difference).
#[test]
#[ignore = "needs gcc; .ci/run runs it"]
fn header_mirrors_agree_with_the_abi_page() {
    // (ours, the page's, [(our field, the page's field)])
    type Pair<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let pairs: &[Pair] = &[
        (
            "xunds_infer_resp_t",
            "infer_resp_t",
            &[
                ("status", "status"),
                ("err_class", "err_class"),
                ("nq_errors", "nq_errors"),
                ("nq_records", "nq_records"),
                ("ts_start.tv_nsec", "ts_start.tv_nsec"),
                ("ts_end", "ts_end"),
                ("device_start_ns", "device_start_ns"),
                ("device_end_ns", "device_end_ns"),
                ("mac_count", "mac_count"),
                ("cc_time_ns", "cc_time_ns"),
                ("num_outputs", "num_outputs"),
                ("device_id", "device_id"),
                ("device_tpb_idx", "device_tpb_idx"),
            ],
        ),
        (
            "xunds_nds_model_record_t",
            "nds_model_node_data_internal_t",
            &[
                ("hash", "hash"),
                ("model_id", "model_id"),
                ("model_node_id", "model_node_id"),
                ("name", "name"),
                ("uuid", "uuid"),
                ("nc_index", "nc_index"),
                ("sg_index", "sg_index"),
                ("mem_usage", "mem_usage"),
                ("mem_usage[1][3].chunk_count", "mem_usage[1][3].chunk_count"),
            ],
        ),
        (
            "xunds_nds_process_info_t",
            "nds_process_info_internal_t",
            &[
                ("hash", "hash"),
                ("framework_type", "framework_type"),
                ("tag", "tag"),
                ("framework_version", "framework_version"),
                ("fal_version", "fal_version"),
                ("runtime_version.build", "runtime_version.build"),
            ],
        ),
        (
            "xunds_nds_mem_usage_t",
            "nds_mem_usage_info_t",
            &[("total_size", "total_size"), ("chunk_count", "chunk_count")],
        ),
    ];
    let mut src = String::from("#include \"abi.h\"\n#include \"xunds.h\"\n");
    for (ours, page, fields) in pairs {
        src += &format!("_Static_assert(sizeof({ours}) == sizeof({page}), \"{ours}\");\n");
        for (a, b) in *fields {
            src += &format!(
                "_Static_assert(offsetof({ours}, {a}) == offsetof({page}, {b}), \"{ours}.{a}\");\n"
            );
        }
    }
    src += "_Static_assert(XUNDS_NDS_REQUIRED_SIZE == NDS_REQUIRED_SIZE, \"region map\");\n";
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mirrors.c");
    std::fs::write(&file, src).unwrap();
    let o = Command::new("gcc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
        .arg("-I")
        .arg(root().join("include"))
        .arg("-I")
        .arg(root().join("examples/c/conformance"))
        .arg(&file)
        .output()
        .expect("run gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
