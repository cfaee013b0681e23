//! `xu_queue_t` (docs/abi.md §1.2): the 256-byte ring header.
//!
//! `xu_id`, `buffer` and `capacity` share the first cache line; each cursor
//! owns a 64-byte line. The gaps are padding that xunds never reads or
//! writes ([`XuQueueHeader::emit`] writes only field bytes). The cursors are
//! clean 48-bit counters (top 16 bits zero); the xu_id is OR'd in only when a
//! seq_id is built (docs/abi.md §1.4).
//!
//! [`XuQueueHeader`] is a *value*: a snapshot for parsing, dumps and tests.
//! The live header in shared memory is read and written word by word through
//! atomics by the ring protocol (`crate::ring`), at the offsets in [`off`].

use super::seq_id::{SeqId, XuId};
use super::WireError;

wire_block! {
    /// A snapshot of the ring header `xu_queue_t` (docs/abi.md §1.2; all
    /// fields seed-stated, each cursor on its own 64-byte line; gaps are
    /// padding). Parsing refuses a cursor at or above [`CURSOR_LIMIT`]
    /// (which includes any cursor with its top 16 bits set: cursors are
    /// clean 48-bit counters).
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::seq_id::XuId;
    /// use xunds::wire::xu_queue::{XuQueueHeader, SIZE};
    ///
    /// let h = XuQueueHeader::new(XuId::new(0, 0, 3), 0x1000, 8);
    /// let bytes: [u8; SIZE] = h.encode();
    /// assert_eq!(XuQueueHeader::parse(&bytes), Ok(h));
    /// assert_eq!(h.next_seq_id().seq_num(), 1);
    /// assert!(XuQueueHeader::parse(&bytes[..255]).is_err());
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct XuQueueHeader: "xu_queue_t", SIZE = 256, LAYOUT, off {
        /// `xu_id_t` (padded to 8).
        seed XU_ID xu_id: XuId = 0x00, 2;
        pad = 0x02, 6;
        /// `xuq_exec_info_t *`: where the slot array lives (an opaque handle here).
        seed BUFFER buffer: u64 = 0x08, 8;
        /// Slots in the array.
        seed CAPACITY capacity: u64 = 0x10, 8;
        pad = 0x18, 40;
        /// Consumer cursor, written by the worker: the next slot it completes.
        seed EXEC_HEAD exec_head: u64 = 0x40, 8 align 64 if |v| *v < CURSOR_LIMIT;
        pad = 0x48, 56;
        /// Trigger cursor, written by the producer: the first slot not yet
        /// released to the worker.
        seed SCHEDULED_HEAD scheduled_head: u64 = 0x80, 8 align 64 if |v| *v < CURSOR_LIMIT;
        pad = 0x88, 56;
        /// Submit cursor, written by the producer: the next slot it fills.
        seed SCHEDULED_TAIL scheduled_tail: u64 = 0xC0, 8 align 64 if |v| *v < CURSOR_LIMIT;
        pad = 0xC8, 56;
    }
}

/// The 64-byte line each cursor owns.
pub const CACHE_LINE: usize = 64;
/// A cursor must stay below this (`xuq_client_submit` asserts
/// `scheduled_tail < 0xFFFFFFFFFFFE`, docs/abi.md §1.2).
pub const CURSOR_LIMIT: u64 = 0xFFFF_FFFF_FFFE;
/// Cursors start at 1 (docs/abi.md §1.2, xu-workers convention).
pub const CURSOR_START: u64 = 1;

const _: () = assert!(off::EXEC_HEAD % CACHE_LINE == 0);
const _: () = assert!(off::SCHEDULED_HEAD - off::EXEC_HEAD == CACHE_LINE);
const _: () = assert!(off::SCHEDULED_TAIL - off::SCHEDULED_HEAD == CACHE_LINE);
// A cursor below the limit has its top 16 bits clear (a clean 48-bit counter).
const _: () = assert!(CURSOR_LIMIT <= super::seq_id::SEQ_NUM_MASK);

