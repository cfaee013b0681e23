//! UDMA descriptor rings (docs/abi.md §1.11).
//!
//! A core's request queue is a pair of rings of equal length, M2S (source)
//! and S2M (destination). One copy is one M2S descriptor plus one S2M
//! descriptor of equal length at the same slot of each ring, so one
//! position serves both rings on each side.
//!
//! - [`QueueProducer`] (host side) stamps each descriptor with the current
//!   2-bit ring id, which starts at 1 and steps by 1 mod 4 each time the
//!   producer index wraps to 0, appends it through [`Hal::write_desc`],
//!   knows the free space from the device's head registers, and rings the
//!   doorbell: the S2M tail increment first, then the M2S one.
//! - [`DmaEngine`] is the device's copy engine for one queue: it reads the
//!   pair at its head below the published tails (a descriptor with the
//!   wrong ring id is not yet written), validates it (decode, equal
//!   lengths, both addresses inside device memory, register targets) and
//!   performs the copy. A corrupt pair is a sticky [`DmaFault`], never a
//!   panic and never a wild access.
//!
//! Cursor ownership (one writer each):
//!
//! | cursor | writer | readers | publish | observe |
//! |---|---|---|---|---|
//! | descriptor slot | host (producer) | device | `write_desc`: len_ctrl half last, release | `read_desc`: acquire |
//! | `M2S_TAIL_INC`, `S2M_TAIL_INC` | host (doorbell) | device | `tail_inc`: fetch_add release | load acquire |
//! | `M2S_HEAD`, `S2M_HEAD` | device | host | store release | load acquire |

use crate::hal::{Dir, Hal, HalError, Ordering, RegionHandle};
use crate::wire::udma::{self, LenCtrl, M2sDesc, S2mDesc, UdmaError};

use super::memmap::{reg, BadPa, MemMap, UnitError, Window};

