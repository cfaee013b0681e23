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
use super::super::layout::annotated_dump;
use super::super::{le, need, WireError};
#[cfg(feature = "std")]
use super::c_str_lossy;
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
    /// Layout of `nds_version_info`.
    pub VERSION_INFO_LAYOUT: "nds_version_info", VERSION_INFO_SIZE = 8, version_off {
        seed MAJOR "major" = 0, 1;
        seed MINOR "minor" = 1, 1;
        pad = 2, 2;
        seed BUILD "build" = 4, 4;
    }
}

wire_block! {
    /// Layout of `nds_process_info_internal` (docs/abi.md §2.7, §2.10: the record at
    /// 0x4e0; member names as docs/abi.md §2.10 prints them, the `proc_info.` prefix dropped).
    pub PROCESS_INFO_LAYOUT: "nds_process_info_internal", PROCESS_INFO_SIZE = 64, off {
        seed HASH "hash" = 0x00, 4;
        /// 4 bytes, per the 2.31 DWARF.
        seed FRAMEWORK_TYPE "framework_type" = 0x04, 4;
        seed TAG "tag" = 0x08, 32;
        seed FRAMEWORK_VERSION "framework_version.major" = 0x28, 1;
        seed "framework_version.minor" = 0x29, 1;
        pad = 0x2a, 2;
        seed "framework_version.build" = 0x2c, 4;
        seed FAL_VERSION "fal_version.major" = 0x30, 1;
        seed "fal_version.minor" = 0x31, 1;
        pad = 0x32, 2;
        seed "fal_version.build" = 0x34, 4;
        seed RUNTIME_VERSION "runtime_version.major" = 0x38, 1;
        seed "runtime_version.minor" = 0x39, 1;
        pad = 0x3a, 2;
        seed "runtime_version.build" = 0x3c, 4;
    }
}

wire_block! {
    /// Layout of `nds_process_info_ext_internal` (docs/abi.md §2.7, §2.10: the
    /// record at 0xad28).
    pub PROCESS_INFO_EXT_LAYOUT: "nds_process_info_ext_internal", PROCESS_INFO_EXT_SIZE = 260, ext_off {
        seed HASH "hash" = 0x00, 4;
        seed TAG "tag" = 0x04, 256;
    }
}

const _: () = assert!(4 + PROCESS_INFO_PAYLOAD_SIZE == PROCESS_INFO_SIZE);
const _: () = assert!(off::TAG + TAG_LEN == off::FRAMEWORK_VERSION);
const _: () = assert!(ext_off::TAG + EXT_TAG_LEN == PROCESS_INFO_EXT_SIZE);

#[cfg(target_pointer_width = "64")]
mod c_mirror {
    //! The C structs under C layout rules (compile-time check only).
    use super::{ext_off, off, version_off};
    use core::mem::{align_of, offset_of, size_of};

    #[allow(dead_code)]
    #[repr(C)]
    struct NdsVersionInfo {
        major: u8,
        minor: u8,
        build: u32,
    }
    #[allow(dead_code)]
    #[repr(C)]
    struct NdsProcessInfo {
        framework_type: u32,
        tag: [u8; 32],
        framework_version: NdsVersionInfo,
        fal_version: NdsVersionInfo,
        runtime_version: NdsVersionInfo,
    }
    #[allow(dead_code)]
    #[repr(C)]
    struct NdsProcessInfoInternal {
        hash: u32,
        proc_info: NdsProcessInfo,
    }
    #[allow(dead_code)]
    #[repr(C)]
    struct NdsProcessInfoExtInternal {
        hash: u32,
        tag: [u8; 256],
    }

