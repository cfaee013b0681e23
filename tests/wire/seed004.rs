//! docs/abi.md §2 (the NDS wire format), pinned: every worked example of docs/abi.md §2.10, the
//! docs/abi.md §2.2 region map and its docs/abi.md §2.2 starts, the docs/abi.md §2.3 header proto (bytes win over the
//! prose), the docs/abi.md §2.5 three-band resolver exhaustively, and the docs/abi.md §2.8 hash.

use xunds::wire::layout::Field;
use xunds::wire::nds::counters::{self, nc_counter_off, nd_counter_off, NcCounter, NdCounter};
use xunds::wire::nds::header::{self, Header, HeaderState, HEADER_PROTO};
use xunds::wire::nds::model::{self, mem_usage_off, MemLocation, MemSlot, ModelRecord};
use xunds::wire::nds::process::{self, ProcessInfo, ProcessInfoExt, VersionInfo};
use xunds::wire::nds::region::{self, chain};
use xunds::wire::nds::{c_string, fnv, BLOCKS, REGIONS};
use xunds::wire::WireError;

// ---------------------------------------------------------------- docs/abi.md §2.2 / §2.2

#[test]
fn abi_2_2_region_map_is_contiguous_and_sums_to_67200() {
    let names: Vec<&str> = REGIONS.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "header",
            "nd_counters",
            "nc_counters",
            "process_info",
            "model_bitmap",
            "model_records",
            "process_info_ext",
            "ext_pad",
            "ext_nc_counters",
            "ext_nc_data",
        ]
    );
    let mut end = 0;
    for s in REGIONS {
        assert_eq!(
            s.offset, end,
            "{} does not start where the previous ends",
            s.name
        );
        end += s.size;
    }
    assert_eq!(REGIONS.iter().map(|s| s.size).sum::<usize>(), 67_200);
    assert_eq!(end, region::REQUIRED_SIZE);
    assert_eq!(region::REQUIRED_SIZE, 0x10680);
    assert_eq!(region::SLAB_SIZE, 262_144);
}

#[test]
fn abi_2_2_region_starts_and_sizes() {
    let expect: [(&str, usize, usize); 10] = [
        ("header", 0x0, 8),
        ("nd_counters", 0x8, 248),
        ("nc_counters", 0x100, 992),
        ("process_info", 0x4e0, 64),
        ("model_bitmap", 0x520, 8),
        ("model_records", 0x528, 64 * 672),
        ("process_info_ext", 0xad28, 260),
        ("ext_pad", 44_588, 55_936 - 44_588),
        ("ext_nc_counters", 0xda80, 2048),
        ("ext_nc_data", 0xe280, 9216),
    ];
    for (span, (name, off, size)) in REGIONS.iter().zip(expect) {
        assert_eq!(*span, Field::seed(name, off, size));
    }
    // docs/abi.md §2.2: the starts the three sources agree on, and the end.
    let starts: Vec<usize> = REGIONS[1..].iter().map(|s| s.offset).collect();
    assert_eq!(
        starts,
        [0x008, 0x100, 0x4e0, 0x520, 0x528, 0xad28, 0xae2c, 0xda80, 0xe280]
    );
    assert_eq!(
        (
            region::HEADER_OFF,
            region::ND_COUNTERS_OFF,
            region::NC_COUNTERS_OFF,
            region::PROCESS_INFO_OFF,
            region::MODEL_BITMAP_OFF,
            region::MODEL_RECORDS_OFF,
            region::PROCESS_INFO_EXT_OFF,
            region::EXT_NC_COUNTERS_OFF,
            region::EXT_NC_DATA_OFF,
        ),
        (0, 0x8, 0x100, 0x4e0, 0x520, 0x528, 0xad28, 0xda80, 0xe280)
    );
}

