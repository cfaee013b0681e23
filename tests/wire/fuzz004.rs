//! Property tests for the docs/abi.md §2 decoders (SplitMix64-driven, no proptest):
//! for every decoder, at least 100,000 inputs (random bytes of random
//! lengths, every truncation of a valid encoding, all-0xFF, all-zero) give a
//! value or a typed error, never a panic; and the value is exactly what the
//! layout says (re-encoding reproduces every field byte and zeroes padding).
//! Round trips parse(encode(x)) == x for random x.

use xunds::prng::SplitMix64;
use xunds::wire::layout::{annotated_dump, Block};
use xunds::wire::nds::counters::{self, nc_counter_off, nd_counter_off, NcCounter, NdCounter};
use xunds::wire::nds::header::{self, Header, HeaderState};
use xunds::wire::nds::model::{self, MemUsageInfo, ModelRecord};
use xunds::wire::nds::process::{self, ProcessInfo, ProcessInfoExt, VersionInfo};
use xunds::wire::nds::{c_str_lossy, fnv, region, version};
use xunds::wire::WireError;

/// Inputs per decoder.
const CASES: usize = 100_000;
/// Round trips per type.
const ROUND_TRIPS: usize = 20_000;

/// A random byte string of length `0..=max_len`.
fn random_bytes(rng: &mut SplitMix64, buf: &mut Vec<u8>, max_len: usize) {
    let len = rng.below(max_len as u64 + 1) as usize;
    buf.clear();
    buf.resize(len, 0);
    // Mostly random, sometimes structured (all one byte) to reach edge values.
    match rng.below(8) {
        0 => buf.fill(0xff),
        1 => {}
        _ => rng.fill(buf),
    }
}

/// Drive `decode` over >= CASES inputs for a block of `size` bytes whose
/// valid encoding is `valid`, and check every Ok against `layout`.
fn fuzz_decoder<T>(
    seed: u64,
    layout: &Block,
    valid: &[u8],
    decode: impl Fn(&[u8]) -> Result<T, WireError>,
    encode: impl Fn(&T) -> Vec<u8>,
) {
    let size = layout.size;
    assert_eq!(valid.len(), size);
    let mut rng = SplitMix64::new(seed);
    let mut buf = Vec::with_capacity(2 * size + 1);
    let mut is_field = vec![false; size];
    for f in layout.fields {
        is_field[f.offset..f.end()].fill(true);
    }
    let mut n = 0usize;
    // `dump`: also render the annotated dump (every edge input, and a sample
    // of the random ones: formatting dominates the run time otherwise).
    let check = |bytes: &[u8], dump: bool| {
        if dump {
            let _ = annotated_dump(layout, bytes);
        }
        match decode(bytes) {
            Ok(v) => {
                assert!(
                    bytes.len() >= size,
                    "{}: accepted {} bytes",
                    layout.name,
                    bytes.len()
                );
                let enc = encode(&v);
                assert_eq!(enc.len(), size);
                // Every field byte survives; every padding byte is zeroed.
                for i in 0..size {
                    if is_field[i] {
                        assert_eq!(enc[i], bytes[i], "{} byte {i:#x}", layout.name);
                    } else {
                        assert_eq!(enc[i], 0, "{} padding {i:#x}", layout.name);
                    }
                }
            }
            Err(e) => {
                assert_eq!(
                    e,
                    WireError::Truncated {
                        block: layout.name,
                        need: size,
                        got: bytes.len()
                    }
                );
            }
        }
    };
    // Every truncation (and the whole) of a valid encoding.
    for len in 0..=size {
        check(&valid[..len], true);
        n += 1;
    }
    // All-0xFF and all-zero, short, exact and long.
    for len in [0, 1, size - 1, size, size + 1, 2 * size] {
        check(&vec![0xff; len], true);
        check(&vec![0; len], true);
        n += 2;
    }
    while n < CASES {
        random_bytes(&mut rng, &mut buf, 2 * size);
        check(&buf, n % 32 == 0);
        n += 1;
    }
    assert!(n >= CASES);
}

fn rand_arr<const N: usize>(rng: &mut SplitMix64) -> [u8; N] {
    let mut a = [0u8; N];
    rng.fill(&mut a);
    a
}

fn rand_version(rng: &mut SplitMix64) -> VersionInfo {
    VersionInfo {
        major: rng.next_u32() as u8,
        minor: rng.next_u32() as u8,
        build: rng.next_u32(),
    }
}

fn rand_usage(rng: &mut SplitMix64) -> MemUsageInfo {
    MemUsageInfo {
        total_size: rng.next_u64(),
        chunk_count: rng.next_u32(),
    }
}