    const _: () = assert!(size_of::<NdsVersionInfo>() == super::VERSION_INFO_SIZE);
    const _: () = assert!(offset_of!(NdsVersionInfo, major) == version_off::MAJOR);
    const _: () = assert!(offset_of!(NdsVersionInfo, minor) == version_off::MINOR);
    const _: () = assert!(offset_of!(NdsVersionInfo, build) == version_off::BUILD);
    const _: () = assert!(size_of::<NdsProcessInfo>() == super::PROCESS_INFO_PAYLOAD_SIZE);
    const _: () = assert!(size_of::<NdsProcessInfoInternal>() == super::PROCESS_INFO_SIZE);
    const _: () = assert!(align_of::<NdsProcessInfoInternal>() == 4);
    const P: usize = offset_of!(NdsProcessInfoInternal, proc_info);
    const _: () = assert!(offset_of!(NdsProcessInfoInternal, hash) == off::HASH);
    const _: () = assert!(P + offset_of!(NdsProcessInfo, framework_type) == off::FRAMEWORK_TYPE);
    const _: () = assert!(P + offset_of!(NdsProcessInfo, tag) == off::TAG);
    const _: () =
        assert!(P + offset_of!(NdsProcessInfo, framework_version) == off::FRAMEWORK_VERSION);
    const _: () = assert!(P + offset_of!(NdsProcessInfo, fal_version) == off::FAL_VERSION);
    const _: () = assert!(P + offset_of!(NdsProcessInfo, runtime_version) == off::RUNTIME_VERSION);
    const _: () = assert!(size_of::<NdsProcessInfoExtInternal>() == super::PROCESS_INFO_EXT_SIZE);
    const _: () = assert!(offset_of!(NdsProcessInfoExtInternal, tag) == ext_off::TAG);
}

/// `nds_version_info`: a `{major, minor, build}` triple (8 B; 2-byte hole).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct VersionInfo {
    /// `major` (+0).
    pub major: u8,
    /// `minor` (+1).
    pub minor: u8,
    /// `build` (+4).
    pub build: u32,
}

impl VersionInfo {
    /// Parse the first 8 bytes of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(VERSION_INFO_LAYOUT.name, bytes, VERSION_INFO_SIZE)?;
        Ok(Self {
            major: bytes[version_off::MAJOR],
            minor: bytes[version_off::MINOR],
            build: le::u32_at(bytes, version_off::BUILD),
        })
    }

    /// The 8 wire bytes (hole zero).
    pub fn encode(&self) -> [u8; VERSION_INFO_SIZE] {
        let mut b = [0u8; VERSION_INFO_SIZE];
        b[version_off::MAJOR] = self.major;
        b[version_off::MINOR] = self.minor;
        le::put_u32(&mut b, version_off::BUILD, self.build);
        b
    }

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

    /// Write the encoding into the head of `buf` (`Truncated` if it is
    /// shorter than the block; bytes past the block are left alone).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        super::emit_into(VERSION_INFO_LAYOUT.name, buf, &self.encode())
    }

    /// Annotated hex dump of the encoding.
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&VERSION_INFO_LAYOUT, &self.encode())
    }
}

/// `nds_process_info_internal`: the producer's identity card (64 B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProcessInfo {
    /// `hash` (+0): FNV-1a-32 of the record with this word zeroed.
    pub hash: u32,
    /// `framework_type` (+4).
    pub framework_type: u32,
    /// `tag[32]` (+8): a NUL-padded C string.
    pub tag: [u8; TAG_LEN],
    /// `framework_version` (+0x28).
    pub framework_version: VersionInfo,
    /// `fal_version` (+0x30).
    pub fal_version: VersionInfo,
    /// `runtime_version` (+0x38).
    pub runtime_version: VersionInfo,
}

