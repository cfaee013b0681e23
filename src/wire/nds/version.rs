//! The packed version word of ND counters 0..=2 (`RUNTIME_VERSION`,
//! `FRAMEWORK_VERSION`, `FAL_VERSION`; docs/abi.md §2.4): build in bits 31:0,
//! minor in 39:32, major in 47:40, bits 63:48 reserved (zero when we pack).
//!
//! This is the machine-aggregated form monitors read numerically; the same
//! triple is also published as an `nds_version_info` inside process-info
//! (docs/abi.md §2.7), see [`super::process::VersionInfo`].

use super::super::WireError;

/// Bit position of `build` (32 bits).
pub const BUILD_SHIFT: u32 = 0;
/// Bit position of `minor` (8 bits).
pub const MINOR_SHIFT: u32 = 32;
/// Bit position of `major` (8 bits).
pub const MAJOR_SHIFT: u32 = 40;
/// The reserved bits 63:48.
pub const RESERVED_MASK: u64 = 0xffff_0000_0000_0000;

/// Pack a version triple into the ND counter word.
pub const fn pack_version(major: u8, minor: u8, build: u32) -> u64 {
    ((major as u64) << MAJOR_SHIFT)
        | ((minor as u64) << MINOR_SHIFT)
        | ((build as u64) << BUILD_SHIFT)
}

/// Unpack `(major, minor, build)`, ignoring the reserved bits 63:48.
pub const fn unpack_version(word: u64) -> (u8, u8, u32) {
    (
        (word >> MAJOR_SHIFT) as u8,
        (word >> MINOR_SHIFT) as u8,
        (word >> BUILD_SHIFT) as u32,
    )
}

/// Unpack `(major, minor, build)`, refusing a word with reserved bits set.
pub fn unpack_version_strict(word: u64) -> Result<(u8, u8, u32), WireError> {
    if word & RESERVED_MASK != 0 {
        return Err(WireError::invalid(
            "nd version word",
            "reserved[63:48]",
            word,
        ));
    }
    Ok(unpack_version(word))
}

const _: () = assert!(pack_version(0xff, 0xff, u32::MAX) == !RESERVED_MASK);
const _: () = assert!(pack_version(2, 31, 24) == 0x0000_021f_0000_0018);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack() {
        assert_eq!(pack_version(1, 2, 3), (1 << 40) | (2 << 32) | 3);
        assert_eq!(unpack_version(pack_version(2, 31, 24)), (2, 31, 24));
        assert_eq!(
            unpack_version(RESERVED_MASK | pack_version(9, 8, 7)),
            (9, 8, 7)
        );
        assert!(unpack_version_strict(RESERVED_MASK).is_err());
        assert_eq!(unpack_version_strict(pack_version(9, 8, 7)), Ok((9, 8, 7)));
    }
}
