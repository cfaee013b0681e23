//! `xuq_exec_info_t` (docs/abi.md §1.2, §1.3): one 32-byte ring slot.
//!
//! The producer writes `seq_id`, `exec_status`, `exec_info` and
//! `mark_comp_efd = -1` (docs/abi.md §1.9); a waiter later installs a real eventfd and
//! `efd_from_pool` under `mark_comp_lock`; the consumer captures `seq_id`,
//! `mark_comp_efd` and `efd_from_pool` before advancing `exec_head`. The
//! 3-byte hole after `efd_from_pool` is alignment padding: [`ExecSlot::emit`]
//! never writes it and [`ExecSlot::parse`] never reads it.
//!
//! `exec_status` and `exec_info` are 8-byte pointer words; xunds stores
//! opaque handles there (an index into the caller's status cells, a work-item
//! handle), never host addresses it dereferences.
//!
//! Parsing is strict where the C types allow less than their bytes can say:
//! `efd_from_pool` is a C `bool` (0 or 1) and `mark_comp_efd` is an fd or the
//! `-1` sentinel, so any other negative value is refused.

use super::seq_id::SeqId;

wire_block! {
    /// One ring slot, `xuq_exec_info_t` (docs/abi.md §1.3; all fields
    /// seed-stated). Parsing refuses an `efd_from_pool` byte other than 0/1
    /// and a `mark_comp_efd` below -1; the padding is ignored.
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::exec_slot::{ExecSlot, NO_EFD};
    /// use xunds::wire::seq_id::SeqId;
    ///
    /// let slot = ExecSlot::submitted(SeqId(7), 0x100, 0x200);
    /// let mut bytes = slot.encode();
    /// assert_eq!(slot.mark_comp_efd, NO_EFD);
    /// assert_eq!(ExecSlot::parse(&bytes), Ok(slot));
    /// bytes[0x14] = 2; // efd_from_pool is a C bool
    /// assert!(ExecSlot::parse(&bytes).is_err());
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ExecSlot: "xuq_exec_info_t", SIZE = 32, LAYOUT, off {
        seed SEQ_ID seq_id: SeqId = 0x00, 8;
        /// `NRT_STATUS *` (8-byte pointer): where the worker writes the status.
        seed EXEC_STATUS exec_status: u64 = 0x08, 8;
        /// `int`: the completion eventfd, or [`NO_EFD`] (no waiter).
        seed MARK_COMP_EFD mark_comp_efd: i32 = 0x10, 4 if |v| *v >= NO_EFD;
        /// `bool`: the fd is runtime-pooled (keep it open).
        seed EFD_FROM_POOL efd_from_pool: bool = 0x14, 1;
        pad = 0x15, 3;
        /// `void *` to the `tpb_execution_info_t` work item.
        seed EXEC_INFO exec_info: u64 = 0x18, 8;
    }
}

/// The "no waiter yet" sentinel for `mark_comp_efd` (docs/abi.md §1.3).
pub const NO_EFD: i32 = -1;

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{write, WireError};

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
        write::<u32>(&mut b, off::MARK_COMP_EFD, (-2i32) as u32);
        assert!(matches!(
            ExecSlot::parse(&b),
            Err(WireError::InvalidField {
                field: "mark_comp_efd",
                ..
            })
        ));
    }
}
