//! `nds_header` (docs/abi.md §2.3): the first 8 bytes of the slab, `"nds\0"` then
//! the `int` format version 100000, written and checked as one u64.
//!
//! The producer commits the header with a single 8-byte store of
//! [`HEADER_PROTO`]; readers compare the whole word ([`check`]). The kernel
//! only zeroes the slab, so a word of 0 means "not committed yet" (or released).
//!
//! Seed discrepancy (bytes win): docs/abi.md §2.3's prose gives the committed word as
//! `0x000186a06e6473`, but the bytes it quotes from `header_proto` @0xc0c820,
//! `6e 64 73 00 a0 86 01 00` (also docs/abi.md §2.10 and §2.2), read as a little-endian u64 are
//! `0x000186a0_0073646e`. The prose number is the version (0x186a0) followed
//! by the magic's characters in reading order (6e 64 73) with the NUL dropped;
//! stored little-endian it would be `73 64 6e a0 86 01 00 00`, which is not
//! what the binary holds.
//! [`HEADER_PROTO`] is derived from the bytes.

use super::region::{self, chain};

wire_block! {
    /// `nds_header`: the header's two fields, raw (any bytes parse;
    /// [`check`] judges them).
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::nds::header::{self, Header, HeaderState, HEADER_PROTO};
    ///
    /// let bytes = Header::COMMITTED.encode();
    /// assert_eq!(&bytes, b"nds\0\xa0\x86\x01\x00");
    /// assert_eq!(u64::from_le_bytes(bytes), HEADER_PROTO);
    /// assert_eq!(Header::parse(&bytes).unwrap().state(), HeaderState::Committed);
    /// assert_eq!(header::check(0), HeaderState::Zero); // not committed yet
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Header: "nds_header", SIZE = 8, LAYOUT, off {
        /// `char signature[4]`: `"nds\0"` when committed.
        seed SIGNATURE "signature" magic: [u8; 4] = 0, 4;
        /// `int version`: 100000 when committed.
        seed VERSION version: i32 = 4, 4;
    }
}

/// The 4-byte signature, `"nds\0"`.
pub const MAGIC: [u8; 4] = *b"nds\0";
/// The layout's format version (`int`, 100000 = 0x186a0).
pub const VERSION: i32 = 100_000;
/// The committed header as bytes (`header_proto` @0xc0c820, docs/abi.md §2.3, §2.10, §2.2).
pub const PROTO_BYTES: [u8; SIZE] = [0x6e, 0x64, 0x73, 0x00, 0xa0, 0x86, 0x01, 0x00];
/// The committed header as the single little-endian u64 the producer stores
/// and readers compare: `0x000186a0_0073646e` (from [`PROTO_BYTES`]; see the
/// module doc for the prose discrepancy).
pub const HEADER_PROTO: u64 = u64::from_le_bytes(PROTO_BYTES);

const _: () = assert!(HEADER_PROTO == 0x0001_86a0_0073_646e);
const _: () = assert!(VERSION == 0x186a0);
const _: () = assert!(Header::COMMITTED.to_word() == HEADER_PROTO);

// The header fills its region-map row (docs/abi.md §2.2).
const _: () = assert!(SIZE == chain::NDS_HEADER_SIZE && region::HEADER_OFF == 0);

impl Header {
    /// The header the producer commits.
    pub const COMMITTED: Self = Self {
        magic: MAGIC,
        version: VERSION,
    };

    /// The header as the single little-endian u64 at slab +0.
    pub const fn to_word(&self) -> u64 {
        u32::from_le_bytes(self.magic) as u64 | (self.version as u32 as u64) << 32
    }

    /// The header stored as the u64 `word`.
    pub const fn from_word(word: u64) -> Self {
        Self {
            magic: (word as u32).to_le_bytes(),
            version: (word >> 32) as i32,
        }
    }

    /// What a reader should make of this header.
    pub const fn state(&self) -> HeaderState {
        check(self.to_word())
    }
}

/// A reader's verdict on the header word (`nds_check_header`, docs/abi.md §2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeaderState {
    /// The word equals [`HEADER_PROTO`]: a committed NDS of this layout.
    Committed,
    /// All zero: the kernel's memset, not committed yet (the reader retries
    /// once after 500 us) or released.
    Zero,
    /// Non-zero and the signature is not `"nds\0"`: not an NDS.
    BadMagic,
    /// The signature matches but the version is not 100000: an unknown
    /// layout; a reader must not parse the regions (docs/abi.md §2.3).
    BadVersion {
        /// The version found.
        version: i32,
    },
}

/// Judge the header word read from slab +0.
pub const fn check(word: u64) -> HeaderState {
    if word == HEADER_PROTO {
        return HeaderState::Committed;
    }
    if word == 0 {
        return HeaderState::Zero;
    }
    match Header::from_word(word) {
        Header {
            magic: MAGIC,
            version,
        } => HeaderState::BadVersion { version },
        _ => HeaderState::BadMagic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::WireError;

    #[test]
    fn check_classifies() {
        assert_eq!(check(HEADER_PROTO), HeaderState::Committed);
        assert_eq!(check(0), HeaderState::Zero);
        assert_eq!(check(u64::MAX), HeaderState::BadMagic);
        // The prose's value (NUL dropped) is not a committed header.
        assert_eq!(check(0x0000_0186_a06e_6473), HeaderState::BadMagic);
        let v2 = Header {
            magic: MAGIC,
            version: 100_001,
        };
        assert_eq!(
            check(v2.to_word()),
            HeaderState::BadVersion { version: 100_001 }
        );
        assert_eq!(v2.state(), HeaderState::BadVersion { version: 100_001 });
        // The word is the encoding, read as one little-endian u64.
        assert_eq!(v2.to_word(), u64::from_le_bytes(v2.encode()));
        assert_eq!(Header::from_word(v2.to_word()), v2);
    }

    #[test]
    fn parse_short_is_truncated() {
        assert_eq!(
            Header::parse(&PROTO_BYTES[..7]),
            Err(WireError::Truncated {
                block: "nds_header",
                need: 8,
                got: 7
            })
        );
        assert_eq!(Header::parse(&PROTO_BYTES), Ok(Header::COMMITTED));
    }
}
