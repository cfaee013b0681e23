//! The device-side wire formats: the UDMA descriptor (docs/abi.md §1.11 "UDMA
//! descriptors") and our NQ entry (docs/abi.md §1.13).
//! Round trips, the bit positions the notes give, property tests (>= 100,000
//! random inputs per decoder: Ok or a typed error, never a panic) and insta
//! snapshots of the annotated dumps.

use xunds::prng::SplitMix64;
use xunds::wire::nq::{self, ErrorClass, Kind, NqEntry, NqError, Source};
use xunds::wire::udma::{
    self, DescFlags, LenCtrl, M2sDesc, M2sMetaDesc, MetaCtrl, MetaFlags, S2mDesc, UdmaError, View,
};

const PROPERTY_CASES: usize = 100_000;

/// docs/abi.md §1.11: len_ctrl bit positions, pinned from bytes.
#[test]
fn len_ctrl_bit_positions() {
    let c = LenCtrl {
        len: 0x34,
        ring_id: 2,
        flags: DescFlags::FIRST | DescFlags::LAST | DescFlags::INT_EN,
    };
    // 0x34 | 2<<24 | 1<<26 | 1<<27 | 1<<28
    assert_eq!(c.encode().unwrap(), 0x1E00_0034);
    assert_eq!(DescFlags::STRONG_ORDER_WR.bits(), 0x2000_0000);
    assert_eq!(DescFlags::DMB.bits(), 0x4000_0000);
    assert_eq!(LenCtrl::ring_id_of(0x1E00_0034), 2);
}

/// docs/abi.md §1.11: 65536 is encoded as 0; 0 and 65537 are refused on encode.
#[test]
fn length_encoding_limits() {
    let mk = |len| LenCtrl {
        len,
        ring_id: 0,
        flags: DescFlags::empty(),
    };
    assert_eq!(mk(65536).encode().unwrap(), 0);
    assert_eq!(LenCtrl::decode(0).unwrap().len, 65536);
    assert_eq!(mk(1).encode().unwrap(), 1);
    assert_eq!(mk(0).encode(), Err(UdmaError::BadLength { len: 0 }));
    assert_eq!(mk(65537).encode(), Err(UdmaError::BadLength { len: 65537 }));
    let bad_id = LenCtrl {
        len: 4,
        ring_id: 4,
        flags: DescFlags::empty(),
    };
    assert_eq!(bad_id.encode(), Err(UdmaError::BadRingId { ring_id: 4 }));
}

/// docs/abi.md §1.11.
#[test]
fn usual_copy_meta_ctrl() {
    assert_eq!(MetaCtrl::COPY.encode().unwrap(), 0x0108_0003);
    assert_eq!(MetaCtrl::decode(0x0108_0003).unwrap(), MetaCtrl::COPY);
    assert_eq!(
        MetaCtrl::decode(0x0000_0004),
        Err(UdmaError::ReservedBits {
            field: "meta_ctrl",
            bits: 4
        })
    );
}

#[test]
fn views_round_trip() {
    let m2s = M2sDesc::copy(52, 1, 0x8_0000_0040);
    let b = m2s.encode().unwrap();
    assert_eq!(&b[0..4], &0x0D00_0034u32.to_le_bytes());
    assert_eq!(&b[4..8], &0x0108_0003u32.to_le_bytes());
    assert_eq!(&b[8..16], &0x8_0000_0040u64.to_le_bytes());
    assert_eq!(M2sDesc::decode(&b).unwrap(), m2s);

    let s2m = S2mDesc {
        buf2_ptr_lo: 0xABCD,
        ..S2mDesc::copy(65536, 3, 0x1000_0000)
    };
    let b = s2m.encode().unwrap();
    assert_eq!(S2mDesc::decode(&b).unwrap(), s2m);

    let meta = M2sMetaDesc {
        ctrl: LenCtrl {
            len: 8,
            ring_id: 0,
            flags: DescFlags::DMB,
        },
        meta: MetaCtrl {
            op_type: 5,
            op: 7,
            flags: MetaCtrl::COPY.flags | MetaFlags::WRITE_BARRIER,
        },
        meta1: 0x1111_2222,
        meta2: 0x3333_4444,
    };
    let b = meta.encode().unwrap();
    assert_eq!(M2sMetaDesc::decode(&b).unwrap(), meta);
}

