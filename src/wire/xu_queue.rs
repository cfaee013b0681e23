//! `xu_queue_t` (docs/abi.md §1.2): the 256-byte ring header.
//!
//! `xu_id`, `buffer` and `capacity` share the first cache line; the three
//! cursors each own a 64-byte line at +0x40/+0x80/+0xC0. The gaps are padding
//! that xunds never reads or writes ([`XuQueueHeader::emit`] writes only field
//! bytes). The cursors are clean 48-bit counters (top 16 bits zero); the xu_id
//! is OR'd in only when a seq_id is built (docs/abi.md §1.4).
//!
//! [`XuQueueHeader`] is a *value*: a snapshot for parsing, dumps and tests.
//! The live header in shared memory is read and written word by word through
//! atomics by the ring protocol (`crate::ring`), at the offsets in [`off`].

use core::mem::{offset_of, size_of};

#[cfg(feature = "std")]
use super::layout::annotated_dump;
use super::seq_id::{SeqId, XuId};
use super::{emit_fields, encode_fields, le, need, WireError};

wire_block! {
    /// Layout of `xu_queue_t` (docs/abi.md §1.2; all fields seed-stated,
    /// each cursor on its own 64-byte line; gaps are padding).
    pub LAYOUT: "xu_queue_t", SIZE = 256, off {
        /// `xu_id_t` (padded to 8).
        seed XU_ID "xu_id" = 0x00, 2;
        pad = 0x02, 6;
        /// `xuq_exec_info_t *`.
        seed BUFFER "buffer" = 0x08, 8;
        seed CAPACITY "capacity" = 0x10, 8;
        pad = 0x18, 40;
        /// Consumer cursor; written by the worker.
        seed EXEC_HEAD "exec_head" = 0x40, 8;
        pad = 0x48, 56;
        /// Trigger cursor; written by the producer.
        seed SCHEDULED_HEAD "scheduled_head" = 0x80, 8;
        pad = 0x88, 56;
        /// Submit cursor; written by the producer.
        seed SCHEDULED_TAIL "scheduled_tail" = 0xC0, 8;
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

/// A C mirror with the cursors on their own 64-byte-aligned lines: proves a
/// C compiler lays the seed's struct out at exactly these offsets. Only
/// measured, never built.
#[allow(dead_code)]
mod c {
    #[repr(C, align(64))]
    pub struct Line(pub u64);
    #[repr(C)]
    pub struct XuQueue {
        pub xu_id: u16,
        pub buffer: u64,
        pub capacity: u64,
        pub exec_head: Line,
        pub scheduled_head: Line,
        pub scheduled_tail: Line,
    }
}
const _: () = assert!(size_of::<c::XuQueue>() == SIZE);
const _: () = assert!(offset_of!(c::XuQueue, xu_id) == off::XU_ID);
const _: () = assert!(offset_of!(c::XuQueue, buffer) == off::BUFFER);
const _: () = assert!(offset_of!(c::XuQueue, capacity) == off::CAPACITY);
const _: () = assert!(offset_of!(c::XuQueue, exec_head) == off::EXEC_HEAD);
const _: () = assert!(offset_of!(c::XuQueue, scheduled_head) == off::SCHEDULED_HEAD);
const _: () = assert!(offset_of!(c::XuQueue, scheduled_tail) == off::SCHEDULED_TAIL);

/// A snapshot of the ring header's six fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct XuQueueHeader {
    /// `xu_id` (+0x00).
    pub xu_id: XuId,
    /// `buffer` (+0x08): where the slot array lives (an opaque handle here).
    pub buffer: u64,
    /// `capacity` (+0x10): slots in the array.
    pub capacity: u64,
    /// `exec_head` (+0x40): next slot the worker completes.
    pub exec_head: u64,
    /// `scheduled_head` (+0x80): first slot not yet released to the worker.
    pub scheduled_head: u64,
    /// `scheduled_tail` (+0xC0): next slot the producer fills.
    pub scheduled_tail: u64,
}

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

    /// The 256 bytes, little-endian, padding zero.
    pub fn encode(&self) -> [u8; SIZE] {
        encode_fields(|b| self.put(b))
    }

    /// Write the six fields' bytes into `buf[..256]`; padding is not touched.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        emit_fields(&LAYOUT, buf, |b| self.put(b))
    }

    fn put(&self, b: &mut [u8]) {
        le::put_u16(b, off::XU_ID, self.xu_id.0);
        le::put_u64(b, off::BUFFER, self.buffer);
        le::put_u64(b, off::CAPACITY, self.capacity);
        le::put_u64(b, off::EXEC_HEAD, self.exec_head);
        le::put_u64(b, off::SCHEDULED_HEAD, self.scheduled_head);
        le::put_u64(b, off::SCHEDULED_TAIL, self.scheduled_tail);
    }

    /// Decode the first 256 bytes; padding is not read. Refuses a cursor at
    /// or above [`CURSOR_LIMIT`] (which includes any cursor with its top 16
    /// bits set: cursors are clean 48-bit counters, docs/abi.md §1.2).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(LAYOUT.name, bytes, SIZE)?;
        let cursor = |field: &'static str, at: usize| {
            let v = le::u64_at(bytes, at);
            if v >= CURSOR_LIMIT {
                Err(WireError::invalid(LAYOUT.name, field, v))
            } else {
                Ok(v)
            }
        };
        Ok(XuQueueHeader {
            xu_id: XuId(le::u16_at(bytes, off::XU_ID)),
            buffer: le::u64_at(bytes, off::BUFFER),
            capacity: le::u64_at(bytes, off::CAPACITY),
            exec_head: cursor("exec_head", off::EXEC_HEAD)?,
            scheduled_head: cursor("scheduled_head", off::SCHEDULED_HEAD)?,
            scheduled_tail: cursor("scheduled_tail", off::SCHEDULED_TAIL)?,
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
        le::put_u64(&mut b, off::SCHEDULED_HEAD, 1 << 48);
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
