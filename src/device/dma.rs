//! UDMA descriptor rings (docs/abi.md §1.11).
//!
//! A core's request queue is a pair of rings of equal length, M2S (source)
//! and S2M (destination). One copy is one M2S descriptor plus one S2M
//! descriptor of equal length at the same slot of each ring.
//!
//! - [`RingProducer`] (host side) stamps each descriptor with the current
//!   2-bit ring id, which starts at 1 and steps by 1 mod 4 each time the
//!   producer index wraps to 0, and appends it through [`Hal::write_desc`].
//! - [`QueueProducer`] pairs the two rings, knows the free space from the
//!   device's head registers, and rings the doorbell: the S2M tail increment
//!   first, then the M2S one.
//! - [`RingConsumer`] (device side) reads the slot at its head and treats a
//!   descriptor with the wrong ring id as not yet written.
//! - [`DmaEngine`] is the device's copy engine for one queue: it consumes
//!   pairs below the published tails, validates them (decode, equal lengths,
//!   both addresses inside device memory, register targets) and performs the
//!   copy. A corrupt pair is a sticky [`DmaFault`], never a panic and never a
//!   wild access.
//!
//! Cursor ownership (one writer each):
//!
//! | cursor | writer | readers | publish | observe |
//! |---|---|---|---|---|
//! | descriptor slot | host (producer) | device | `write_desc`: len_ctrl half last, release | `read_desc`: acquire |
//! | `M2S_TAIL_INC`, `S2M_TAIL_INC` | host (doorbell) | device | `tail_inc`: fetch_add release | load acquire |
//! | `M2S_HEAD`, `S2M_HEAD` | device | host | store release | load acquire |

use crate::hal::{Hal, HalError, Ordering, RegionHandle};
use crate::wire::udma::{self, LenCtrl, M2sDesc, S2mDesc, UdmaError};

use super::memmap::{reg, BadPa, MemMap, UnitError, Window};

/// One side's position in a descriptor ring: the slot it is at, the ring id
/// that slot carries on this lap (1 on the first, stepping by 1 mod 4 at
/// each wrap; docs/abi.md §1.11) and how many descriptors it has passed
/// (wrapping).
#[derive(Clone, Copy, Debug)]
struct Lap {
    ring: RegionHandle,
    len: u32,
    index: u32,
    ring_id: u8,
    count: u32,
}

impl Lap {
    fn new(ring: RegionHandle, len: u32) -> Lap {
        Lap {
            ring,
            len,
            index: 0,
            ring_id: udma::FIRST_RING_ID,
            count: 0,
        }
    }

    /// Past the current slot; a wrap steps the ring id.
    fn advance(&mut self) {
        self.index += 1;
        if self.index == self.len {
            self.index = 0;
            self.ring_id = udma::next_ring_id(self.ring_id);
        }
        self.count = self.count.wrapping_add(1);
    }
}

/// The producer half of one ring.
#[derive(Clone, Copy, Debug)]
pub struct RingProducer {
    lap: Lap,
}

impl RingProducer {
    /// A fresh producer on `ring` of `len` slots (ring id 1, index 0).
    pub fn new(ring: RegionHandle, len: u32) -> RingProducer {
        RingProducer {
            lap: Lap::new(ring, len),
        }
    }

    /// The ring id the next descriptor gets.
    #[cfg(any(test, feature = "testkit"))]
    pub fn ring_id(&self) -> u8 {
        self.lap.ring_id
    }

    /// The slot the next descriptor goes to.
    #[cfg(any(test, feature = "testkit"))]
    pub fn index(&self) -> u32 {
        self.lap.index
    }

    /// Descriptors appended so far (wrapping).
    pub fn written(&self) -> u32 {
        self.lap.count
    }

    /// Encode with the current ring id (the closure receives it), write it,
    /// and advance; on wrap the ring id steps mod 4.
    pub fn append<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        encode: impl FnOnce(u8) -> Result<[u8; udma::SIZE], UdmaError>,
    ) -> Result<(), DmaError> {
        let bytes = encode(self.lap.ring_id).map_err(DmaError::Encode)?;
        hal.write_desc(self.lap.ring, self.lap.index, &bytes)?;
        self.lap.advance();
        Ok(())
    }
}