#[test]
fn view_specific_flags_are_refused() {
    let mut s2m = S2mDesc::copy(4, 1, 0);
    s2m.ctrl.flags |= DescFlags::DMB;
    assert!(matches!(
        s2m.encode(),
        Err(UdmaError::FlagNotAllowed {
            view: View::S2m,
            ..
        })
    ));
    let mut m2s = M2sDesc::copy(4, 1, 0);
    m2s.ctrl.flags |= DescFlags::STRONG_ORDER_WR;
    assert!(matches!(
        m2s.encode(),
        Err(UdmaError::FlagNotAllowed {
            view: View::M2s,
            ..
        })
    ));
    // The same bytes decoded through the other view are fine.
    m2s.ctrl.flags = DescFlags::DMB;
    let b = m2s.encode().unwrap();
    assert!(matches!(
        S2mDesc::decode(&b),
        Err(UdmaError::FlagNotAllowed {
            view: View::S2m,
            ..
        })
    ));
    assert!(M2sDesc::decode(&b).is_ok());
}

#[test]
fn truncated_and_reserved_are_typed_errors() {
    assert_eq!(
        M2sDesc::decode(&[0u8; 15]),
        Err(UdmaError::Truncated { got: 15 })
    );
    let mut b = M2sDesc::copy(4, 1, 0).encode().unwrap();
    b[2] = 0x01; // bit 16: reserved
    assert_eq!(
        M2sDesc::decode(&b),
        Err(UdmaError::ReservedBits {
            field: "len_ctrl",
            bits: 0x0001_0000
        })
    );
}

/// Every len_ctrl with reserved bits clear round-trips exactly.
#[test]
fn property_len_ctrl_round_trip() {
    let mut g = SplitMix64::new(0x5EED_0001);
    for _ in 0..PROPERTY_CASES {
        let w = g.next_u32() & !udma::LEN_CTRL_RESERVED;
        let c = LenCtrl::decode(w).unwrap();
        assert_eq!(c.encode().unwrap(), w);
    }
}

/// At least 100,000 random 0..=20-byte inputs per view: Ok or typed error, never a
/// panic; every Ok re-encodes to the same 16 bytes; dumps never panic.
#[test]
fn property_udma_decoders_never_panic() {
    let mut g = SplitMix64::new(0x5EED_0002);
    let mut buf = [0u8; 20];
    let (mut ok, mut err) = (0usize, 0usize);
    let (mut ok_meta, mut ok_s2m) = (0usize, 0usize);
    for i in 0..PROPERTY_CASES {
        let n = g.below(21) as usize;
        g.fill(&mut buf[..n]);
        // Bias half the cases towards valid control words.
        if n >= 8 && i % 2 == 0 {
            buf[2] = 0;
            buf[3] &= 0x7F;
            buf[4..8].copy_from_slice(&(g.next_u32() & udma::META_DEFINED).to_le_bytes());
        }
        let b = &buf[..n];
        match M2sDesc::decode(b) {
            Ok(d) => {
                ok += 1;
                assert_eq!(&d.encode().unwrap()[..], &b[..16]);
            }
            Err(_) => err += 1,
        }
        if let Ok(d) = M2sMetaDesc::decode(b) {
            ok_meta += 1;
            assert_eq!(&d.encode().unwrap()[..], &b[..16]);
        }
        if let Ok(d) = S2mDesc::decode(b) {
            ok_s2m += 1;
            assert_eq!(&d.encode().unwrap()[..], &b[..16]);
        }
        if i % 64 == 0 {
            let _ = udma::dump(View::M2s, b);
            let _ = udma::dump(View::S2m, b);
            let _ = udma::dump(View::M2sMeta, b);
        }
    }
    // Every view's accepting path ran often, not just the refusals.
    assert!(
        ok > 1000 && err > 1000 && ok_meta > 1000 && ok_s2m > 1000,
        "ok={ok} err={err} meta={ok_meta} s2m={ok_s2m}"
    );
}

#[test]
fn nq_entry_round_trip_and_layout() {
    for (i, kind) in [Kind::Done]
        .into_iter()
        .chain(ErrorClass::ALL.into_iter().map(Kind::Error))
        .enumerate()
    {
        let e = NqEntry {
            exec_id: 0xA0 + i as u32,
            engine: (i % 5) as u8,
            kind,
            source: if i == 3 { Source::Dma } else { Source::Engine },
            phase: i % 2 == 1,
            start_cycle: 100,
            end_cycle: 250,
        };
        let b = e.encode().unwrap();
        assert_eq!(NqEntry::decode(&b).unwrap(), e);
        assert_eq!(
            NqEntry::phase_of_word(u32::from_le_bytes(b[4..8].try_into().unwrap())),
            e.phase
        );
    }
    let e = NqEntry {
        exec_id: 7,
        engine: 2,
        kind: Kind::Error(ErrorClass::Numerical),
        source: Source::Sequencer,
        phase: true,
        start_cycle: 0xFFFF_FFF0,
        end_cycle: 0x10,
    };
    let b = e.encode().unwrap();
    assert_eq!(b[5], nq::KIND_ERROR);
    assert_eq!(b[6], 1, "class byte = ErrorClass::Numerical");
    assert_eq!(b[7], 0b101, "phase | source 2 << 1");
    assert_eq!(e.cycles(), 0x20, "wrapping latency");
    assert_eq!(nq::NqType::Notify.queue_id(3), Some(19));
    // An engine past a type's 16 ids has none (Throttle's 176th overflowed
    // a u8, a panic in debug builds).
    assert_eq!(nq::NqType::Throttle.queue_id(15), Some(95));
    assert_eq!(nq::NqType::Throttle.queue_id(16), None);
    assert_eq!(nq::NqType::Throttle.queue_id(176), None);
}

