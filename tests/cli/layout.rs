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

/// Every object key anywhere in a JSON value.
fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                keys(v, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
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
    let doc: serde_json::Value = serde_json::from_str(json).expect("valid JSON");
    let mut all = Vec::new();
    keys(&doc, &mut all);
    for k in all {
        assert!(
            ["blocks", "name", "size", "fields", "offset", "nds_regions"].contains(&k.as_str()),
            "unexpected key {k:?}"
        );
    }
    // Every block and region the library defines appears, by C name, with
    // its size and every field.
    let blocks = doc["blocks"].as_array().expect("blocks");
    let regions = doc["nds_regions"].as_array().expect("nds_regions");
    for b in all_blocks() {
        assert!(
            blocks.iter().any(|j| j["name"] == b.name
                && j["size"] == b.size
                && j["fields"].as_array().map(Vec::len) == Some(b.fields.len())),
            "{} missing",
            b.name
        );
    }
    for r in nds::REGIONS {
        assert!(
            regions
                .iter()
                .any(|j| j["name"] == r.name && j["offset"] == r.offset && j["size"] == r.size),
            "{} missing",
            r.name
        );
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
        assert!(blocks.iter().any(|j| j["name"] == name), "{name}");
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
