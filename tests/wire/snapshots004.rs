//! insta snapshots of the annotated dump of one populated instance of every
//! docs/abi.md §2 block (and the region map), so any change to a layout, a name or
//! the encoding shows up as a readable diff.

use xunds::wire::layout::annotated_dump;
use xunds::wire::nds::header::Header;
use xunds::wire::nds::model::{self, MemLocation, MemSlot, MemUsageInfo, ModelRecord};
use xunds::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo};
use xunds::wire::nds::{c_string, fnv, BLOCKS, REGIONS};

fn model_record() -> ModelRecord {
    let mut r = ModelRecord {
        hash: 0,
        model_id: 1001,
        model_node_id: 7,
        name: c_string("resnet50_v1.neff"),
        uuid: *b"\x9a\x1f\x0c\x44\x21\x7e\x4b\x10\x8c\x55\x03\xee\x61\x2d\x90\x17",
        nc_index: 2,
        sg_index: 1,
        ..ModelRecord::EMPTY
    };
    *r.usage_mut(MemLocation::Host, MemSlot::Code) = MemUsageInfo {
        total_size: 0x0001_2000,
        chunk_count: 3,
    };
    *r.usage_mut(MemLocation::Host, MemSlot::Misc) = MemUsageInfo {
        total_size: 0x400,
        chunk_count: 1,
    };
    *r.usage_mut(MemLocation::Device, MemSlot::Tensors) = MemUsageInfo {
        total_size: 0x0800_0000,
        chunk_count: 12,
    };
    *r.usage_mut(MemLocation::Device, MemSlot::Scratchpad) = MemUsageInfo {
        total_size: 0x0020_0000,
        chunk_count: 2,
    };
    r.hash = fnv::record_hash(&r.encode());
    r
}

fn process_info() -> ProcessInfo {
    let mut p = ProcessInfo {
        hash: 0,
        framework_type: 2,
        tag: c_string("xunds-demo"),
        framework_version: VersionInfo {
            major: 2,
            minor: 5,
            build: 1,
        },
        fal_version: VersionInfo {
            major: 1,
            minor: 0,
            build: 42,
        },
        runtime_version: VersionInfo {
            major: 2,
            minor: 31,
            build: 24,
        },
    };
    p.hash = fnv::record_hash(&p.encode());
    p
}

fn process_info_ext() -> ProcessInfoExt {
    let mut e = ProcessInfoExt {
        hash: 0,
        tag: c_string("xunds process-info-ext tag: a longer free-form label"),
    };
    e.hash = fnv::record_hash(&e.encode());
    e
}

/// The encoding of the populated instance of block `name`.
fn instance(name: &str) -> Vec<u8> {
    let rec = model_record().encode();
    match name {
        "nds_header" => Header::COMMITTED.encode().to_vec(),
        "nds_model_node_data_internal" => rec.to_vec(),
        "nds_model_node_info" => rec[model::NODE_INFO_OFF..model::MEM_USAGE_OFF].to_vec(),
        "nds_model_node_mem_usage_info" => rec[model::MEM_USAGE_OFF..].to_vec(),
        "nds_mem_usage_info" => model_record()
            .usage(MemLocation::Device, MemSlot::Tensors)
            .encode()
            .to_vec(),
        "nds_process_info_internal" => process_info().encode().to_vec(),
        "nds_version_info" => process_info().runtime_version.encode().to_vec(),
        "nds_process_info_ext_internal" => process_info_ext().encode().to_vec(),
        other => panic!("no populated instance for block {other}: add one"),
    }
}

#[test]
fn every_block_has_a_snapshot() {
    for b in BLOCKS {
        assert_eq!(instance(b.name).len(), b.size, "{}", b.name);
    }
}

#[test]
fn stamped_instances_verify() {
    assert_eq!(fnv::verify(&model_record().encode()), fnv::HashState::Valid);
    assert_eq!(fnv::verify(&process_info().encode()), fnv::HashState::Valid);
    assert_eq!(
        fnv::verify(&process_info_ext().encode()),
        fnv::HashState::Valid
    );
}

macro_rules! snapshot_block {
    ($test:ident, $name:literal) => {
        #[test]
        fn $test() {
            let block = BLOCKS.iter().find(|b| b.name == $name).unwrap();
            insta::assert_snapshot!($name, annotated_dump(block, &instance($name)));
        }
    };
}

snapshot_block!(dump_nds_header, "nds_header");
snapshot_block!(
    dump_nds_model_node_data_internal,
    "nds_model_node_data_internal"
);
snapshot_block!(dump_nds_model_node_info, "nds_model_node_info");
snapshot_block!(
    dump_nds_model_node_mem_usage_info,
    "nds_model_node_mem_usage_info"
);
snapshot_block!(dump_nds_mem_usage_info, "nds_mem_usage_info");
snapshot_block!(dump_nds_process_info_internal, "nds_process_info_internal");
snapshot_block!(dump_nds_version_info, "nds_version_info");
snapshot_block!(
    dump_nds_process_info_ext_internal,
    "nds_process_info_ext_internal"
);

#[test]
fn typed_dumps_match_the_block_dumps() {
    let rec = model_record();
    assert_eq!(
        rec.dump(),
        annotated_dump(&model::LAYOUT, &instance("nds_model_node_data_internal"))
    );
    assert_eq!(
        process_info().dump(),
        annotated_dump(
            BLOCKS
                .iter()
                .find(|b| b.name == "nds_process_info_internal")
                .unwrap(),
            &instance("nds_process_info_internal")
        )
    );
}

#[test]
fn region_map_table() {
    let mut s = String::from("region              offset    end       size\n");
    for r in REGIONS {
        s.push_str(&format!(
            "{:<18}  {:#07x}  {:#07x}  {}\n",
            r.name,
            r.offset,
            r.offset + r.size,
            r.size
        ));
    }
    insta::assert_snapshot!("nds_region_map", s);
}