#[test]
fn nq_entry_typed_errors() {
    let good = NqEntry {
        exec_id: 1,
        engine: 0,
        kind: Kind::Done,
        source: Source::Engine,
        phase: true,
        start_cycle: 0,
        end_cycle: 1,
    }
    .encode()
    .unwrap();
    let with = |off: usize, v: u8| {
        let mut b = good;
        b[off] = v;
        NqEntry::decode(&b)
    };
    assert_eq!(
        NqEntry::decode(&[0u8; 3]),
        Err(NqError::Truncated { got: 3 })
    );
    assert_eq!(with(4, 5), Err(NqError::BadEngine(5)));
    assert_eq!(with(5, 0), Err(NqError::BadKind(0)));
    assert_eq!(with(5, 3), Err(NqError::BadKind(3)));
    assert_eq!(with(6, 1), Err(NqError::BadClass { kind: 1, class: 1 }));
    let mut b = good;
    b[5] = nq::KIND_ERROR;
    b[6] = 6;
    assert_eq!(
        NqEntry::decode(&b),
        Err(NqError::BadClass { kind: 2, class: 6 })
    );
    assert_eq!(with(7, 0x10 | 1), Err(NqError::ReservedFlags(0x10)));
    assert_eq!(with(7, 3 << 1), Err(NqError::BadSource(3)));
    let bad = NqEntry {
        engine: 9,
        ..NqEntry::decode(&good).unwrap()
    };
    assert_eq!(bad.encode(), Err(NqError::BadEngine(9)));
}

#[test]
fn property_nq_decoder_never_panics() {
    let mut g = SplitMix64::new(0x5EED_0003);
    let mut buf = [0u8; 20];
    let (mut ok, mut err) = (0usize, 0usize);
    for i in 0..PROPERTY_CASES {
        let n = g.below(21) as usize;
        g.fill(&mut buf[..n]);
        if n >= 8 && i % 2 == 0 {
            buf[4] %= 6;
            buf[5] %= 3;
            buf[6] %= 7;
            buf[7] &= 0x07;
        }
        match NqEntry::decode(&buf[..n]) {
            Ok(e) => {
                ok += 1;
                assert_eq!(&e.encode().unwrap()[..], &buf[..16]);
            }
            Err(_) => err += 1,
        }
        if i % 64 == 0 {
            let _ = nq::dump(&buf[..n]);
        }
    }
    assert!(ok > 1000 && err > 1000, "ok={ok} err={err}");
}

#[test]
fn snapshot_udma_m2s_dump() {
    let b = M2sDesc::copy(52, 1, 0x8_0000_0000).encode().unwrap();
    insta::assert_snapshot!(udma::dump(View::M2s, &b));
}

#[test]
fn snapshot_udma_m2s_meta_dump() {
    let d = M2sMetaDesc {
        ctrl: LenCtrl {
            len: 4,
            ring_id: 2,
            flags: DescFlags::FIRST | DescFlags::LAST | DescFlags::DMB,
        },
        meta: MetaCtrl::COPY,
        meta1: 0x0000_0001,
        meta2: 0xC0FF_EE00,
    };
    insta::assert_snapshot!(udma::dump(View::M2sMeta, &d.encode().unwrap()));
}

#[test]
fn snapshot_udma_s2m_dump() {
    let d = S2mDesc {
        ctrl: LenCtrl {
            len: 4,
            ring_id: 3,
            flags: DescFlags::FIRST | DescFlags::LAST | DescFlags::STRONG_ORDER_WR,
        },
        buf2_ptr_lo: 0,
        dst: 0x1000_0010,
    };
    insta::assert_snapshot!(udma::dump(View::S2m, &d.encode().unwrap()));
}

#[test]
fn snapshot_nq_entry_dump() {
    let e = NqEntry {
        exec_id: 42,
        engine: 1,
        kind: Kind::Error(ErrorClass::Model),
        source: Source::Engine,
        phase: true,
        start_cycle: 1000,
        end_cycle: 1450,
    };
    insta::assert_snapshot!(nq::dump(&e.encode().unwrap()));
}
