//! `xunds nds dump` on a populated slab: insta snapshots of the annotated
//! text dump and of the `--json` document (header, a few counters in all
//! three NC bands, process info, process-info-ext, one model record), plus
//! the refusals.

use crate::nds_support;

use nds_support::{xunds, TempSlab};
use xunds::nds::{Counter, Writer};
use xunds::wire::nds::c_string;
use xunds::wire::nds::counters::{Features, NcCounter, NdCounter};
use xunds::wire::nds::model::{MemLocation, MemSlot, MemUsageInfo, ModelRecord};
use xunds::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo};
use xunds::wire::nds::version::pack_version;

fn populate(w: &Writer) {
    let runtime = VersionInfo {
        major: 2,
        minor: 31,
        build: 24,
    };
    w.set(
        Counter::nd(NdCounter::RuntimeVersion),
        pack_version(2, 31, 24),
    )
    .unwrap();
    w.set_features(Features::MULTICORE);
    w.add(Counter::nc(0, NcCounter::InferCompleted).unwrap(), 5)
        .unwrap();
    w.add(Counter::nc(0, NcCounter::ErrNumerical).unwrap(), 1)
        .unwrap();
    w.add(Counter::nc(1, NcCounter::HwErrHbmUe).unwrap(), 2)
        .unwrap(); // EXT band 0xda80
    w.add(Counter::nc(7, NcCounter::MacCount).unwrap(), 1 << 20)
        .unwrap(); // EXT-data band 0xe280
    w.publish_process_info(&ProcessInfo {
        hash: 0,
        framework_type: 1,
        tag: c_string("xunds-test"),
        framework_version: VersionInfo {
            major: 2,
            minor: 1,
            build: 0,
        },
        fal_version: VersionInfo {
            major: 1,
            minor: 0,
            build: 7,
        },
        runtime_version: runtime,
    })
    .unwrap();
    w.publish_process_info_ext(&ProcessInfoExt {
        hash: 0,
        tag: c_string("extended tag"),
    })
    .unwrap();
    let mut m = ModelRecord {
        model_id: 1001,
        model_node_id: 7,
        name: c_string("resnet50_v1.neff"),
        uuid: *b"\x9a\x1f\x0c\x44\x21\x7e\x4b\x10\x8c\x55\x03\xee\x61\x2d\x90\x17",
        nc_index: 2,
        sg_index: 1,
        ..ModelRecord::EMPTY
    };
    *m.usage_mut(MemLocation::Host, MemSlot::Code) = MemUsageInfo {
        total_size: 0x12000,
        chunk_count: 3,
    };
    *m.usage_mut(MemLocation::Device, MemSlot::Tensors) = MemUsageInfo {
        total_size: 0x0800_0000,
        chunk_count: 12,
    };
    w.commit_model(&m).unwrap();
}

fn dump(slab: &TempSlab, json: bool) -> (Option<i32>, String, String) {
    let mut cmd = xunds(["nds", "dump", &slab.path().display().to_string()]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    let path = slab.path().display().to_string();
    (
        out.status.code(),
        String::from_utf8(out.stdout)
            .unwrap()
            .replace(&path, "<PATH>"),
        String::from_utf8(out.stderr)
            .unwrap()
            .replace(&path, "<PATH>"),
    )
}

#[test]
fn annotated_dump_of_a_populated_slab() {
    let slab = TempSlab::new("dump-text");
    let w = Writer::create(slab.path()).unwrap();
    populate(&w);
    let (code, out, err) = dump(&slab, false);
    assert_eq!(code, Some(0), "{err}");
    insta::assert_snapshot!("nds_dump_text", out);
}

#[test]
fn json_dump_of_a_populated_slab() {
    let slab = TempSlab::new("dump-json");
    let w = Writer::create(slab.path()).unwrap();
    populate(&w);
    let (code, out, err) = dump(&slab, true);
    assert_eq!(code, Some(0), "{err}");
    insta::assert_snapshot!("nds_dump_json", out);
    let doc: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(doc["cores"]["0"]["INFER_COMPLETED"], 5, "{doc}");
    assert_eq!(doc["models"][0]["uuid"], "9a1f0c44217e4b108c5503ee612d9017");
    // The documented shape (`xunds nds dump` module doc), key by key.
    for key in [
        r#"{"header":{"magic_ok":true,"version":100000},"process_info":{"#,
        r#""process_info_ext":{"tag":"extended tag"}"#,
        r#""nd_counters":{"RUNTIME_VERSION":2332167241752,"FEATURE_BITMAP":2}"#,
        r#""cores":{"0":{"INFER_COMPLETED":5,"ERR_NUMERICAL":1},"1":{"HW_ERR_HBM_UE":2},"7":{"MAC_COUNT":1048576}}"#,
        r#""models":[{"slot":0,"model_id":1001,"model_node_id":7,"name":"resnet50_v1.neff","uuid":"9a1f0c44217e4b108c5503ee612d9017","nc_index":2,"sg_index":1,"state":"fresh","mem_usage":{"host":{"CODE":{"total_size":73728,"chunk_count":3}},"device":{"TENSORS":{"total_size":134217728,"chunk_count":12}}}}]}"#,
    ] {
        assert!(out.contains(key), "missing {key}\nin {out}");
    }
}

#[test]
fn dump_refusals_say_what_was_wrong() {
    let slab = TempSlab::new("dump-refuse");
    // Too small (docs/abi.md §2.2).
    std::fs::write(slab.path(), vec![0u8; 0x1067f]).unwrap();
    let (code, _, err) = dump(&slab, false);
    assert_eq!(code, Some(1));
    assert!(err.contains("too small"), "{err}");
    // Not committed (all zero after the 500 us retry, docs/abi.md §2.3).
    std::fs::write(slab.path(), vec![0u8; 0x10680]).unwrap();
    let (code, out, err) = dump(&slab, true);
    assert_eq!(code, Some(1));
    assert!(err.contains("not committed"), "{err}");
    assert_eq!(out.trim(), r#"{"header":{"magic_ok":false,"version":0}}"#);
    // Bad version.
    let mut b = vec![0u8; 0x10680];
    b[..8].copy_from_slice(&[0x6e, 0x64, 0x73, 0x00, 0xa1, 0x86, 0x01, 0x00]);
    std::fs::write(slab.path(), &b).unwrap();
    let (code, out, err) = dump(&slab, true);
    assert_eq!(code, Some(1));
    assert!(err.contains("bad version 100001"), "{err}");
    assert_eq!(
        out.trim(),
        r#"{"header":{"magic_ok":true,"version":100001}}"#
    );
    // Bad magic.
    b[0] = b'N';
    std::fs::write(slab.path(), &b).unwrap();
    let (code, _, err) = dump(&slab, false);
    assert_eq!(code, Some(1));
    assert!(err.contains("bad magic"), "{err}");
}