error_enum! {
    /// A host-side error while appending.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum DmaError {
        /// The descriptor did not encode (length or ring id out of range).
        Encode(#[source] UdmaError) => "descriptor: {0}",
        /// The HAL refused an access.
        Hal(#[from] HalError) => "{0}",
    }
}

/// The host side of one core's request queue: both rings and the doorbell.
#[derive(Clone, Copy, Debug)]
pub struct QueueProducer {
    m2s: RingProducer,
    s2m: RingProducer,
    regs: RegionHandle,
    len: u32,
}

impl QueueProducer {
    /// The producer for `core` of `map`, or [`UnitError`] for a core `map`
    /// does not have.
    pub fn new(map: &MemMap, core: u8) -> Result<QueueProducer, UnitError> {
        let (m2s, s2m) = map.desc_rings_of(core)?;
        Ok(QueueProducer {
            m2s: RingProducer::new(m2s, map.config.ring_len),
            s2m: RingProducer::new(s2m, map.config.ring_len),
            regs: map.regs_of(core)?,
            len: map.config.ring_len,
        })
    }

    /// Free slots (same in both rings): ring length minus descriptors
    /// appended and not yet consumed by the device.
    pub fn free<H: Hal + ?Sized>(&self, hal: &H) -> Result<u32, DmaError> {
        // Ordering: Acquire pairs with the DMA engine's Release stores of
        // M2S_HEAD/S2M_HEAD in `DmaEngine::step` after it read the slots, so
        // they may be overwritten (docs/abi.md §1.11: the ring
        // is reused lap after lap).
        let m2s_head = hal.load_u32(self.regs, reg::M2S_HEAD, Ordering::Acquire)?;
        let s2m_head = hal.load_u32(self.regs, reg::S2M_HEAD, Ordering::Acquire)?;
        let used = self
            .m2s
            .written()
            .wrapping_sub(m2s_head)
            .max(self.s2m.written().wrapping_sub(s2m_head));
        Ok(self.len.saturating_sub(used))
    }

    /// Append one copy: an M2S descriptor reading `len` bytes at `src` and an
    /// S2M descriptor writing them at `dst`, both FIRST|LAST.
    pub fn push_copy<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        len: u32,
        src: u64,
        dst: u64,
    ) -> Result<(), DmaError> {
        self.m2s
            .append(hal, |id| M2sDesc::copy(len, id, src).encode())?;
        self.s2m
            .append(hal, |id| S2mDesc::copy(len, id, dst).encode())
    }

    /// Ring the doorbell for `n` appended pairs: add `n` to the S2M tail
    /// increment, then to the M2S one (docs/abi.md §1.11: S2M before M2S).
    pub fn doorbell<H: Hal + ?Sized>(&self, hal: &H, n: u32) -> Result<(), DmaError> {
        hal.tail_inc(self.regs, reg::S2M_TAIL_INC, n)?;
        hal.tail_inc(self.regs, reg::M2S_TAIL_INC, n)?;
        Ok(())
    }

    /// The M2S ring's producer (for inspection).
    #[cfg(any(test, feature = "testkit"))]
    pub fn m2s(&self) -> &RingProducer {
        &self.m2s
    }

    /// The S2M ring's producer (for inspection).
    #[cfg(any(test, feature = "testkit"))]
    pub fn s2m(&self) -> &RingProducer {
        &self.s2m
    }
}

/// What the consumer found at its head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peek {
    /// A descriptor stamped with the expected ring id.
    Ready([u8; udma::SIZE]),
    /// The ring id is not the expected one: not yet written (this lap).
    NotYetWritten {
        /// The ring id found.
        found: u8,
        /// The ring id expected.
        expected: u8,
    },
}

/// The consumer half of one ring.
#[derive(Clone, Copy, Debug)]
pub struct RingConsumer {
    lap: Lap,
}

impl RingConsumer {
    /// A fresh consumer (expects ring id 1 at slot 0).
    pub fn new(ring: RegionHandle, len: u32) -> RingConsumer {
        RingConsumer {
            lap: Lap::new(ring, len),
        }
    }

    /// Read the slot at the head; a wrong ring id is "not yet written".
    pub fn peek<H: Hal + ?Sized>(&self, hal: &H) -> Result<Peek, HalError> {
        let d = hal.read_desc(self.lap.ring, self.lap.index)?;
        let found = LenCtrl::ring_id_of(u32::from_le_bytes([d[0], d[1], d[2], d[3]]));
        if found == self.lap.ring_id {
            Ok(Peek::Ready(d))
        } else {
            Ok(Peek::NotYetWritten {
                found,
                expected: self.lap.ring_id,
            })
        }
    }