error_enum! {
    /// Why staging refused. Nothing was written and nothing changed: retry later.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum StageError {
        /// Every request buffer of the core holds a request the device has not
        /// executed yet.
        Busy {
            /// Requests staged and not yet executed.
            in_flight: u32,
        } => "all request buffers busy ({in_flight} in flight)",
        /// The descriptor rings lack room for the three pairs.
        RingFull {
            /// Slots needed (3 pairs).
            need: u32,
            /// Slots free.
            free: u32,
        } => "descriptor ring full (need {need}, {free} free)",
        /// A descriptor did not encode (a bug: lengths are constants).
        Encode(#[source] UdmaError) => "descriptor: {0}",
        /// The HAL refused an access.
        Hal(#[from] HalError) => "{0}",
    }
}

/// One side's position in a ring: the slot it is at, the mark that slot
/// carries on this lap (the descriptor ring id, docs/abi.md §1.11; the NQ
/// phase, §1.13), stepped at each wrap, and how many records it has passed
/// (wrapping).
#[derive(Clone, Copy, Debug)]
pub(super) struct Lap<M> {
    pub(super) len: u32,
    pub(super) index: u32,
    pub(super) mark: M,
    pub(super) count: u32,
}

impl<M: Copy> Lap<M> {
    pub(super) const fn new(len: u32, mark: M) -> Lap<M> {
        Lap {
            len,
            index: 0,
            mark,
            count: 0,
        }
    }

    /// Past the current slot; a wrap steps the mark.
    pub(super) fn advance(&mut self, step: fn(M) -> M) {
        self.index += 1;
        if self.index == self.len {
            self.index = 0;
            self.mark = step(self.mark);
        }
        self.count = self.count.wrapping_add(1);
    }
}

/// The host side of one core's request queue: both rings and the doorbell.
#[derive(Clone, Copy, Debug)]
pub struct QueueProducer {
    m2s: RegionHandle,
    s2m: RegionHandle,
    regs: RegionHandle,
    lap: Lap<u8>,
}

impl QueueProducer {
    /// The producer for `core` of `map`, or [`UnitError`] for a core `map`
    /// does not have.
    pub fn new(map: &MemMap, core: u8) -> Result<QueueProducer, UnitError> {
        let r = map.core(core)?;
        Ok(QueueProducer {
            m2s: r.m2s,
            s2m: r.s2m,
            regs: r.regs,
            lap: Lap::new(map.config.ring_len, udma::FIRST_RING_ID),
        })
    }

    /// Descriptor pairs appended so far (wrapping).
    #[cfg(any(test, feature = "testkit"))]
    pub fn written(&self) -> u32 {
        self.lap.count
    }

    /// Free slots (same in both rings): ring length minus descriptors
    /// appended and not yet consumed by the device.
    pub fn free<H: Hal + ?Sized>(&self, hal: &H) -> Result<u32, StageError> {
        // Ordering: Acquire pairs with the DMA engine's Release stores of
        // M2S_HEAD/S2M_HEAD in `DmaEngine::step` after it read the slots, so
        // they may be overwritten (docs/abi.md §1.11: the ring
        // is reused lap after lap).
        let m2s_head = hal.load_u32(self.regs, reg::M2S_HEAD, Ordering::Acquire)?;
        let s2m_head = hal.load_u32(self.regs, reg::S2M_HEAD, Ordering::Acquire)?;
        let count = self.lap.count;
        let used = count
            .wrapping_sub(m2s_head)
            .max(count.wrapping_sub(s2m_head));
        Ok(self.lap.len.saturating_sub(used))
    }

    /// Append one copy: an M2S descriptor reading `len` bytes at `src` and an
    /// S2M descriptor writing them at `dst`, both FIRST|LAST, each stamped
    /// with the current ring id.
    pub fn push_copy<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        len: u32,
        src: u64,
        dst: u64,
    ) -> Result<(), StageError> {
        let (id, i) = (self.lap.mark, self.lap.index);
        let m = M2sDesc::copy(len, id, src).encode();
        hal.write_desc(self.m2s, i, &m.map_err(StageError::Encode)?)?;
        let s = S2mDesc::copy(len, id, dst).encode();
        hal.write_desc(self.s2m, i, &s.map_err(StageError::Encode)?)?;
        self.lap.advance(udma::next_ring_id);
        Ok(())
    }

    /// Ring the doorbell for `n` appended pairs: add `n` to the S2M tail
    /// increment, then to the M2S one (docs/abi.md §1.11: S2M before M2S).
    pub fn doorbell<H: Hal + ?Sized>(&self, hal: &H, n: u32) -> Result<(), StageError> {
        hal.tail_inc(self.regs, reg::S2M_TAIL_INC, n)?;
        hal.tail_inc(self.regs, reg::M2S_TAIL_INC, n)?;
        Ok(())
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
            dir: Dir,
            /// Slot.
            index: u32,
            /// Ring id found.
            found: u8,
            /// Ring id expected.
            expected: u8,
        } => "{dir}[{index}]: ring id {found}, expected {expected}, below the published tail",
        /// A descriptor did not decode.
        Undecodable {
            /// Which ring.
            dir: Dir,
            /// Slot.
            index: u32,
            /// The decoder's error.
            err: UdmaError,
        } => "{dir}[{index}]: {err}",
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
            dir: Dir,
            /// The range.
            bad: BadPa,
        } => "{dir}: {bad}",
        /// A destination in the register window that is not DMA-writable
        /// (only `SEQ_TAIL_INC` and `SEQ_EVENT`, 4 bytes, are), or a register
        /// source.
        BadRegisterAccess {
            /// Which ring's address.
            dir: Dir,
            /// The physical address.
            pa: u64,
            /// The length.
            len: u32,
        } => "{dir}: {len}-byte access to register pa {pa:#x} is not allowed",
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
    /// A published descriptor is not written yet (wrong ring id); waiting.
    Waiting,
    /// One pair copied; `published` is the sequencer's request tail after
    /// the copy when it added to `SEQ_TAIL_INC` (a request is published).
    Copied {
        /// Bytes moved.
        len: u32,
        /// The new `SEQ_TAIL_INC` total, when the copy added to it.
        published: Option<u32>,
    },
    /// The queue faulted (now, or earlier; [`DmaEngine`] keeps the fault
    /// and stores its code in `DMA_FAULT`).
    Faulted,
}

/// Virtual cycles a copy of `len` bytes costs.
pub const fn copy_cycles(len: u32) -> u64 {
    16 + (len as u64).div_ceil(64)
}

