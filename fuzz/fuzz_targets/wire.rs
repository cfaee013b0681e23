//! Every wire decoder over untrusted bytes: the first input byte picks the
//! decoder, the rest is its input. Never a panic; an accepted input decodes
//! again, from its own encoding, to the same value; every block's annotated
//! dump renders any input; a stamped record verifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xunds::wire::device_request::DeviceExecRequest;
use xunds::wire::exec_slot::ExecSlot;
use xunds::wire::layout::annotated_dump;
use xunds::wire::nds::header::{self, Header};
use xunds::wire::nds::model::{MemUsageInfo, ModelRecord};
use xunds::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo};
use xunds::wire::nds::{c_str_lossy, fnv};
use xunds::wire::nq::NqEntry;
use xunds::wire::seq_id::{SeqId, XuId};
use xunds::wire::udma::{LenCtrl, M2sDesc, M2sMetaDesc, MetaCtrl, S2mDesc};
use xunds::wire::work_item::{InferResp, TpbExecutionInfo};
use xunds::wire::xu_queue::XuQueueHeader;

/// `parse` the input; when it is accepted, its encoding parses back to it.
macro_rules! round_trip {
    ($b:expr, $parse:expr, $encode:expr) => {
        if let Ok(v) = $parse($b) {
            let enc = $encode(&v);
            assert_eq!($parse(&enc[..]).ok(), Some(v), "{}", stringify!($parse));
        }
    };
}

/// A 4-byte word of the input (zero-padded).
fn word32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    let n = b.len().min(4);
    w[..n].copy_from_slice(&b[..n]);
    u32::from_le_bytes(w)
}

fn word64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = b.len().min(8);
    w[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(w)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, b)) = data.split_first() else {
        return;
    };
    match pick % 24 {
        0 => round_trip!(b, XuQueueHeader::parse, XuQueueHeader::encode),
        1 => round_trip!(b, ExecSlot::parse, ExecSlot::encode),
        2 => round_trip!(b, SeqId::parse, |v: &SeqId| v.encode()),
        3 => round_trip!(b, XuId::parse, |v: &XuId| v.encode()),
        4 => round_trip!(b, DeviceExecRequest::parse, DeviceExecRequest::encode),
        5 => {
            if let Ok((v, cc)) = DeviceExecRequest::parse_buffer(b) {
                let enc = v.encode_buffer(cc);
                assert_eq!(DeviceExecRequest::parse_buffer(&enc).ok(), Some((v, cc)));
            }
        }
        6 => {
            // Emitting the parsed body over its own buffer changes no byte.
            if let Ok((v, _)) = DeviceExecRequest::parse_buffer(b) {
                let mut buf = b.to_vec();
                v.emit(&mut buf).expect("the buffer holds a body");
                assert_eq!(buf, b);
            }
        }
        7 => round_trip!(b, InferResp::parse, InferResp::encode),
        8 => round_trip!(b, TpbExecutionInfo::parse, TpbExecutionInfo::encode),
        9 => round_trip!(b, NqEntry::decode, |v: &NqEntry| v
            .encode()
            .expect("a decoded entry encodes")),
        10 => round_trip!(b, M2sDesc::decode, |v: &M2sDesc| v
            .encode()
            .expect("a decoded descriptor encodes")),
        11 => round_trip!(b, M2sMetaDesc::decode, |v: &M2sMetaDesc| v
            .encode()
            .expect("a decoded descriptor encodes")),
        12 => round_trip!(b, S2mDesc::decode, |v: &S2mDesc| v
            .encode()
            .expect("a decoded descriptor encodes")),
        13 => {
            let w = word32(b);
            if let Ok(c) = LenCtrl::decode(w) {
                let again = c.encode().expect("a decoded control word encodes");
                assert_eq!(LenCtrl::decode(again).ok(), Some(c));
            }
            if let Ok(c) = MetaCtrl::decode(w) {
                let again = c.encode().expect("a decoded control word encodes");
                assert_eq!(MetaCtrl::decode(again).ok(), Some(c));
            }
        }
        14 => round_trip!(b, Header::parse, Header::encode),
        15 => {
            let w = word64(b);
            assert_eq!(
                header::check(w) == header::HeaderState::Committed,
                w == header::HEADER_PROTO
            );
            assert_eq!(Header::from_word(w).to_word(), w);
        }
        16 => round_trip!(b, ModelRecord::parse, ModelRecord::encode),
        17 => round_trip!(b, MemUsageInfo::parse, MemUsageInfo::encode),
        18 => round_trip!(b, VersionInfo::parse, VersionInfo::encode),
        19 => round_trip!(b, ProcessInfo::parse, ProcessInfo::encode),
        20 => round_trip!(b, ProcessInfoExt::parse, ProcessInfoExt::encode),
        21 => {
            let _ = fnv::verify(b);
            let mut r = b.to_vec();
            fnv::stamp(&mut r);
            if r.len() >= 4 && r[..4] != [0; 4] {
                assert_eq!(fnv::verify(&r), fnv::HashState::Valid);
            }
        }
        22 => {
            let _ = c_str_lossy(b);
        }
        _ => {
            // Every block's annotated dump, over any bytes.
            let blocks: Vec<_> = xunds::wire::all_blocks().collect();
            if let Some((&k, rest)) = b.split_first() {
                let _ = annotated_dump(blocks[usize::from(k) % blocks.len()], rest);
            }
        }
    }
});