fn rand_model(rng: &mut SplitMix64) -> ModelRecord {
    let mut r = ModelRecord {
        hash: rng.next_u32(),
        model_id: rng.next_u32(),
        model_node_id: rng.next_u32(),
        name: rand_arr(rng),
        uuid: rand_arr(rng),
        nc_index: rng.next_u32() as u8,
        sg_index: rng.next_u32() as u8,
        ..ModelRecord::EMPTY
    };
    for row in &mut r.mem_usage {
        for cell in row {
            *cell = rand_usage(rng);
        }
    }
    r
}

fn rand_process(rng: &mut SplitMix64) -> ProcessInfo {
    ProcessInfo {
        hash: rng.next_u32(),
        framework_type: rng.next_u32(),
        tag: rand_arr(rng),
        framework_version: rand_version(rng),
        fal_version: rand_version(rng),
        runtime_version: rand_version(rng),
    }
}

#[test]
fn fuzz_header() {
    fuzz_decoder(
        0x004_0001,
        &header::LAYOUT,
        &Header::COMMITTED.encode(),
        Header::parse,
        |h| h.encode().to_vec(),
    );
    // check() is total over random words.
    let mut rng = SplitMix64::new(0x004_0002);
    for _ in 0..CASES {
        let w = rng.next_u64();
        let s = header::check(w);
        assert_eq!(s == HeaderState::Committed, w == header::HEADER_PROTO);
        assert_eq!(Header::from_word(w).to_word(), w);
    }
}

#[test]
fn fuzz_model_record() {
    let mut rng = SplitMix64::new(0x004_0003);
    let valid = fnv::stamped(rand_model(&mut rng).encode());
    fuzz_decoder(
        0x004_0004,
        &model::LAYOUT,
        &valid,
        ModelRecord::parse,
        |r| r.encode().to_vec(),
    );
}

#[test]
fn fuzz_mem_usage_info() {
    let valid = MemUsageInfo {
        total_size: 1 << 40,
        chunk_count: 3,
    }
    .encode();
    fuzz_decoder(
        0x004_0005,
        &model::MEM_USAGE_LAYOUT,
        &valid,
        MemUsageInfo::parse,
        |m| m.encode().to_vec(),
    );
}

#[test]
fn fuzz_process_info() {
    let mut rng = SplitMix64::new(0x004_0006);
    let valid = fnv::stamped(rand_process(&mut rng).encode());
    fuzz_decoder(
        0x004_0007,
        &process::PROCESS_INFO_LAYOUT,
        &valid,
        ProcessInfo::parse,
        |p| p.encode().to_vec(),
    );
}

#[test]
fn fuzz_version_info() {
    let valid = VersionInfo {
        major: 2,
        minor: 31,
        build: 24,
    }
    .encode();
    fuzz_decoder(
        0x004_0008,
        &process::VERSION_INFO_LAYOUT,
        &valid,
        VersionInfo::parse,
        |v| v.encode().to_vec(),
    );
}

#[test]
fn fuzz_process_info_ext() {
    let mut rng = SplitMix64::new(0x004_0009);
    let valid = fnv::stamped(
        ProcessInfoExt {
            hash: 0,
            tag: rand_arr(&mut rng),
        }
        .encode(),
    );
    fuzz_decoder(
        0x004_000a,
        &process::PROCESS_INFO_EXT_LAYOUT,
        &valid,
        ProcessInfoExt::parse,
        |e| e.encode().to_vec(),
    );
}

#[test]
fn fuzz_hash_verify_and_c_strings() {
    let mut rng = SplitMix64::new(0x004_000b);
    let mut buf = Vec::new();
    for i in 0..CASES {
        random_bytes(&mut rng, &mut buf, 700);
        let state = fnv::verify(&buf);
        let stored = fnv::stored_hash(&buf);
        match state {
            fnv::HashState::Unpublished => assert_eq!(stored, 0),
            fnv::HashState::Valid => assert_eq!(stored, fnv::record_hash(&buf)),
            fnv::HashState::Mismatch {
                stored: s,
                computed,
            } => {
                assert_eq!(s, stored);
                assert_ne!(s, computed);
            }
        }
        let _ = c_str_lossy(&buf);
        // Stamping any record of >= 4 bytes makes it verify (unless its hash
        // happens to be 0, which then reads as unpublished).
        if i % 8 == 0 {
            let h = fnv::stamp(&mut buf);
            let expect = if buf.len() < 4 || h == 0 {
                fnv::HashState::Unpublished
            } else {
                fnv::HashState::Valid
            };
            assert_eq!(fnv::verify(&buf), expect);
        }
    }
}