impl ProcessInfo {
    /// Parse the first 64 bytes of `bytes` (the hash is read, not verified).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(PROCESS_INFO_LAYOUT.name, bytes, PROCESS_INFO_SIZE)?;
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&bytes[off::TAG..off::TAG + TAG_LEN]);
        Ok(Self {
            hash: le::u32_at(bytes, off::HASH),
            framework_type: le::u32_at(bytes, off::FRAMEWORK_TYPE),
            tag,
            framework_version: VersionInfo::parse(&bytes[off::FRAMEWORK_VERSION..])?,
            fal_version: VersionInfo::parse(&bytes[off::FAL_VERSION..])?,
            runtime_version: VersionInfo::parse(&bytes[off::RUNTIME_VERSION..])?,
        })
    }

    /// The 64 wire bytes, with `hash` written as given.
    pub fn encode(&self) -> [u8; PROCESS_INFO_SIZE] {
        let mut b = [0u8; PROCESS_INFO_SIZE];
        le::put_u32(&mut b, off::HASH, self.hash);
        le::put_u32(&mut b, off::FRAMEWORK_TYPE, self.framework_type);
        b[off::TAG..off::TAG + TAG_LEN].copy_from_slice(&self.tag);
        let v = [
            (off::FRAMEWORK_VERSION, self.framework_version),
            (off::FAL_VERSION, self.fal_version),
            (off::RUNTIME_VERSION, self.runtime_version),
        ];
        for (o, vi) in v {
            b[o..o + VERSION_INFO_SIZE].copy_from_slice(&vi.encode());
        }
        b
    }

    /// The 64 wire bytes with the hash stamped (`hash` ignored).
    pub fn encode_stamped(&self) -> [u8; PROCESS_INFO_SIZE] {
        let mut b = self.encode();
        super::fnv::stamp(&mut b);
        b
    }

    /// The tag up to its NUL, lossy.
    #[cfg(feature = "std")]
    pub fn tag_str(&self) -> Cow<'_, str> {
        c_str_lossy(&self.tag)
    }

    /// Write the encoding into the head of `buf` (`Truncated` if it is
    /// shorter than the block; bytes past the block are left alone).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        super::emit_into(PROCESS_INFO_LAYOUT.name, buf, &self.encode())
    }

    /// Annotated hex dump of the encoding.
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&PROCESS_INFO_LAYOUT, &self.encode())
    }
}

/// `nds_process_info_ext_internal`: `{hash, tag[256]}` (260 B).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessInfoExt {
    /// `hash` (+0): FNV-1a-32 of the record with this word zeroed.
    pub hash: u32,
    /// `tag[256]` (+4): a NUL-padded C string.
    pub tag: [u8; EXT_TAG_LEN],
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
    /// Parse the first 260 bytes of `bytes` (the hash is read, not verified).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(PROCESS_INFO_EXT_LAYOUT.name, bytes, PROCESS_INFO_EXT_SIZE)?;
        let mut tag = [0u8; EXT_TAG_LEN];
        tag.copy_from_slice(&bytes[ext_off::TAG..ext_off::TAG + EXT_TAG_LEN]);
        Ok(Self {
            hash: le::u32_at(bytes, ext_off::HASH),
            tag,
        })
    }

    /// The 260 wire bytes, with `hash` written as given.
    pub fn encode(&self) -> [u8; PROCESS_INFO_EXT_SIZE] {
        let mut b = [0u8; PROCESS_INFO_EXT_SIZE];
        le::put_u32(&mut b, ext_off::HASH, self.hash);
        b[ext_off::TAG..].copy_from_slice(&self.tag);
        b
    }

    /// The 260 wire bytes with the hash stamped (`hash` ignored).
    pub fn encode_stamped(&self) -> [u8; PROCESS_INFO_EXT_SIZE] {
        let mut b = self.encode();
        super::fnv::stamp(&mut b);
        b
    }

    /// The tag up to its NUL, lossy.
    #[cfg(feature = "std")]
    pub fn tag_str(&self) -> Cow<'_, str> {
        c_str_lossy(&self.tag)
    }

    /// Write the encoding into the head of `buf` (`Truncated` if it is
    /// shorter than the block; bytes past the block are left alone).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        super::emit_into(PROCESS_INFO_EXT_LAYOUT.name, buf, &self.encode())
    }

    /// Annotated hex dump of the encoding.
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&PROCESS_INFO_EXT_LAYOUT, &self.encode())
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
        assert_eq!(fnv::verify(&p.encode_stamped()), fnv::HashState::Valid);
        assert_eq!(p.tag_str(), "job");
        let e = ProcessInfoExt {
            hash: 0,
            tag: c_string("long tag"),
        };
        let b = e.encode_stamped();
        assert_eq!(fnv::verify(&b), fnv::HashState::Valid);
        assert_eq!(ProcessInfoExt::parse(&b).unwrap().tag_str(), "long tag");
    }
}