#[test]
fn abi_2_2_ext_alignment_hinge() {
    // The running sum lands process-info-ext's end on NDS_EXT_OFFSET_OLD.
    assert_eq!(1248 + 64 + 8 + 43_008 + 260, 44_588);
    assert_eq!(chain::NDS_PROCESS_INFO_EXT_END, chain::NDS_EXT_OFFSET_OLD);
    assert_eq!(chain::NDS_EXT_OFFSET_OLD, 44_588);
    assert_eq!(chain::NDS_EXT_NEURONCORE_COUNTERS_SIZE_OLD, 65 * 4 * 8);
    assert_eq!(chain::NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD, 96 * 12 * 8);
    assert_eq!(chain::NDS_EXT_SECTION_SIZE_OLD, 11_296);
    assert_eq!(chain::nds_align(44_588 + 11_296), 55_936);
    assert_eq!(chain::NDS_EXT_OFFSET, 0xda80);
    assert_eq!(chain::nds_align(55_936 + 2048), 0xe280);
    assert_eq!(chain::NDS_REQUIRED_SIZE, 67_200);
    // GOTCHA: the _OLD counts place the section; the current counts fill it.
    assert_eq!(region::EXT_NC_COUNTERS.size, 64 * 4 * 8);
    assert_eq!(region::EXT_NC_DATA.size, 96 * 12 * 8);
    // QUIRK: the extended-core stride is 96 u64s = 768 B (95 live + 1 pad).
    assert_eq!(
        nc_counter_off(5, 0).unwrap() - nc_counter_off(4, 0).unwrap(),
        768
    );
}

// ---------------------------------------------------------------- docs/abi.md §2.3

#[test]
fn abi_2_3_header_proto_bytes_win_over_prose() {
    // docs/abi.md §2.3/§2.10/§2.2: header_proto @0xc0c820 is the bytes 6e 64 73 00 a0 86 01 00.
    let bytes = [0x6e, 0x64, 0x73, 0x00, 0xa0, 0x86, 0x01, 0x00];
    assert_eq!(Header::COMMITTED.encode(), bytes);
    assert_eq!(header::PROTO_BYTES, bytes);
    // As one little-endian u64 those bytes are 0x000186a0_0073646e; the docs/abi.md §2.3
    // prose's 0x000186a06e6473 is not what the bytes say.
    assert_eq!(HEADER_PROTO, u64::from_le_bytes(bytes));
    assert_eq!(HEADER_PROTO, 0x0001_86a0_0073_646e);
    assert_ne!(HEADER_PROTO, 0x0000_0186_a06e_6473);
    assert_eq!(&bytes[..4], b"nds\0");
    assert_eq!(i32::from_le_bytes([0xa0, 0x86, 0x01, 0x00]), 100_000);
    assert_eq!(Header::parse(&bytes), Ok(Header::COMMITTED));
    assert_eq!(header::check(HEADER_PROTO), HeaderState::Committed);
    // docs/abi.md §2.3: a freshly acquired slab reads 0 at +0 until the commit.
    assert_eq!(header::check(0), HeaderState::Zero);
    // docs/abi.md §2.3: a mismatched version is an unknown layout.
    let other = Header {
        version: 100_001,
        ..Header::COMMITTED
    };
    assert_eq!(
        header::check(other.to_word()),
        HeaderState::BadVersion { version: 100_001 }
    );
}

// ---------------------------------------------------------------- docs/abi.md §2.10

#[test]
fn abi_2_10_nd_counter_3_feature_bitmap_at_0x020() {
    assert_eq!(NdCounter::FeatureBitmap.index(), 3);
    assert_eq!(nd_counter_off(3), Ok((3 + 1) * 8));
    assert_eq!(nd_counter_off(3), Ok(0x020));
    assert_eq!(NdCounter::FeatureBitmap.off(), 0x020);
}

/// The name of the region-map row holding byte `off`: the band an NC
/// counter lives in (docs/abi.md §2.4).
fn band_of(off: usize) -> &'static str {
    region::region_at(off).map_or("-", |r| r.name)
}

#[test]
fn abi_2_10_nc_core2_infer_completed_at_0x2f8() {
    assert_eq!(NcCounter::InferCompleted.index(), 1);
    let elem = nc_counter_off(2, 1).unwrap() / 8;
    assert_eq!(band_of(elem * 8), "nc_counters");
    assert_eq!(elem, 32 + 2 * 31 + 1);
    assert_eq!(elem, 95);
    assert_eq!(nc_counter_off(2, 1), Ok(95 * 8));
    assert_eq!(NcCounter::InferCompleted.off(2), Ok(0x2f8));
}