impl XuQueueHeader {
    /// A fresh, empty queue: every cursor at [`CURSOR_START`].
    pub const fn new(xu_id: XuId, buffer: u64, capacity: u64) -> Self {
        XuQueueHeader {
            xu_id,
            buffer,
            capacity,
            exec_head: CURSOR_START,
            scheduled_head: CURSOR_START,
            scheduled_tail: CURSOR_START,
        }
    }

    /// Slots submitted and not yet completed (`scheduled_tail - exec_head`).
    pub const fn depth(&self) -> u64 {
        self.scheduled_tail.wrapping_sub(self.exec_head)
    }

    /// The seq_id the next submit will return (`scheduled_tail | xu_id << 48`).
    pub const fn next_seq_id(&self) -> SeqId {
        SeqId::from_cursor(self.scheduled_tail, self.xu_id)
    }

    /// `xuq_get_last_completed` (docs/abi.md §1.8).
    pub const fn last_completed(&self) -> SeqId {
        SeqId::last_completed(self.exec_head, self.xu_id)
    }

    /// The ring-protocol invariants of a consistent snapshot:
    /// `capacity > 0`, `CURSOR_START <= exec_head <= scheduled_head <=
    /// scheduled_tail`, `scheduled_tail - exec_head <= capacity`. The error
    /// names the first field that breaks them. ([`parse`](Self::parse) checks
    /// only per-field rules, because a header read word by word while the
    /// ring runs need not satisfy these.)
    pub fn validate(&self) -> Result<(), WireError> {
        let bad = |field, value: u64| Err(WireError::invalid(LAYOUT.name, field, value));
        if self.capacity == 0 {
            return bad("capacity", 0);
        }
        if self.exec_head < CURSOR_START {
            return bad("exec_head", self.exec_head);
        }
        if self.scheduled_head < self.exec_head {
            return bad("scheduled_head", self.scheduled_head);
        }
        if self.scheduled_tail < self.scheduled_head
            || self.scheduled_tail - self.exec_head > self.capacity
        {
            return bad("scheduled_tail", self.scheduled_tail);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::write;

    #[test]
    fn emit_touches_only_field_bytes() {
        let mut b = [0x5Au8; SIZE];
        let h = XuQueueHeader::new(XuId::new(1, 2, 3), 0x1000, 8);
        h.emit(&mut b).unwrap();
        let mut written = [false; SIZE];
        for f in LAYOUT.fields {
            written[f.offset..f.end()].fill(true);
        }
        for (i, (&w, &byte)) in written.iter().zip(b.iter()).enumerate() {
            if !w {
                assert_eq!(byte, 0x5A, "padding byte {i:#x} was written");
            }
        }
        assert_eq!(XuQueueHeader::parse(&b), Ok(h));
    }

    #[test]
    fn cursor_top_bits_refused() {
        let mut b = XuQueueHeader::new(XuId(0), 0, 4).encode();
        write::<u64>(&mut b, off::SCHEDULED_HEAD, 1 << 48);
        assert_eq!(
            XuQueueHeader::parse(&b),
            Err(WireError::InvalidField {
                block: "xu_queue_t",
                field: "scheduled_head",
                value: 1 << 48
            })
        );
    }

    #[test]
    fn validate_names_the_broken_cursor() {
        let mut h = XuQueueHeader::new(XuId(0), 0, 2);
        assert_eq!(h.validate(), Ok(()));
        h.scheduled_tail = 4; // depth 3 > capacity 2
        h.scheduled_head = 2;
        assert!(matches!(
            h.validate(),
            Err(WireError::InvalidField {
                field: "scheduled_tail",
                ..
            })
        ));
        h.scheduled_tail = 3;
        assert_eq!(h.validate(), Ok(()));
        h.exec_head = 3;
        assert!(matches!(
            h.validate(),
            Err(WireError::InvalidField {
                field: "scheduled_head",
                ..
            })
        ));
    }
}