    /// Move past the head slot.
    pub fn advance(&mut self) {
        self.lap.advance()
    }

    /// Descriptors consumed so far (wrapping).
    pub fn consumed(&self) -> u32 {
        self.lap.count
    }

    /// The slot of the head.
    pub fn index(&self) -> u32 {
        self.lap.index
    }
}

error_enum! {
    /// Why the DMA engine stopped a queue. Sticky: a faulted queue consumes
    /// nothing more. The sequencer turns it into an error NQ record.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum DmaFault {
        /// A descriptor below the published tail kept the wrong ring id past the
        /// grace period.
        RingIdMismatch {
            /// Which ring.
            dir: crate::hal::Dir,
            /// Slot.
            index: u32,
            /// Ring id found.
            found: u8,
            /// Ring id expected.
            expected: u8,
        } => (
            "{}[{index}]: ring id {found}, expected {expected}, below the published tail",
            dir.name()
        ),
        /// A descriptor did not decode.
        Undecodable {
            /// Which ring.
            dir: crate::hal::Dir,
            /// Slot.
            index: u32,
            /// The decoder's error.
            err: UdmaError,
        } => ("{}[{index}]: {err}", dir.name()),
        /// The M2S and S2M halves of a pair disagree on the length.
        LengthMismatch {
            /// Slot.
            index: u32,
            /// M2S length.
            m2s: u32,
            /// S2M length.
            s2m: u32,
        } => "pair {index}: m2s length {m2s} != s2m length {s2m}",
        /// A source or destination outside device memory (refused, not followed).
        AddressOutOfRange {
            /// Which ring's address.
            dir: crate::hal::Dir,
            /// The range.
            bad: BadPa,
        } => ("{}: {bad}", dir.name()),
        /// A destination in the register window that is not DMA-writable
        /// (only `SEQ_TAIL_INC` and `SEQ_EVENT`, 4 bytes, are), or a register
        /// source.
        BadRegisterAccess {
            /// Which ring's address.
            dir: crate::hal::Dir,
            /// The physical address.
            pa: u64,
            /// The length.
            len: u32,
        } => (
            "{}: {len}-byte access to register pa {pa:#x} is not allowed",
            dir.name()
        ),
        /// The HAL refused an access the window check allowed (a bug).
        Hal => "device memory access refused by the HAL",
        /// The tail registers claim more published pairs than the ring
        /// holds. Tails only grow (a doorbell adds to them), so no later
        /// doorbell can take the claim back.
        TailOverrun {
            /// Pairs the tails claim past the head.
            published: u32,
            /// The ring's length.
            ring_len: u32,
        } => "the tails claim {published} published pairs, the ring holds {ring_len}",
    }
}

impl DmaFault {
    /// The code stored in the `DMA_FAULT` register.
    pub const fn code(&self) -> u32 {
        match self {
            DmaFault::RingIdMismatch { .. } => 1,
            DmaFault::Undecodable { .. } => 2,
            DmaFault::LengthMismatch { .. } => 3,
            DmaFault::AddressOutOfRange { .. } => 4,
            DmaFault::BadRegisterAccess { .. } => 5,
            DmaFault::Hal => 6,
            DmaFault::TailOverrun { .. } => 7,
        }
    }
}

/// What one [`DmaEngine::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaStep {
    /// Nothing published beyond the head.
    Idle,
    /// A published descriptor is not written yet (wrong ring id); waiting.
    Waiting,
    /// One pair copied; `published` is true when it wrote `SEQ_TAIL_INC`
    /// (a request is now published to the sequencer).
    Copied {
        /// Bytes moved.
        len: u32,
        /// The copy bumped the sequencer's request tail.
        published: bool,
    },
    /// The queue faulted (now, or earlier).
    Faulted(DmaFault),
}

/// Virtual cycles a copy of `len` bytes costs.
pub const fn copy_cycles(len: u32) -> u64 {
    16 + (len as u64).div_ceil(64)
}

/// The device's copy engine for one core's request queue.
#[derive(Clone, Debug)]
pub struct DmaEngine {
    core: u8,
    m2s: RingConsumer,
    s2m: RingConsumer,
    fault: Option<DmaFault>,
    stalled_since: Option<u64>,
    buf: Vec<u8>,
}

