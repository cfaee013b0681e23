//! The seeded fault injector middleware: wraps any [`Hal`] and, following a
//! [`FaultPlan`], corrupts appended descriptors (bad length, bad ring id,
//! address outside device memory), drops doorbells, drops NQ records (a
//! device that never completes), rewrites them into error records of a
//! given class, or makes register reads stale (pointed at the NQ head
//! registers, the device sees a full NQ ring and overflows). Randomness comes only from [`SplitMix64`] seeded by the plan,
//! so a run with the same seed injects the same faults at the same places.
//!
//! Every injection is counted per rule
//! ([`FaultInjector::injected_by_rule`]) and the last [`RECENT_INJECTIONS`]
//! are kept with their place (`FaultInjector::injected`) so a test can show
//! which fault produced which error. Memory stays bounded however long a
//! faulty run lasts: counts, not a list of every injection.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::prng::SplitMix64;
use crate::wire::nq::{self, ErrorClass};
use crate::wire::udma;

use crate::hal::{
    Access, Dir, EventHandle, EventId, Hal, HalError, Ordering, Record, RegionHandle, RegionId,
    Wait, Width, RECORD,
};

/// A physical address no device window contains (used for "address outside
/// device memory"): far above any DRAM, DMEM or register window.
pub const WILD_PA: u64 = 0xDEAD_0000_0000;

wire_enum! {
    /// How a descriptor is corrupted, by its name in `--faults corrupt:WHAT`.
    pub enum DescCorruption(u8) {
        /// The length is changed (by +4, or to 8 for a 64 KiB descriptor), so
        /// the M2S and S2M halves of the pair disagree.
        BadLength = 0 => "len",
        /// The ring id is advanced by 2 (never the expected one).
        BadRingId = 1 => "ring_id",
        /// The buffer pointer is set to [`WILD_PA`], outside device memory.
        BadAddress = 2 => "addr",
    }
}

/// One kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Corrupt a descriptor written to a ring of direction `dir` (`None`: any).
    CorruptDesc {
        /// What to corrupt.
        what: DescCorruption,
        /// Which ring direction.
        dir: Option<Dir>,
    },
    /// Swallow a `tail_inc` (the doorbell never rings).
    DropDoorbell,
    /// Swallow an NQ record write: the device never completes that engine.
    DropNq,
    /// Rewrite a DONE NQ record into an ERROR record of this class.
    NqError(ErrorClass),
    /// A `load_u32` of a register at `off..off + span` of any core's
    /// register block returns the stored value minus `lag` (wrapping): a
    /// stale read, as if the last `lag` updates of a counter had not arrived.
    /// The register layout is the device's: the injector only matches
    /// offsets (`xunds run --faults nq_overflow` points it at the NQ head
    /// registers, see `system::faults`).
    StaleRead {
        /// First register offset.
        off: usize,
        /// Bytes of registers from `off`.
        span: usize,
        /// How far behind the read is.
        lag: u32,
    },
}

/// When a rule fires, counted over the operations it applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// Only the n-th eligible operation (1-based).
    Nth(u64),
    /// Every eligible operation from the n-th on (1-based).
    From(u64),
    /// Each eligible operation with probability `num / den` (seeded).
    Chance {
        /// Numerator.
        num: u64,
        /// Denominator.
        den: u64,
    },
}

/// One rule of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaultRule {
    /// What to inject.
    pub fault: Fault,
    /// When.
    pub trigger: Trigger,
    /// Only on this core's regions (`None`: every core).
    pub core: Option<u8>,
}

impl FaultRule {
    /// `fault` on the n-th eligible operation, any core.
    pub const fn nth(fault: Fault, n: u64) -> FaultRule {
        FaultRule {
            fault,
            trigger: Trigger::Nth(n),
            core: None,
        }
    }
}

/// A seeded list of rules.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FaultPlan {
    /// Seed of the generator behind [`Trigger::Chance`].
    pub seed: u64,
    /// The rules; each counts its own eligible operations.
    pub rules: Vec<FaultRule>,
}

impl FaultPlan {
    /// A plan with one rule.
    pub fn one(rule: FaultRule) -> FaultPlan {
        FaultPlan {
            seed: 0,
            rules: vec![rule],
        }
    }
}

/// One injection that happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    /// Index of the rule in the plan.
    pub rule: usize,
    /// The fault.
    pub fault: Fault,
    /// Where (`m2s0[3]`, `regs0+0x4`, `nq0.PE[0]`).
    pub at: String,
}

