//! `xunds layout` and `xunds layout --json`.
//!
//! The JSON is the reference a reimplementer in another language checks
//! against, so its exact text is pinned by an insta snapshot; the structural
//! checks below say what the snapshot must contain independently of it.

use std::process::Command;

use xunds::wire::{all_blocks, nds};

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .args(args)
        .output()
        .expect("run xunds");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}

/// Every `"key":` in a compact JSON text (keys are the only strings
/// followed by a colon; our names never contain `":`).
fn keys(json: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = json.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while b[j] != b'"' {
                j += 1;
            }
            if b.get(j + 1) == Some(&b':') {
                out.push(json[start..j].to_string());
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn layout_json_snapshot() {
    let (code, stdout, stderr) = run(&["layout", "--json"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    insta::assert_snapshot!("layout_json", stdout);
}

#[test]
fn layout_table_snapshot() {
    let (code, stdout, stderr) = run(&["layout"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    insta::assert_snapshot!("layout_table", stdout);
}

#[test]
fn layout_json_has_exactly_the_contract_shape() {
    let (_, stdout, _) = run(&["layout", "--json"]);
    let json = stdout.trim_end();
    assert!(json.starts_with(r#"{"blocks":[{"name":"xu_queue_t","size":256,"fields":[{"name":"xu_id","offset":0,"size":2},"#));
    assert!(json.contains(r#"{"name":"exec_head","offset":64,"size":8}"#));
    assert!(json.contains(r#"],"nds_regions":["#));
    assert!(json.ends_with("]}"));
    for k in keys(json) {
        assert!(
            ["blocks", "name", "size", "fields", "offset", "nds_regions"].contains(&k.as_str()),
            "unexpected key {k:?}"
        );
    }
    // Every block and region the library defines appears, by C name.
    for b in all_blocks() {
        assert!(
            json.contains(&format!(
                r#"{{"name":"{}","size":{},"fields":["#,
                b.name, b.size
            )),
            "{} missing",
            b.name
        );
    }
    for r in nds::REGIONS {
        assert!(json.contains(&format!(
            r#"{{"name":"{}","offset":{},"size":{}}}"#,
            r.name, r.offset, r.size
        )));
    }
    for name in [
        "xuq_exec_info_t",
        "seq_id_t",
        "device_exec_request_t",
        "tpb_execution_info_t",
        "infer_resp_t",
        "udma_desc",
        "nq_entry",
    ] {
        assert!(json.contains(&format!(r#"{{"name":"{name}","#)), "{name}");
    }
}

#[test]
fn layout_fields_are_in_offset_order() {
    for b in all_blocks() {
        assert!(b.is_well_formed(), "{}", b.name);
        assert!(
            b.fields.windows(2).all(|w| w[0].offset < w[1].offset),
            "{}",
            b.name
        );
    }
}

#[test]
fn layout_refuses_unknown_options() {
    let (code, stdout, stderr) = run(&["layout", "--yaml"]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(stderr.contains("--yaml"), "{stderr}");
}

/// A reader that goes away (`xunds layout | head -1`) ends the command quietly:
/// no `println!` panic (exit 101) on the broken pipe.
#[test]
fn a_closed_stdout_pipe_is_not_a_panic() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .arg("layout")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xunds");
    drop(child.stdout.take()); // close the read end before the child writes
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "panicked: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