impl DmaEngine {
    /// The engine for `core` of `map`, or [`UnitError`] for a core `map`
    /// does not have.
    pub fn new(map: &MemMap, core: u8) -> Result<DmaEngine, UnitError> {
        let (m2s, s2m) = map.desc_rings_of(core)?;
        Ok(DmaEngine {
            core,
            m2s: RingConsumer::new(m2s, map.config.ring_len),
            s2m: RingConsumer::new(s2m, map.config.ring_len),
            fault: None,
            stalled_since: None,
            buf: Vec::new(),
        })
    }

    /// The sticky fault, if any.
    #[cfg(any(test, feature = "testkit"))]
    pub fn fault(&self) -> Option<DmaFault> {
        self.fault
    }

    /// Pairs consumed so far.
    #[cfg(any(test, feature = "testkit"))]
    pub fn consumed(&self) -> u32 {
        self.m2s.consumed()
    }

    fn fail<H: Hal + ?Sized>(&mut self, hal: &H, map: &MemMap, f: DmaFault) -> DmaStep {
        self.fault = Some(f);
        let _ = hal.store_u32(
            map.regs[usize::from(self.core)],
            reg::DMA_FAULT,
            f.code(),
            Ordering::Relaxed,
        );
        DmaStep::Faulted(f)
    }

