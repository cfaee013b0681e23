//! docs/abi.md §2, the NDS wire format: one fixed 67,200-byte region map at the head
//! of a 256 KiB slab, shared by the kernel, the producing runtime and
//! read-only monitors.
//!
//! | module | what it owns | docs/abi.md §2 |
//! |---|---|---|
//! | [`region`] | the region map: every start and size, the `#define` chain and the EXT alignment hinge, model slot offsets | docs/abi.md §2.2 |
//! | [`header`] | `nds_header` (`"nds\0"` + version 100000) and the single-u64 commit/check proto | docs/abi.md §2.3 |
//! | [`counters`] | ND/NC/EXT counter indices as typed enums, feature bits, the ND resolver and the three-band NC resolver | docs/abi.md §2.4, §2.5 |
//! | [`model`] | the 672-byte `nds_model_node_data_internal` record and its 2 x 12 mem-usage grid | docs/abi.md §2.6 |
//! | [`process`] | `nds_process_info_internal` (64 B), `nds_version_info` (8 B), `nds_process_info_ext_internal` (260 B) | docs/abi.md §2.7 |
//! | [`version`] | the packed version word of ND counters 0..2 | docs/abi.md §2.4 |
//! | [`fnv`] | FNV-1a-32 and the record hash stamp/verify scheme | docs/abi.md §2.8 |
//!
//! Like the rest of [`crate::wire`], nothing here touches shared memory: the
//! types encode to and parse from byte buffers the caller owns (a private
//! staging copy of a record, never a slice over the live slab). The datastore
//! protocol ([`crate::nds`]) copies words in and out of the mapping and uses
//! these modules for every offset and every byte.
//!
//! Every offset and size the seed states is a `const` assert, checked three
//! ways where the seed gives three sources: the hard number, the C macro chain
//! re-evaluated in Rust ([`region::chain`]), and the C layout rule applied to
//! each record's declared types (LP64, the ABI's only data model).

pub mod counters;
pub mod fnv;
pub mod header;
pub mod model;
pub mod process;
pub mod region;
pub mod version;

use super::layout::{Block, Field};
#[cfg(feature = "std")]
use std::borrow::Cow;

/// Every NDS block layout, in region-map order, with the sub-structs after
/// the record that contains them.
pub const BLOCKS: &[Block] = &[
    header::LAYOUT,
    model::LAYOUT,
    model::NODE_INFO_LAYOUT,
    model::MEM_USAGE_GRID_LAYOUT,
    model::MEM_USAGE_LAYOUT,
    process::PROCESS_INFO_LAYOUT,
    process::VERSION_INFO_LAYOUT,
    process::PROCESS_INFO_EXT_LAYOUT,
];

/// The region map rows (docs/abi.md §2.2), in offset order, contiguous from 0 to
/// [`region::REQUIRED_SIZE`].
pub const REGIONS: &[Field] = region::MAP;

/// The text of a fixed-size C `char` array: the bytes up to the first NUL (or
/// all of them when there is none), with invalid UTF-8 replaced.
#[cfg(feature = "std")]
pub fn c_str_lossy(bytes: &[u8]) -> Cow<'_, str> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
}

/// A fixed-size C `char` array holding `s`: at most `N - 1` bytes of it (cut
/// at a byte boundary, like `strncpy` followed by a forced NUL), the rest
/// zero. `N == 0` gives an empty array.
pub fn c_string<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let n = s.len().min(N.saturating_sub(1));
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings_round_trip_and_truncate() {
        let a: [u8; 8] = c_string("abc");
        assert_eq!(&a, b"abc\0\0\0\0\0");
        assert_eq!(c_str_lossy(&a), "abc");
        let b: [u8; 4] = c_string("abcdef");
        assert_eq!(&b, b"abc\0");
        let z: [u8; 0] = c_string("x");
        assert_eq!(c_str_lossy(&z), "");
        assert_eq!(c_str_lossy(b"no-nul"), "no-nul");
        assert_eq!(c_str_lossy(&[0xff, b'a', 0, b'b']), "\u{fffd}a");
    }

    #[test]
    fn blocks_are_well_formed_and_uniquely_named() {
        for (i, b) in BLOCKS.iter().enumerate() {
            assert!(b.is_well_formed(), "{}", b.name);
            for other in &BLOCKS[i + 1..] {
                assert_ne!(b.name, other.name);
            }
        }
    }
}
