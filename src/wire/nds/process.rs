//! The process-info records (docs/abi.md §2.7): `nds_process_info_internal`
//! (64 B at 0x4e0) with its three `nds_version_info` triples, and
//! `nds_process_info_ext_internal` (260 B at 0xad28). Both begin with the
//! FNV-1a-32 record hash ([`super::fnv`]).
//!
//! `framework_type` is a 4-byte field at record +4 with `tag[32]` at +8, as
//! the seed's 2.31 debug info (DWARF) and its docs/abi.md §2.10 example give. An older public
//! runtime header declared a 1-byte `framework_type` with `tag` at +5; we
//! follow the seed.
//!
//! Encoding writes the padding (the 2-byte hole in each `nds_version_info`)
//! as zero, as the producer's zero-initialised staging copy does; parsing
//! ignores padding. Parsing does not verify the hash: verify the raw bytes
//! with [`super::fnv::verify`] first.

#[cfg(feature = "std")]
use super::c_str_lossy;
use super::region::{self, chain};
use super::version::{pack_version, unpack_version};
#[cfg(feature = "std")]
use std::borrow::Cow;

/// `sizeof(nds_process_info)`: the payload after the hash word.
pub const PROCESS_INFO_PAYLOAD_SIZE: usize = 60;
/// `NDS_MAX_PROCESS_TAG_LEN`: the process-info tag.
pub const TAG_LEN: usize = 32;
/// The process-info-ext tag.
pub const EXT_TAG_LEN: usize = 256;

wire_block! {
    /// `nds_version_info`: a `{major, minor, build}` triple (8 B; 2-byte hole).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct VersionInfo: "nds_version_info", VERSION_INFO_SIZE = 8, VERSION_INFO_LAYOUT, version_off {
        seed MAJOR major: u8 = 0, 1;
        seed MINOR minor: u8 = 1, 1;
        pad = 2, 2;
        seed BUILD build: u32 = 4, 4;
    }
}

wire_block! {
    /// `nds_process_info_internal`: the producer's identity card (64 B;
    /// docs/abi.md §2.7, §2.10: the record at 0x4e0; member names as
    /// docs/abi.md §2.10 prints them, the `proc_info.` prefix dropped).
    /// Parsing reads the hash, it does not verify it.
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::nds::process::{ProcessInfo, VersionInfo};
    /// use xunds::wire::nds::{c_string, fnv};
    ///
    /// let p = ProcessInfo {
    ///     tag: c_string("job-7"),
    ///     runtime_version: VersionInfo { major: 2, minor: 31, build: 24 },
    ///     ..ProcessInfo::default()
    /// };
    /// let bytes = fnv::stamped(p.encode());
    /// assert_eq!(fnv::verify(&bytes), fnv::HashState::Valid);
    /// let back = ProcessInfo::parse(&bytes).unwrap();
    /// assert_eq!(back.tag_str(), "job-7");
    /// assert_eq!(back.runtime_version.packed(), 0x0000_021f_0000_0018);
    /// ```
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct ProcessInfo: "nds_process_info_internal", PROCESS_INFO_SIZE = 64, PROCESS_INFO_LAYOUT, off {
        /// FNV-1a-32 of the record with this word zeroed.
        seed HASH hash: u32 = 0x00, 4;
        /// 4 bytes, per the 2.31 DWARF.
        seed FRAMEWORK_TYPE framework_type: u32 = 0x04, 4;
        /// `tag[32]`: a NUL-padded C string.
        seed TAG tag: [u8; TAG_LEN] = 0x08, 32;
        seed FRAMEWORK_VERSION framework_version: VersionInfo = 0x28, 8;
        seed FAL_VERSION fal_version: VersionInfo = 0x30, 8;
        seed RUNTIME_VERSION runtime_version: VersionInfo = 0x38, 8;
    }
}

wire_block! {
    /// `nds_process_info_ext_internal`: `{hash, tag[256]}` (260 B;
    /// docs/abi.md §2.7, §2.10: the record at 0xad28). Parsing reads the
    /// hash, it does not verify it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ProcessInfoExt: "nds_process_info_ext_internal", PROCESS_INFO_EXT_SIZE = 260, PROCESS_INFO_EXT_LAYOUT, ext_off {
        /// FNV-1a-32 of the record with this word zeroed.
        seed HASH hash: u32 = 0x00, 4;
        /// `tag[256]`: a NUL-padded C string.
        seed TAG tag: [u8; EXT_TAG_LEN] = 0x04, 256;
    }
}

const _: () = assert!(4 + PROCESS_INFO_PAYLOAD_SIZE == PROCESS_INFO_SIZE);
// The records fill their region-map rows (docs/abi.md §2.2).
const _: () = assert!(PROCESS_INFO_SIZE == chain::NDS_PROCESS_INFO_SIZE);
const _: () = assert!(PROCESS_INFO_EXT_SIZE == chain::NDS_PROCESS_INFO_EXT_SIZE);
const _: () = assert!(region::PROCESS_INFO_OFF + PROCESS_INFO_SIZE == region::MODEL_BITMAP_OFF);
const _: () = assert!(region::PROCESS_INFO_EXT_OFF + PROCESS_INFO_EXT_SIZE == region::EXT_PAD_OFF);

impl VersionInfo {
    /// The same triple as the packed ND counter word ([`pack_version`]).
    pub const fn packed(&self) -> u64 {
        pack_version(self.major, self.minor, self.build)
    }

    /// The triple held by a packed ND counter word (reserved bits ignored).
    pub const fn from_packed(word: u64) -> Self {
        let (major, minor, build) = unpack_version(word);
        Self {
            major,
            minor,
            build,
        }
    }
}

impl ProcessInfo {
    /// The tag up to its NUL, lossy.
    #[cfg(feature = "std")]
    pub fn tag_str(&self) -> Cow<'_, str> {
        c_str_lossy(&self.tag)
    }
}

impl Default for ProcessInfoExt {
    fn default() -> Self {
        Self {
            hash: 0,
            tag: [0; EXT_TAG_LEN],
        }
    }
}

impl ProcessInfoExt {
    /// The tag up to its NUL, lossy.
    #[cfg(feature = "std")]
    pub fn tag_str(&self) -> Cow<'_, str> {
        c_str_lossy(&self.tag)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{c_string, fnv};
    use super::*;

    #[test]
    fn version_info_hole_is_zero_and_ignored() {
        let v = VersionInfo {
            major: 2,
            minor: 31,
            build: 24,
        };
        assert_eq!(v.encode(), [2, 31, 0, 0, 24, 0, 0, 0]);
        assert_eq!(VersionInfo::parse(&[2, 31, 0xff, 0xff, 24, 0, 0, 0]), Ok(v));
        assert_eq!(VersionInfo::from_packed(v.packed()), v);
    }

    #[test]
    fn stamped_records_verify() {
        let p = ProcessInfo {
            framework_type: 3,
            tag: c_string("job"),
            ..ProcessInfo::default()
        };
        assert_eq!(
            fnv::verify(&fnv::stamped(p.encode())),
            fnv::HashState::Valid
        );
        assert_eq!(p.tag_str(), "job");
        let e = ProcessInfoExt {
            hash: 0,
            tag: c_string("long tag"),
        };
        let b = fnv::stamped(e.encode());
        assert_eq!(fnv::verify(&b), fnv::HashState::Valid);
        assert_eq!(ProcessInfoExt::parse(&b).unwrap().tag_str(), "long tag");
    }
}