/// The device's copy engine for one core's request queue.
///
/// A poll reads the tails once ([`DmaEngine::published`]), performs that
/// many pairs ([`DmaEngine::step`]) and hands their slots back once
/// ([`DmaEngine::release`]: the head registers).
#[derive(Clone, Debug)]
pub struct DmaEngine {
    core: u8,
    m2s: RegionHandle,
    s2m: RegionHandle,
    regs: RegionHandle,
    lap: Lap<u8>,
    /// Pairs the head registers show consumed.
    released: u32,
    fault: Option<DmaFault>,
    stalled_since: Option<u64>,
    buf: Vec<u8>,
}

impl DmaEngine {
    /// The engine for `core` of `map`, or [`UnitError`] for a core `map`
    /// does not have.
    pub fn new(map: &MemMap, core: u8) -> Result<DmaEngine, UnitError> {
        let r = map.core(core)?;
        Ok(DmaEngine {
            core,
            m2s: r.m2s,
            s2m: r.s2m,
            regs: r.regs,
            lap: Lap::new(map.config.ring_len, udma::FIRST_RING_ID),
            released: 0,
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

    fn fail<H: Hal + ?Sized>(&mut self, hal: &H, f: DmaFault) -> DmaFault {
        self.fault = Some(f);
        let _ = hal.store_u32(self.regs, reg::DMA_FAULT, f.code(), Ordering::Relaxed);
        f
    }

    /// Pairs published past the head (from the tail registers), or the
    /// sticky fault.
    pub fn published<H: Hal + ?Sized>(&mut self, hal: &H) -> Result<u32, DmaFault> {
        if let Some(f) = self.fault {
            return Err(f);
        }
        let (regs, lap) = (self.regs, self.lap);
        // Ordering: Acquire pairs with the host's Release fetch_add in
        // `Hal::tail_inc` (the doorbell, `QueueProducer::doorbell`): every
        // descriptor appended before it is visible (docs/abi.md §1.10 "device
        // publish boundary"; docs/abi.md §1.11, tail increment).
        let m2s = hal.load_u32(regs, reg::M2S_TAIL_INC, Ordering::Acquire);
        let s2m = hal.load_u32(regs, reg::S2M_TAIL_INC, Ordering::Acquire);
        let (Ok(m2s), Ok(s2m)) = (m2s, s2m) else {
            return Err(self.fail(hal, DmaFault::Hal));
        };
        let avail = m2s.wrapping_sub(lap.count).min(s2m.wrapping_sub(lap.count));
        if avail > lap.len {
            // Sticky, as every fault here: the tails only grow, so the
            // queue could never move again anyway.
            let f = DmaFault::TailOverrun {
                published: avail,
                ring_len: lap.len,
            };
            return Err(self.fail(hal, f));
        }
        Ok(avail)
    }

    /// Hand the consumed slots back: store the head registers, if pairs
    /// were consumed since the last release.
    pub fn release<H: Hal + ?Sized>(&mut self, hal: &H) -> Result<(), DmaFault> {
        let count = self.lap.count;
        if count == self.released {
            return Ok(());
        }
        self.released = count;
        // Ordering: Release pairs with the host's Acquire loads in
        // `QueueProducer::free`: the slots are read, reuse is safe
        // (docs/abi.md §1.11).
        let regs = self.regs;
        let stored = hal
            .store_u32(regs, reg::M2S_HEAD, count, Ordering::Release)
            .and_then(|()| hal.store_u32(regs, reg::S2M_HEAD, count, Ordering::Release));
        stored.map_err(|_| self.fail(hal, DmaFault::Hal))
    }

    /// Consume and perform the pair at the head, one of those
    /// [`DmaEngine::published`] counted. `now` (host nanoseconds) only
    /// bounds how long a wrong ring id below the tail is tolerated
    /// ([`super::memmap::DeviceConfig::ring_id_grace_ns`]).
    pub fn step<H: Hal + ?Sized>(&mut self, hal: &H, map: &MemMap, now: u64) -> DmaStep {
        if self.fault.is_some() {
            return DmaStep::Faulted;
        }
        match self.pair(hal, map, now) {
            Ok(step) => step,
            Err(f) => {
                self.fail(hal, f);
                DmaStep::Faulted
            }
        }
    }

    fn pair<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        map: &MemMap,
        now: u64,
    ) -> Result<DmaStep, DmaFault> {
        let (index, ring_id) = (self.lap.index, self.lap.mark);
        let m = hal.read_desc(self.m2s, index).map_err(|_| DmaFault::Hal)?;
        let s = hal.read_desc(self.s2m, index).map_err(|_| DmaFault::Hal)?;
        // By reference: the by-value array iterator is built on the stack
        // for every pair (27 more instructions per null execution).
        for &(d, dir) in &[(&m, Dir::M2s), (&s, Dir::S2m)] {
            let found = LenCtrl::ring_id_of(u32::from_le_bytes([d[0], d[1], d[2], d[3]]));
            if found != ring_id {
                // Not written yet: wait, up to the grace period, then fault.
                let since = *self.stalled_since.get_or_insert(now);
                if now.saturating_sub(since) < map.config.ring_id_grace_ns {
                    return Ok(DmaStep::Waiting);
                }
                let expected = ring_id;
                return Err(DmaFault::RingIdMismatch {
                    dir,
                    index,
                    found,
                    expected,
                });
            }
        }
        self.stalled_since = None;
        let undecodable = |dir| move |err| DmaFault::Undecodable { dir, index, err };
        let m = M2sDesc::decode(&m).map_err(undecodable(Dir::M2s))?;
        let s = S2mDesc::decode(&s).map_err(undecodable(Dir::S2m))?;
        let len = m.ctrl.len;
        if len != s.ctrl.len {
            let s2m = s.ctrl.len;
            return Err(DmaFault::LengthMismatch {
                index,
                m2s: len,
                s2m,
            });
        }
        let published = self.copy(hal, map, m.src, s.dst, len)?;
        self.lap.advance(udma::next_ring_id);
        Ok(DmaStep::Copied { len, published })
    }

    /// Validate both ends and move the bytes. Returns the sequencer's new
    /// request tail when the copy added to this core's.
    fn copy<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        map: &MemMap,
        src: u64,
        dst: u64,
        len: u32,
    ) -> Result<Option<u32>, DmaFault> {
        let n = u64::from(len);
        let bad = |dir| move |bad| DmaFault::AddressOutOfRange { dir, bad };
        let from = map.translate(src, n).map_err(bad(Dir::M2s))?;
        let to = map.translate(dst, n).map_err(bad(Dir::S2m))?;
        let refused = |dir, pa| DmaFault::BadRegisterAccess { dir, pa, len };
        // Registers are not a source.
        let Window::Mem(region, off) = from else {
            return Err(refused(Dir::M2s, src));
        };
        // Small copies (the trigger pairs) go through the stack.
        let mut small = [0u8; 64];
        let buf = match small.get_mut(..len as usize) {
            Some(b) => b,
            None => {
                self.buf.resize(len as usize, 0);
                &mut self.buf[..]
            }
        };
        hal.copy_out(*region, off, buf).map_err(|_| DmaFault::Hal)?;
        let (core, off) = match to {
            Window::Regs { core, off } => (core, off),
            Window::Mem(region, off) => {
                hal.copy_in(*region, off, buf).map_err(|_| DmaFault::Hal)?;
                return Ok(None);
            }
        };
        let v = match *buf {
            [a, b, c, d] if off == reg::SEQ_TAIL_INC || off == reg::SEQ_EVENT => {
                u32::from_le_bytes([a, b, c, d])
            }
            _ => return Err(refused(Dir::S2m, dst)),
        };
        let regs = map.cores[usize::from(core)].regs;
        if off == reg::SEQ_TAIL_INC {
            // A tail-increment register adds what is written to it.
            // Ordering: Release pairs with the sequencer's Acquire of the
            // new total (docs/abi.md §1.10: the tail-inc pair is the
            // publish; the request body copied into DMEM by the earlier
            // pair is visible). This core's sequencer runs on this thread
            // and takes the total from the add.
            let old = hal.fetch_add_u32(regs, off, v, Ordering::Release);
            let old = old.map_err(|_| DmaFault::Hal)?;
            return Ok((core == self.core).then_some(old.wrapping_add(v)));
        }
        // Ordering: Release pairs with the sequencer's Acquire load of
        // SEQ_EVENT in `Sequencer::execute` (docs/abi.md §1.10: the
        // evt-poke pair, "new config is ready").
        hal.store_u32(regs, off, v, Ordering::Release)
            .map_err(|_| DmaFault::Hal)?;
        Ok(None)
    }
}