#[test]
fn fuzz_index_resolvers() {
    let mut rng = SplitMix64::new(0x004_000c);
    for _ in 0..CASES {
        // Mix small values (near the edges) with arbitrary u32s.
        let pick = |rng: &mut SplitMix64| {
            if rng.chance(1, 2) {
                rng.below(130) as u32
            } else {
                rng.next_u32()
            }
        };
        let (a, b) = (pick(&mut rng), pick(&mut rng));
        match nc_counter_off(a, b) {
            Ok(off) => {
                assert!(a < 16 && b < 95);
                assert!(off % 8 == 0 && off + 8 <= region::REQUIRED_SIZE);
            }
            Err(WireError::OutOfRange { .. }) => assert!(a >= 16 || b >= 95),
            Err(e) => panic!("unexpected {e}"),
        }
        match nd_counter_off(a) {
            Ok(off) => assert!(a < 31 && off == 8 + 8 * a as usize),
            Err(e) => assert!(a >= 31 && matches!(e, WireError::OutOfRange { .. })),
        }
        assert_eq!(region::model_record_off(a as usize).is_ok(), a < 64);
        assert_eq!(model::slot_bit(a as usize).is_ok(), a < 64);
        assert_eq!(
            counters::error_class_counter(a as u8).is_ok(),
            (a as u8) < 6
        );
        assert_eq!(NdCounter::from_index(a).is_some(), a < 14);
        assert_eq!(NcCounter::from_index(a).is_some(), a < 41);
        let w = rng.next_u64();
        let (ma, mi, bu) = version::unpack_version(w);
        assert_eq!(
            version::pack_version(ma, mi, bu),
            w & !version::RESERVED_MASK
        );
        assert_eq!(
            version::unpack_version_strict(w).is_ok(),
            w & version::RESERVED_MASK == 0
        );
        if let Some(s) = model::first_free_slot(w) {
            assert_eq!(w & (1 << s), 0);
            assert_eq!(w & ((1u64 << s) - 1), (1u64 << s) - 1);
        } else {
            assert_eq!(w, u64::MAX);
        }
    }
}

#[test]
fn round_trips() {
    let mut rng = SplitMix64::new(0x004_000d);
    for _ in 0..ROUND_TRIPS {
        let m = rand_model(&mut rng);
        assert_eq!(ModelRecord::parse(&m.encode()), Ok(m));
        let p = rand_process(&mut rng);
        assert_eq!(ProcessInfo::parse(&p.encode()), Ok(p));
        let e = ProcessInfoExt {
            hash: rng.next_u32(),
            tag: rand_arr(&mut rng),
        };
        assert_eq!(ProcessInfoExt::parse(&e.encode()), Ok(e));
        let v = rand_version(&mut rng);
        assert_eq!(VersionInfo::parse(&v.encode()), Ok(v));
        assert_eq!(VersionInfo::from_packed(v.packed()), v);
        let u = rand_usage(&mut rng);
        assert_eq!(MemUsageInfo::parse(&u.encode()), Ok(u));
        let h = Header::from_word(rng.next_u64());
        assert_eq!(Header::parse(&h.encode()), Ok(h));
        // Stamped encodings verify and parse back with the stamped hash.
        let s = fnv::stamped(m.encode());
        assert_eq!(fnv::verify(&s), fnv::HashState::Valid);
        let back = ModelRecord::parse(&s).unwrap();
        assert_eq!(
            back,
            ModelRecord {
                hash: back.hash,
                ..m
            }
        );
        assert_eq!(back.hash, fnv::record_hash(&s));
    }
}

#[test]
fn emit_into_buffers_of_any_length() {
    let mut rng = SplitMix64::new(0x004_000e);
    for _ in 0..ROUND_TRIPS {
        let m = rand_model(&mut rng);
        let mut buf = vec![0xa5u8; rng.below(2 * model::RECORD_SIZE as u64) as usize];
        match m.emit(&mut buf) {
            Ok(()) => {
                assert!(buf.len() >= model::RECORD_SIZE);
                assert_eq!(ModelRecord::parse(&buf), Ok(m));
                assert!(buf[model::RECORD_SIZE..].iter().all(|&b| b == 0xa5));
            }
            Err(e) => {
                assert!(matches!(e, WireError::Truncated { need: 672, .. }));
                assert!(buf.iter().all(|&b| b == 0xa5), "short emit wrote bytes");
            }
        }
        let p = rand_process(&mut rng);
        let mut buf = vec![0u8; rng.below(130) as usize];
        assert_eq!(p.emit(&mut buf).is_ok(), buf.len() >= 64);
        let e = ProcessInfoExt {
            hash: rng.next_u32(),
            tag: rand_arr(&mut rng),
        };
        let mut buf = vec![0u8; rng.below(530) as usize];
        assert_eq!(e.emit(&mut buf).is_ok(), buf.len() >= 260);
        let mut buf = vec![0u8; rng.below(17) as usize];
        assert_eq!(Header::COMMITTED.emit(&mut buf).is_ok(), buf.len() >= 8);
        assert_eq!(
            rand_version(&mut rng).emit(&mut buf).is_ok(),
            buf.len() >= 8
        );
        assert_eq!(rand_usage(&mut rng).emit(&mut buf).is_ok(), buf.len() >= 16);
    }
}