#[test]
fn abi_2_10_nc_overflow_core1_hw_err_hbm_ue_at_0xdc88() {
    assert_eq!(NcCounter::HwErrHbmUe.index(), 32);
    let elem = nc_counter_off(1, 32).unwrap() / 8;
    assert_eq!(band_of(elem * 8), "ext_nc_counters");
    assert_eq!(elem, 6992 + 64 + (32 - 31));
    assert_eq!(elem, 7057);
    assert_eq!(nc_counter_off(1, 32), Ok(7057 * 8));
    assert_eq!(NcCounter::HwErrHbmUe.off(1), Ok(0xdc88));
}

#[test]
fn abi_2_10_ext_core7_mac_count_at_0xec68() {
    assert_eq!(NcCounter::MacCount.index(), 29);
    let elem = nc_counter_off(7, 29).unwrap() / 8;
    assert_eq!(band_of(elem * 8), "ext_nc_data");
    assert_eq!(elem, 7248 + 3 * 96 + 29);
    assert_eq!(elem, 7565);
    assert_eq!(nc_counter_off(7, 29), Ok(7565 * 8));
    assert_eq!(NcCounter::MacCount.off(7), Ok(0xec68));
}

/// A zeroed slab-sized image with records written at their region offsets,
/// so the docs/abi.md §2.10 checks read absolute addresses.
fn image_with(at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut img = vec![0u8; region::REQUIRED_SIZE];
    img[at..at + bytes.len()].copy_from_slice(bytes);
    img
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

#[test]
fn abi_2_10_process_info_record_offsets() {
    assert_eq!(region::PROCESS_INFO_OFF, 0x4e0);
    let p = ProcessInfo {
        hash: 0x1111_2222,
        framework_type: 0x3333_4444,
        tag: c_string("tag-at-0x4e8"),
        framework_version: VersionInfo {
            major: 1,
            minor: 2,
            build: 0x0a0b_0c0d,
        },
        fal_version: VersionInfo {
            major: 3,
            minor: 4,
            build: 5,
        },
        runtime_version: VersionInfo {
            major: 2,
            minor: 31,
            build: 24,
        },
    };
    let img = image_with(0x4e0, &p.encode());
    assert_eq!(u32_at(&img, 0x4e0), 0x1111_2222); // hash
    assert_eq!(u32_at(&img, 0x4e4), 0x3333_4444); // framework_type (4 B)
    assert_eq!(&img[0x4e8..0x4e8 + 12], b"tag-at-0x4e8"); // tag[32]
    assert_eq!(img[0x4e8 + 32 - 1], 0);
    assert_eq!(&img[0x508..0x510], &[1, 2, 0, 0, 0x0d, 0x0c, 0x0b, 0x0a]);
    assert_eq!(&img[0x510..0x518], &[3, 4, 0, 0, 5, 0, 0, 0]);
    assert_eq!(&img[0x518..0x520], &[2, 31, 0, 0, 24, 0, 0, 0]);
    assert_eq!(0x4e0 + process::PROCESS_INFO_SIZE, region::MODEL_BITMAP_OFF);
    assert_eq!(ProcessInfo::parse(&img[0x4e0..]), Ok(p));
    // The layout descriptor says the same.
    let l = &process::PROCESS_INFO_LAYOUT;
    for (name, abs) in [
        ("hash", 0x4e0),
        ("framework_type", 0x4e4),
        ("tag", 0x4e8),
        ("framework_version.major", 0x508),
        ("fal_version.major", 0x510),
        ("runtime_version.major", 0x518),
    ] {
        assert_eq!(l.field(name).unwrap().offset + 0x4e0, abs, "{name}");
    }
}

#[test]
fn abi_2_10_model_slot5_record_at_0x1248() {
    let rec = region::model_record_off(5).unwrap();
    assert_eq!(rec, 0x528 + 5 * 672);
    assert_eq!(rec, 0x1248);

    let mut r = ModelRecord {
        hash: 0xa1a2_a3a4,
        model_id: 0xb1b2_b3b4,
        model_node_id: 0xc1c2_c3c4,
        name: c_string("slot-five"),
        uuid: [0xd0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xdf],
        nc_index: 0xe1,
        sg_index: 0xe2,
        ..ModelRecord::EMPTY
    };
    r.usage_mut(MemLocation::Device, MemSlot::Scratchpad)
        .chunk_count = 0xdead_beef;
    r.usage_mut(MemLocation::Device, MemSlot::Scratchpad)
        .total_size = 0x0102_0304_0506_0708;
    let img = image_with(rec, &r.encode());

    assert_eq!(u32_at(&img, rec), 0xa1a2_a3a4); // rec+0x000 hash
    assert_eq!(u32_at(&img, rec + 0x004), 0xb1b2_b3b4); // model_id
    assert_eq!(u32_at(&img, rec + 0x008), 0xc1c2_c3c4); // model_node_id
    assert_eq!(&img[rec + 0x00c..rec + 0x00c + 9], b"slot-five"); // name[256]
    assert_eq!(img[rec + 0x10c], 0xd0); // uuid[16]
    assert_eq!(img[rec + 0x10c + 15], 0xdf);
    assert_eq!(img[rec + 0x11c], 0xe1); // nc_index
    assert_eq!(img[rec + 0x11d], 0xe2); // sg_index
    assert_eq!(&img[rec + 0x11e..rec + 0x120], &[0, 0]); // padding
                                                         // mem_usage[l][s] at rec + 0x120 + (l*12+s)*16.
    assert_eq!(model::MEM_USAGE_OFF, 0x120);
    for l in MemLocation::ALL {
        for s in MemSlot::ALL {
            assert_eq!(
                mem_usage_off(l, s),
                0x120 + (l as usize * 12 + s as usize) * 16
            );
        }
    }
    // mem_usage[1][3].chunk_count -> rec + 0x120 + (12+3)*16 + 8 = rec + 0x218.
    assert_eq!(
        mem_usage_off(MemLocation::Device, MemSlot::Scratchpad) + 8,
        0x218
    );
    assert_eq!(u32_at(&img, rec + 0x218), 0xdead_beef);
    assert_eq!(
        u64::from_le_bytes(img[rec + 0x210..rec + 0x218].try_into().unwrap()),
        0x0102_0304_0506_0708
    );
    assert_eq!(ModelRecord::parse(&img[rec..]), Ok(r));
    // The next slot starts right after.
    assert_eq!(region::model_record_off(6).unwrap(), rec + 672);
}

#[test]
fn abi_2_10_process_info_ext_at_0xad28_ends_0xae2c() {
    assert_eq!(region::PROCESS_INFO_EXT_OFF, 0xad28);
    let e = ProcessInfoExt {
        hash: 0x5555_6666,
        tag: c_string("ext-tag"),
    };
    let img = image_with(0xad28, &e.encode());
    assert_eq!(u32_at(&img, 0xad28), 0x5555_6666);
    assert_eq!(&img[0xad2c..0xad2c + 7], b"ext-tag");
    assert_eq!(0xad28 + process::PROCESS_INFO_EXT_SIZE, 0xae2c);
    assert_eq!(0xae2c, chain::NDS_EXT_OFFSET_OLD);
    assert_eq!(ProcessInfoExt::parse(&img[0xad28..]), Ok(e));
}

// ---------------------------------------------------------------- docs/abi.md §2.4 / §2.5

#[test]
fn abi_2_4_counter_names_and_indices_follow_the_abi() {
    let nd: Vec<(u32, &str)> = NdCounter::ALL
        .iter()
        .map(|c| (c.index(), c.name()))
        .collect();
    assert_eq!(nd[0], (0, "RUNTIME_VERSION"));
    assert_eq!(nd[3], (3, "FEATURE_BITMAP"));
    assert_eq!(nd[6], (6, "MEM_USAGE_CODE_HOST"));
    assert_eq!(nd[10], (10, "MEM_USAGE_MISC_HOST"));
    assert_eq!(nd[13], (13, "AGG_NEFF_ID"));
    assert_eq!(nd.len(), 14);
    let nc = |i: u32| NcCounter::from_index(i).map(|c| c.name());
    assert_eq!(nc(0), Some("TIME_IN_USE"));
    assert_eq!(nc(7), Some("ERR_GENERIC"));
    assert_eq!(nc(12), Some("ERR_RT"));
    assert_eq!(nc(20), Some("ERR_UNSUPPORTED_NEFF_VERSION"));
    assert_eq!(nc(22), Some("MEM_USAGE_CODE_DEVICE"));
    assert_eq!(nc(29), Some("MAC_COUNT"));
    assert_eq!(nc(30), Some("OOB"));
    assert_eq!(nc(31), Some("HW_ERR_COLLECTIVES"));
    assert_eq!(nc(35), Some("ERR_SW_NQ_OVERFLOW"));
    assert_eq!(nc(40), Some("HW_ERR_REPAIRABLE_HBM_UE"));
    assert_eq!(nc(41), None);
    assert_eq!(counters::ND_COUNTER_COUNT, 31);
    assert_eq!(counters::NC_COUNTER_COUNT, 31);
    assert_eq!(counters::EXT_NC_COUNTER_COUNT, 64);
    assert_eq!(counters::TOTAL_NC_COUNTER_COUNT, 95);
    assert_eq!(counters::MAX_CORES, 16);
    // docs/abi.md §2.4: feature bits of ND counter 3.
    assert_eq!(
        (counters::FEATURE_TEST, counters::FEATURE_MULTICORE),
        (0, 1)
    );
    // docs/abi.md §2.4: ERR_GENERIC + class.
    for class in 0..6u8 {
        assert_eq!(
            counters::error_class_counter(class).unwrap().index(),
            NcCounter::ErrGeneric.index() + u32::from(class)
        );
    }
    assert!(counters::error_class_counter(6).is_err());
}

#[test]
fn abi_2_5_nd_resolver_exhaustive() {
    for i in 0..=255u32 {
        match nd_counter_off(i) {
            Ok(off) => {
                assert!(i <= 30);
                assert_eq!(off, 8 + 8 * i as usize);
                assert!(off >= region::ND_COUNTERS.offset);
                assert!(off + 8 <= region::ND_COUNTERS.offset + region::ND_COUNTERS.size);
            }
            Err(e) => {
                assert!(i > 30);
                assert!(matches!(e, WireError::OutOfRange { limit: 31, .. }));
            }
        }
    }
    assert!(nd_counter_off(u32::MAX).is_err());
}

#[test]
fn abi_2_5_nc_resolver_exhaustive_over_256x256() {
    let mut owner: Vec<Option<(u32, u32)>> = vec![None; region::REQUIRED_SIZE];
    let mut valid = 0usize;
    for core in 0..=255u32 {
        for counter in 0..=255u32 {
            let r = nc_counter_off(core, counter);
            let should_be_valid = core <= 15 && counter <= 94;
            match r {
                Ok(off) => {
                    assert!(should_be_valid, "({core},{counter}) accepted");
                    valid += 1;
                    assert_eq!(off % 8, 0, "({core},{counter}) misaligned");
                    // The band is the one docs/abi.md §2.4/§2.5 assign to this pair.
                    let band = match (core, counter) {
                        (0..=3, 0..=30) => "nc_counters",
                        (0..=3, _) => "ext_nc_counters",
                        _ => "ext_nc_data",
                    };
                    assert_eq!(band_of(off), band, "({core},{counter})");
                    assert_eq!(band_of(off + 7), band, "({core},{counter})");
                    // docs/abi.md §2.5 formulas, in element units.
                    let c = counter as usize;
                    let p = core as usize;
                    let elem = match band {
                        "nc_counters" => 32 + p * 31 + c,
                        "ext_nc_counters" => 6992 + p * 64 + (c - 31),
                        _ => 7248 + (p - 4) * 96 + c,
                    };
                    assert_eq!(off, elem * 8);
                    for (b, o) in owner[off..off + 8].iter_mut().enumerate() {
                        assert_eq!(*o, None, "byte {:#x} shared by ({core},{counter})", off + b);
                        *o = Some((core, counter));
                    }
                }
                Err(e) => {
                    assert!(!should_be_valid, "({core},{counter}) refused: {e}");
                    assert!(matches!(e, WireError::OutOfRange { .. }));
                }
            }
        }
    }
    assert_eq!(valid, 16 * 95);
    // The three bands are covered exactly, except the one pad u64 per
    // extended core (docs/abi.md §2.2), and nothing outside them is touched.
    let covered = owner.iter().filter(|o| o.is_some()).count();
    let bands = region::NC_COUNTERS.size + region::EXT_NC_COUNTERS.size + region::EXT_NC_DATA.size;
    assert_eq!(covered, bands - 12 * 8);
    for m in 0..12 {
        let pad = region::EXT_NC_DATA_OFF + (m * 96 + 95) * 8;
        assert!(owner[pad..pad + 8].iter().all(Option::is_none));
    }
    for (b, o) in owner.iter().enumerate() {
        if o.is_some() {
            let r = region::region_at(b).unwrap().name;
            assert!(
                matches!(r, "nc_counters" | "ext_nc_counters" | "ext_nc_data"),
                "{b:#x} in {r}"
            );
        }
    }
    // Large values never wrap into range.
    for (core, counter) in [(u32::MAX, 0), (0, u32::MAX), (3, 95), (4, 95), (16, 0)] {
        assert!(nc_counter_off(core, counter).is_err());
    }
}

// ---------------------------------------------------------------- docs/abi.md §2.6 / §2.7

#[test]
fn abi_2_6_block_sizes() {
    let size = |n: &str| BLOCKS.iter().find(|b| b.name == n).map(|b| b.size);
    assert_eq!(size("nds_header"), Some(8));
    assert_eq!(size("nds_model_node_data_internal"), Some(672));
    assert_eq!(size("nds_model_node_info"), Some(284));
    assert_eq!(size("nds_model_node_mem_usage_info"), Some(384));
    assert_eq!(size("nds_mem_usage_info"), Some(16));
    assert_eq!(size("nds_process_info_internal"), Some(64));
    assert_eq!(size("nds_version_info"), Some(8));
    assert_eq!(size("nds_process_info_ext_internal"), Some(260));
    for b in BLOCKS {
        assert!(b.is_well_formed(), "{}", b.name);
    }
    // docs/abi.md §2.6: node_info at record +4, its fields 4 below the record offsets.
    let ni = &model::NODE_INFO_LAYOUT;
    assert_eq!(ni.field("uuid").unwrap().offset + 4, 0x10c);
    assert_eq!(ni.field("sg_index").unwrap().offset + 4, 0x11d);
}

#[test]
fn abi_2_6_bitmap_slot_allocation() {
    assert_eq!(model::first_free_slot(0), Some(0));
    assert_eq!(model::first_free_slot(0b0111), Some(3));
    assert_eq!(model::first_free_slot(u64::MAX), None);
}

#[test]
fn abi_2_7_version_triple_and_packed_word_agree() {
    let v = VersionInfo {
        major: 2,
        minor: 31,
        build: 24,
    };
    let w = v.packed();
    assert_eq!(w & 0xffff_ffff, 24);
    assert_eq!((w >> 32) & 0xff, 31);
    assert_eq!((w >> 40) & 0xff, 2);
    assert_eq!(w >> 48, 0);
    assert_eq!(VersionInfo::from_packed(w), v);
}

// ---------------------------------------------------------------- docs/abi.md §2.8

#[test]
fn abi_2_8_record_hash_scheme() {
    assert_eq!(fnv::FNV_BASIS, 0x811c_9dc5);
    assert_eq!(fnv::FNV_PRIME, 0x0100_0193);
    assert_eq!(fnv::fnv1a32(b""), 0x811c_9dc5);
    assert_eq!(fnv::fnv1a32(b"a"), 0xe40c_292c);
    assert_eq!(fnv::fnv1a32(b"foobar"), 0xbf9c_f968);

    let mut r = ModelRecord {
        model_id: 7,
        name: c_string("hashed"),
        ..ModelRecord::EMPTY
    };
    // The hash covers all 672 bytes with the hash word zero.
    let mut staging = r.encode();
    staging[..4].fill(0);
    let h = fnv::fnv1a32(&staging);
    let stamped = fnv::stamped(r.encode());
    assert_eq!(u32_at(&stamped, 0), h);
    assert_eq!(fnv::record_hash(&stamped), h);
    assert_eq!(fnv::verify(&stamped), fnv::HashState::Valid);
    r.hash = h;
    assert_eq!(r.encode(), stamped);
    // Any change to the body is a mismatch; a zero hash is "unpublished".
    let mut torn = stamped;
    torn[0x2a0 - 1] ^= 0x80;
    assert!(matches!(
        fnv::verify(&torn),
        fnv::HashState::Mismatch { stored, .. } if stored == h
    ));
    assert_eq!(fnv::verify(&[0u8; 672]), fnv::HashState::Unpublished);
    // Process-info and process-info-ext hash their whole 64/260 bytes.
    let p = fnv::stamped(ProcessInfo::default().encode());
    assert_eq!(u32_at(&p, 0), fnv::fnv1a32(&[0u8; 64]));
    let e = fnv::stamped(ProcessInfoExt::default().encode());
    assert_eq!(u32_at(&e, 0), fnv::fnv1a32(&[0u8; 260]));
}