/// How many of the latest injections `FaultInjector::injected` keeps.
pub const RECENT_INJECTIONS: usize = 64;

#[derive(Debug)]
struct State {
    rng: SplitMix64,
    /// Each rule, the eligible operations it counted, and its injections.
    rules: Vec<(FaultRule, u64, u64)>,
    /// The last [`RECENT_INJECTIONS`] injections, oldest first.
    recent: VecDeque<Injected>,
}

/// The fault injector middleware. Clones share the plan's state.
#[derive(Clone, Debug)]
pub struct FaultInjector<H> {
    inner: H,
    state: Arc<Mutex<State>>,
    /// Whether any rule is a [`Fault::StaleRead`] (register loads skip the
    /// plan's lock otherwise).
    stale_reads: bool,
    /// Whether the plan has any rule: an empty plan never fires, so every
    /// access goes straight to the inner backend, without the plan's lock.
    armed: bool,
}

fn core_of(id: RegionId) -> Option<u8> {
    match id {
        RegionId::Dmem { core }
        | RegionId::Regs { core }
        | RegionId::DescRing { core, .. }
        | RegionId::NqRing { core, .. } => Some(core),
        RegionId::Dram | RegionId::WorkItems { .. } | RegionId::Other { .. } => None,
    }
}

impl<H: Hal> FaultInjector<H> {
    /// Wrap `inner` with `plan`.
    pub fn new(inner: H, plan: FaultPlan) -> FaultInjector<H> {
        let stale_reads = plan
            .rules
            .iter()
            .any(|r| matches!(r.fault, Fault::StaleRead { .. }));
        FaultInjector {
            inner,
            stale_reads,
            armed: !plan.rules.is_empty(),
            state: Arc::new(Mutex::new(State {
                rng: SplitMix64::new(plan.seed),
                rules: plan.rules.into_iter().map(|r| (r, 0, 0)).collect(),
                recent: VecDeque::with_capacity(RECENT_INJECTIONS),
            })),
        }
    }

    /// The wrapped backend.
    #[cfg(any(test, feature = "testkit"))]
    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// The latest injections, oldest first: all of them up to
    /// [`RECENT_INJECTIONS`], then the last that many.
    #[cfg(any(test, feature = "testkit"))]
    pub fn injected(&self) -> Vec<Injected> {
        self.lock().recent.iter().cloned().collect()
    }

    /// How many faults each rule of the plan injected so far (plan order).
    pub fn injected_by_rule(&self) -> Vec<u64> {
        self.lock().rules.iter().map(|r| r.2).collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first rule that applies to an operation at `off` of `r` and
    /// fires now. `slot`: the place is named by its record slot
    /// (`m2s0[3]`), else by its offset (`regs0+0x4`).
    fn fire(
        &self,
        r: RegionHandle,
        off: usize,
        slot: bool,
        applies: impl Fn(&Fault) -> bool,
    ) -> Option<Fault> {
        let mut st = self.lock();
        let st = &mut *st;
        let (region, core) = (r.id(), core_of(r.id()));
        let mut fired = None;
        for i in 0..st.rules.len() {
            let (rule, count, _) = &mut st.rules[i];
            if !applies(&rule.fault) || rule.core.is_some_and(|c| Some(c) != core) {
                continue;
            }
            // Every applicable rule counts the operation, even when an
            // earlier rule fires on it; the first rule that fires wins.
            *count += 1;
            let fires = match rule.trigger {
                Trigger::Nth(n) => *count == n,
                Trigger::From(n) => *count >= n,
                Trigger::Chance { num, den } => st.rng.chance(num, den),
            };
            if fires && fired.is_none() {
                fired = Some((i, rule.fault));
            }
        }
        let (i, fault) = fired?;
        st.rules[i].2 += 1;
        if st.recent.len() == RECENT_INJECTIONS {
            st.recent.pop_front();
        }
        st.recent.push_back(Injected {
            rule: i,
            fault,
            at: match slot {
                true => format!("{region}[{}]", off / RECORD),
                false => format!("{region}+{off:#x}"),
            },
        });
        Some(fault)
    }
}

/// Apply a descriptor corruption to raw bytes (ring id and pointer keep
/// their positions in all views).
pub fn corrupt_desc(desc: &[u8; RECORD], what: DescCorruption) -> [u8; RECORD] {
    let mut d = *desc;
    let mut w = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    match what {
        DescCorruption::BadLength => {
            let len = w & udma::LEN_MASK;
            let new = if len == 0 {
                8
            } else {
                (len + 4) & udma::LEN_MASK
            };
            w = (w & !udma::LEN_MASK) | new;
        }
        DescCorruption::BadRingId => {
            let id = udma::LenCtrl::ring_id_of(w);
            let bad = u32::from((id + 2) % udma::RING_IDS);
            w = (w & !(udma::RING_ID_MASK << udma::RING_ID_SHIFT)) | (bad << udma::RING_ID_SHIFT);
        }
        DescCorruption::BadAddress => {
            d[udma::field::PTR..udma::field::PTR + 8].copy_from_slice(&WILD_PA.to_le_bytes());
        }
    }
    d[0..4].copy_from_slice(&w.to_le_bytes());
    d
}

impl<H: Hal> Hal for FaultInjector<H> {
    fn name(&self) -> String {
        format!("faults({})", self.inner.name())
    }
    crate::hal::forward_hal!(self => self.inner;
        map, base_addr, event, notify, wait, event_fd);

