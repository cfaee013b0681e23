//! `seq_id_t` / `xu_id_t` packing (seed 000 §2, §7 item 3).
//!
//! `seq_id = (cursor & 0xFFFFFFFFFFFF) | (xu_id << 48)`;
//! `xu_id = {type:4 @[3:0], queue:4 @[7:4], vnc_id:8 @[15:8]}`, so the vNC id
//! is the seq_id's high byte.
//!
//! (The wire-layer issue completes this module: accessors, parse/emit, dump.)

/// Mask of the 48-bit `seq_num` field.
pub const SEQ_NUM_MASK: u64 = 0xFFFF_FFFF_FFFF;

/// A 16-bit XU id: `{type:4, queue:4, vnc_id:8}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct XuId(pub u16);

impl XuId {
    /// Build from the three bitfields (`ty` and `queue` are masked to 4 bits).
    pub const fn new(ty: u8, queue: u8, vnc_id: u8) -> XuId {
        XuId(((vnc_id as u16) << 8) | (((queue & 0xF) as u16) << 4) | ((ty & 0xF) as u16))
    }
    /// `type` (bits 3:0).
    pub const fn ty(self) -> u8 {
        (self.0 & 0xF) as u8
    }
    /// `queue` (bits 7:4).
    pub const fn queue(self) -> u8 {
        ((self.0 >> 4) & 0xF) as u8
    }
    /// `vnc_id` (bits 15:8).
    pub const fn vnc_id(self) -> u8 {
        (self.0 >> 8) as u8
    }
}

/// A 64-bit sequence handle: xu_id in bits 63:48, seq_num in 47:0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct SeqId(pub u64);

impl SeqId {
    /// The materialisation shared by submit and last-completed (seed 000 §2).
    pub const fn from_cursor(cursor: u64, xu: XuId) -> SeqId {
        SeqId((cursor & SEQ_NUM_MASK) | ((xu.0 as u64) << 48))
    }
    /// The 48-bit per-XU counter.
    pub const fn seq_num(self) -> u64 {
        self.0 & SEQ_NUM_MASK
    }
    /// The owning XU.
    pub const fn xu_id(self) -> XuId {
        XuId((self.0 >> 48) as u16)
    }
    /// The vNC id (`HIBYTE(seq_id.raw)`).
    pub const fn vnc_id(self) -> u8 {
        (self.0 >> 56) as u8
    }
}