    /// A published slot still carries the wrong ring id: wait, up to the
    /// grace period, then fault.
    fn stall<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        map: &MemMap,
        now: u64,
        dir: crate::hal::Dir,
        found: u8,
        expected: u8,
    ) -> DmaStep {
        let since = *self.stalled_since.get_or_insert(now);
        if now.saturating_sub(since) >= map.config.ring_id_grace_ns {
            let index = self.m2s.index();
            return self.fail(
                hal,
                map,
                DmaFault::RingIdMismatch {
                    dir,
                    index,
                    found,
                    expected,
                },
            );
        }
        DmaStep::Waiting
    }

    /// Consume and perform at most one published pair. `now` (host
    /// nanoseconds) only bounds how long a wrong ring id below the tail is
    /// tolerated ([`super::memmap::DeviceConfig::ring_id_grace_ns`]).
    pub fn step<H: Hal + ?Sized>(&mut self, hal: &H, map: &MemMap, now: u64) -> DmaStep {
        if let Some(f) = self.fault {
            return DmaStep::Faulted(f);
        }
        let regs = map.regs[usize::from(self.core)];
        // Ordering: Acquire pairs with the host's Release fetch_add in
        // `Hal::tail_inc` (the doorbell, `QueueProducer::doorbell`): every
        // descriptor appended before it is visible (docs/abi.md §1.10 "device
        // publish boundary"; docs/abi.md §1.11, tail increment).
        let tails = (
            hal.load_u32(regs, reg::M2S_TAIL_INC, Ordering::Acquire),
            hal.load_u32(regs, reg::S2M_TAIL_INC, Ordering::Acquire),
        );
        let (Ok(m2s_tail), Ok(s2m_tail)) = tails else {
            return self.fail(hal, map, DmaFault::Hal);
        };
        let avail = m2s_tail
            .wrapping_sub(self.m2s.consumed())
            .min(s2m_tail.wrapping_sub(self.s2m.consumed()));
        if avail == 0 {
            return DmaStep::Idle;
        }
        if avail > map.config.ring_len {
            // Sticky, as every fault here: the tails only grow, so the
            // queue could never move again anyway.
            let f = DmaFault::TailOverrun {
                published: avail,
                ring_len: map.config.ring_len,
            };
            return self.fail(hal, map, f);
        }
        let index = self.m2s.index();
        let (pm, ps) = match (self.m2s.peek(hal), self.s2m.peek(hal)) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return self.fail(hal, map, DmaFault::Hal),
        };
        let (m2s_bytes, s2m_bytes) = match (pm, ps) {
            (Peek::Ready(a), Peek::Ready(b)) => (a, b),
            (Peek::NotYetWritten { found, expected }, _) => {
                return self.stall(hal, map, now, crate::hal::Dir::M2s, found, expected)
            }
            (_, Peek::NotYetWritten { found, expected }) => {
                return self.stall(hal, map, now, crate::hal::Dir::S2m, found, expected)
            }
        };
        self.stalled_since = None;
        let m = match M2sDesc::decode(&m2s_bytes) {
            Ok(m) => m,
            Err(err) => {
                let f = DmaFault::Undecodable {
                    dir: crate::hal::Dir::M2s,
                    index,
                    err,
                };
                return self.fail(hal, map, f);
            }
        };
        let s = match S2mDesc::decode(&s2m_bytes) {
            Ok(s) => s,
            Err(err) => {
                let f = DmaFault::Undecodable {
                    dir: crate::hal::Dir::S2m,
                    index,
                    err,
                };
                return self.fail(hal, map, f);
            }
        };
        if m.ctrl.len != s.ctrl.len {
            let f = DmaFault::LengthMismatch {
                index,
                m2s: m.ctrl.len,
                s2m: s.ctrl.len,
            };
            return self.fail(hal, map, f);
        }
        let len = m.ctrl.len;
        match self.copy(hal, map, m.src, s.dst, len) {
            Ok(published) => {
                self.m2s.advance();
                self.s2m.advance();
                // Ordering: Release pairs with the host's Acquire loads in
                // `QueueProducer::free`: the slots are read, reuse is safe
                // (docs/abi.md §1.11).
                let ok = hal
                    .store_u32(regs, reg::M2S_HEAD, self.m2s.consumed(), Ordering::Release)
                    .and_then(|()| {
                        hal.store_u32(regs, reg::S2M_HEAD, self.s2m.consumed(), Ordering::Release)
                    });
                if ok.is_err() {
                    return self.fail(hal, map, DmaFault::Hal);
                }
                DmaStep::Copied { len, published }
            }
            Err(f) => self.fail(hal, map, f),
        }
    }

    /// Validate both ends and move the bytes. Returns whether the copy wrote
    /// the sequencer's request tail.
    fn copy<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        map: &MemMap,
        src: u64,
        dst: u64,
        len: u32,
    ) -> Result<bool, DmaFault> {
        use crate::hal::Dir;
        let n = u64::from(len);
        let from = map
            .translate(src, n)
            .map_err(|bad| DmaFault::AddressOutOfRange { dir: Dir::M2s, bad })?;
        let to = map
            .translate(dst, n)
            .map_err(|bad| DmaFault::AddressOutOfRange { dir: Dir::S2m, bad })?;
        // Resolve the source to a region and offset (registers are not a source).
        let (src_region, src_off) = match from {
            Window::Dram { off } => (map.dram, off),
            Window::Dmem { core, off } => (map.dmem[usize::from(core)], off),
            Window::Regs { .. } => {
                return Err(DmaFault::BadRegisterAccess {
                    dir: Dir::M2s,
                    pa: src,
                    len,
                })
            }
        };
        self.buf.resize(len as usize, 0);
        hal.copy_out(src_region, src_off as usize, &mut self.buf)
            .map_err(|_| DmaFault::Hal)?;
        match to {
            Window::Dram { off } => {
                hal.copy_in(map.dram, off as usize, &self.buf)
                    .map_err(|_| DmaFault::Hal)?;
                Ok(false)
            }
            Window::Dmem { core, off } => {
                hal.copy_in(map.dmem[usize::from(core)], off as usize, &self.buf)
                    .map_err(|_| DmaFault::Hal)?;
                Ok(false)
            }
            Window::Regs { core, off } => {
                let off = off as usize;
                let regs = map.regs[usize::from(core)];
                let writable = len == 4 && (off == reg::SEQ_TAIL_INC || off == reg::SEQ_EVENT);
                if !writable {
                    return Err(DmaFault::BadRegisterAccess {
                        dir: Dir::S2m,
                        pa: dst,
                        len,
                    });
                }
                let v = u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                if off == reg::SEQ_TAIL_INC {
                    // A tail-increment register adds what is written to it.
                    // Ordering: Release pairs with the sequencer's Acquire
                    // load of SEQ_TAIL_INC in `Sequencer::execute`: the request
                    // body copied into DMEM by the earlier pair is visible
                    // (docs/abi.md §1.10: the tail-inc pair is the publish).
                    hal.fetch_add_u32(regs, off, v, Ordering::Release)
                        .map_err(|_| DmaFault::Hal)?;
                    Ok(true)
                } else {
                    // Ordering: Release pairs with the sequencer's Acquire
                    // load of SEQ_EVENT in `Sequencer::execute` (docs/abi.md §1.10:
                    // the evt-poke pair, "new config is ready").
                    hal.store_u32(regs, off, v, Ordering::Release)
                        .map_err(|_| DmaFault::Hal)?;
                    Ok(false)
                }
            }
        }
    }
}