    #[inline(always)]
    fn access(&self, r: RegionHandle, off: usize, a: Access<'_>) -> Result<u64, HalError> {
        if !self.armed {
            // No rule can fire (and none counts): exactly what the arms
            // below do with an empty plan, minus the lock and the decode.
            return self.inner.access(r, off, a);
        }
        let stale = self.stale_reads && matches!(r.id(), RegionId::Regs { .. });
        match a {
            Access::Load(Width::W32, order) if stale => {
                let v = self.inner.load_u32(r, off, order)?;
                let fault = self.fire(r, off, false, |f| {
                    matches!(*f, Fault::StaleRead { off: o, span, .. } if off >= o && off - o < span)
                });
                match fault {
                    Some(Fault::StaleRead { lag, .. }) => Ok(v.wrapping_sub(lag).into()),
                    _ => Ok(v.into()),
                }
            }
            // A run of words reaches the backend whole unless stale reads are
            // armed on a register block (then word by word, each a chance to
            // fire).
            Access::LoadRun(out) if stale => {
                for (i, w) in out.iter_mut().enumerate() {
                    *w = self.load_u32(r, off + 4 * i, Ordering::Relaxed)?;
                }
                Ok(0)
            }
            // Descriptors are corrupted; NQ records dropped, or a DONE one
            // rewritten into an ERROR record of the class (same execution,
            // engine, phase and timestamps).
            Access::WriteRecord(kind @ (Record::Desc | Record::Nq), rec) => {
                let dir = match r.id() {
                    RegionId::DescRing { dir, .. } => Some(dir),
                    _ => None,
                };
                let done = (kind == Record::Nq)
                    .then(|| nq::NqEntry::decode(rec).ok())
                    .flatten()
                    .filter(|e| e.kind == nq::Kind::Done);
                let fault = self.fire(r, off, true, |f| match (kind, f) {
                    (Record::Desc, Fault::CorruptDesc { dir: d, .. }) => {
                        dir.is_some() && (d.is_none() || *d == dir)
                    }
                    (Record::Nq, Fault::DropNq) => true,
                    (Record::Nq, Fault::NqError(_)) => done.is_some(),
                    _ => false,
                });
                let rec = match (fault, done) {
                    (Some(Fault::CorruptDesc { what, .. }), _) => corrupt_desc(rec, what),
                    (Some(Fault::NqError(class)), Some(e)) => {
                        let e = nq::NqEntry {
                            kind: nq::Kind::Error(class),
                            ..e
                        };
                        e.encode().unwrap_or(*rec)
                    }
                    (Some(Fault::DropNq), _) => return Ok(0),
                    _ => *rec,
                };
                self.inner.access(r, off, Access::WriteRecord(kind, &rec))
            }
            Access::TailInc(n) => {
                if self
                    .fire(r, off, false, |f| *f == Fault::DropDoorbell)
                    .is_some()
                {
                    // Dropped: report the unchanged total, as if the write
                    // was lost on the bus.
                    return self
                        .inner
                        .load_u32(r, off, Ordering::Relaxed)
                        .map(u64::from);
                }
                self.inner.access(r, off, Access::TailInc(n))
            }
            a => self.inner.access(r, off, a),
        }
    }
}
