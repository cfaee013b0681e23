//! `xuq_exec_info_t` (docs/abi.md §1.2, §1.3): one 32-byte ring slot.
//!
//! The producer writes `seq_id`, `exec_status`, `exec_info` and
//! `mark_comp_efd = -1` (docs/abi.md §1.9); a waiter later installs a real eventfd and
//! `efd_from_pool` under `mark_comp_lock`; the consumer captures `seq_id`,
//! `mark_comp_efd` and `efd_from_pool` before advancing `exec_head`. The
//! 3-byte hole at +0x15..+0x18 is alignment padding: [`ExecSlot::emit`] never
//! writes it and [`ExecSlot::parse`] never reads it.
//!
//! `exec_status` and `exec_info` are 8-byte pointer words; xunds stores
//! opaque handles there (an index into the caller's status cells, a work-item
//! handle), never host addresses it dereferences.
//!
//! Parsing is strict where the C types allow less than their bytes can say:
//! `efd_from_pool` is a C `bool` (0 or 1) and `mark_comp_efd` is an fd or the
//! `-1` sentinel, so any other negative value is refused.

use core::mem::{offset_of, size_of};

#[cfg(feature = "std")]
use super::layout::annotated_dump;
use super::seq_id::SeqId;
use super::{emit_fields, encode_fields, le, need, WireError};

wire_block! {
    /// Layout of `xuq_exec_info_t` (docs/abi.md §1.3; all fields seed-stated).
    pub LAYOUT: "xuq_exec_info_t", SIZE = 32, off {
        seed SEQ_ID "seq_id" = 0x00, 8;
        /// `NRT_STATUS *` (8-byte pointer).
        seed EXEC_STATUS "exec_status" = 0x08, 8;
        /// `int`, -1 = no waiter.
        seed MARK_COMP_EFD "mark_comp_efd" = 0x10, 4;
        /// `bool`.
        seed EFD_FROM_POOL "efd_from_pool" = 0x14, 1;
        pad = 0x15, 3;
        /// `void *` to the work item.
        seed EXEC_INFO "exec_info" = 0x18, 8;
    }
}

/// The "no waiter yet" sentinel for `mark_comp_efd` (docs/abi.md §1.3).
pub const NO_EFD: i32 = -1;

/// One ring slot. `#[repr(C)]` so `offset_of!` proves the seed offsets (the
/// value is still encoded field by field; its padding is never exposed).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExecSlot {
    /// `seq_id` (+0x00).
    pub seq_id: SeqId,
    /// `exec_status` (+0x08): where the worker writes the `NRT_STATUS`.
    pub exec_status: u64,
    /// `mark_comp_efd` (+0x10): completion eventfd, or [`NO_EFD`].
    pub mark_comp_efd: i32,
    /// `efd_from_pool` (+0x14): the fd is runtime-pooled (keep it open).
    pub efd_from_pool: bool,
    /// `exec_info` (+0x18): the `tpb_execution_info_t` work item.
    pub exec_info: u64,
}

// The value type is the C struct: its fields sit at the declared offsets.
const _: () = assert!(size_of::<ExecSlot>() == SIZE);
const _: () = assert!(offset_of!(ExecSlot, seq_id) == off::SEQ_ID);
const _: () = assert!(offset_of!(ExecSlot, exec_status) == off::EXEC_STATUS);
const _: () = assert!(offset_of!(ExecSlot, mark_comp_efd) == off::MARK_COMP_EFD);
const _: () = assert!(offset_of!(ExecSlot, efd_from_pool) == off::EFD_FROM_POOL);
const _: () = assert!(offset_of!(ExecSlot, exec_info) == off::EXEC_INFO);

impl ExecSlot {
    /// What `xuq_client_submit` writes (docs/abi.md §1.9): the body with `mark_comp_efd = -1`.
    pub const fn submitted(seq_id: SeqId, exec_status: u64, exec_info: u64) -> ExecSlot {
        ExecSlot {
            seq_id,
            exec_status,
            mark_comp_efd: NO_EFD,
            efd_from_pool: false,
            exec_info,
        }
    }

    /// `true` when a waiter has installed an eventfd.
    pub const fn has_waiter(&self) -> bool {
        self.mark_comp_efd != NO_EFD
    }

    /// The 32 bytes, little-endian, padding zero.
    pub fn encode(&self) -> [u8; SIZE] {
        encode_fields(|b| self.put(b))
    }

    /// Write the field bytes into `buf[..32]`; the padding is left as it is.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        emit_fields(&LAYOUT, buf, |b| self.put(b))
    }

    fn put(&self, b: &mut [u8]) {
        le::put_u64(b, off::SEQ_ID, self.seq_id.0);
        le::put_u64(b, off::EXEC_STATUS, self.exec_status);
        le::put_u32(b, off::MARK_COMP_EFD, self.mark_comp_efd as u32);
        b[off::EFD_FROM_POOL] = u8::from(self.efd_from_pool);
        le::put_u64(b, off::EXEC_INFO, self.exec_info);
    }

    /// Decode the first 32 bytes. Refuses an `efd_from_pool` byte other than
    /// 0/1 and a `mark_comp_efd` below -1. The padding is ignored.
    pub fn parse(bytes: &[u8]) -> Result<ExecSlot, WireError> {
        need(LAYOUT.name, bytes, SIZE)?;
        let efd = le::u32_at(bytes, off::MARK_COMP_EFD) as i32;
        if efd < NO_EFD {
            return Err(WireError::invalid(LAYOUT.name, "mark_comp_efd", efd as u32));
        }
        let efd_from_pool = match bytes[off::EFD_FROM_POOL] {
            0 => false,
            1 => true,
            other => return Err(WireError::invalid(LAYOUT.name, "efd_from_pool", other)),
        };
        Ok(ExecSlot {
            seq_id: SeqId(le::u64_at(bytes, off::SEQ_ID)),
            exec_status: le::u64_at(bytes, off::EXEC_STATUS),
            mark_comp_efd: efd,
            efd_from_pool,
            exec_info: le::u64_at(bytes, off::EXEC_INFO),
        })
    }

    /// Annotated hex dump.
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&LAYOUT, &self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emit_leaves_the_hole_alone() {
        let mut b = [0xEEu8; SIZE];
        let s = ExecSlot::submitted(SeqId(7), 8, 9);
        s.emit(&mut b).unwrap();
        assert_eq!(&b[0x15..0x18], &[0xEE; 3]);
        assert_eq!(&b[0x10..0x14], &[0xFF; 4]); // -1
        assert_eq!(ExecSlot::parse(&b), Ok(s));
    }

    #[test]
    fn strict_fields() {
        let mut b = ExecSlot::submitted(SeqId(1), 0, 0).encode();
        b[off::EFD_FROM_POOL] = 2;
        assert_eq!(
            ExecSlot::parse(&b),
            Err(WireError::InvalidField {
                block: "xuq_exec_info_t",
                field: "efd_from_pool",
                value: 2
            })
        );
        let mut b = ExecSlot::submitted(SeqId(1), 0, 0).encode();
        le::put_u32(&mut b, off::MARK_COMP_EFD, (-2i32) as u32);
        assert!(matches!(
            ExecSlot::parse(&b),
            Err(WireError::InvalidField {
                field: "mark_comp_efd",
                ..
            })
        ));
    }
}
