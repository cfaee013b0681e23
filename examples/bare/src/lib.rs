//! The xunds core with nothing under it: no `std`, no allocator, no OS.
//!
//! [`run`] lays an XU ring of [`SLOTS`] slots into a `static`
//! ([`StaticQueue`]), submits [`JOBS`] `&'static` work
//! items, each with a `&'static` [`StatusCell`], triggers them, pops them
//! as the worker, and checks the completions; then it lays out an NDS slab
//! in a `static` ([`StaticSlab`]), counts the executions and publishes a
//! model record with the [`Writer`], and reads both back with a [`Reader`].
//! Everything it names is the `no_std` core API.
//!
//! `src/main.rs` links this into a `#![no_main]` image for
//! `x86_64-unknown-none` and `aarch64-unknown-none`; the test below runs the
//! same code on the host.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use xunds::nds::{Counter, NdsError, RawSlab, Reader, RecordRead, StaticSlab, Writer};
use xunds::ring::{
    InitError, PopError, StaticQueue, StatusCell, SubmitError, TriggerError, XuQueue,
};
use xunds::wire::nds::counters::NcCounter;
use xunds::wire::nds::model::ModelRecord;
use xunds::wire::seq_id::XuId;
use xunds::NrtStatus;

/// Slots in the ring.
pub const SLOTS: usize = 4;
/// Work items submitted (more than the ring holds: it laps).
pub const JOBS: usize = 6;

/// A work item: what travels through a slot's `exec_info` word (its address).
#[derive(Debug)]
pub struct Job {
    /// Its number.
    pub id: u32,
}

static QUEUE: StaticQueue<&'static Job, &'static StatusCell, SLOTS> = StaticQueue::new();
static WORK: [Job; JOBS] = {
    let mut w = [const { Job { id: 0 } }; JOBS];
    let mut i = 0;
    while i < JOBS {
        w[i].id = i as u32 + 1;
        i += 1;
    }
    w
};
static STATUS: [StatusCell; JOBS] = [const { StatusCell::new() }; JOBS];
static SLAB: StaticSlab = StaticSlab::new();

/// The XU this image's ring serves.
pub const XU: XuId = XuId::new(0, 3, 1);

/// Why [`run`] failed.
#[derive(Debug)]
pub enum Failure {
    /// The ring could not be laid out (or the statics already hold it).
    Init(InitError),
    /// A submit was refused for another reason than a full ring.
    Submit(SubmitError),
    /// A trigger was refused.
    Trigger(TriggerError),
    /// A pop was refused for another reason than an empty ring.
    Pop(PopError),
    /// A datastore operation was refused.
    Nds(NdsError),
    /// The ring or the slab did not hold what was written.
    Mismatch(&'static str),
}

impl From<InitError> for Failure {
    fn from(e: InitError) -> Self {
        Failure::Init(e)
    }
}

impl From<TriggerError> for Failure {
    fn from(e: TriggerError) -> Self {
        Failure::Trigger(e)
    }
}

impl From<NdsError> for Failure {
    fn from(e: NdsError) -> Self {
        Failure::Nds(e)
    }
}

/// What [`run`] saw.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    /// Executions popped.
    pub popped: u32,
    /// The sum of the popped job ids.
    pub id_sum: u32,
    /// The completion counter read back from the slab.
    pub counted: u64,
    /// The model id read back from the slab.
    pub model_id: u32,
}

/// Drive the ring, then the slab, and check both. Once per program (the
/// statics hold one queue).
pub fn run() -> Result<Summary, Failure> {
    // The ring: submit, trigger, pop, completion.
    let (mut producer, mut worker) = QUEUE.split(XU, 1)?;
    let (mut popped, mut id_sum) = (0u32, 0u32);
    let mut last = None;
    for (job, cell) in WORK.iter().zip(&STATUS) {
        // A full ring (it holds SLOTS) is drained by the worker first.
        let seq = loop {
            match producer.submit(job, Some(cell)) {
                Ok(seq) => break seq,
                Err(e) if e.error == SubmitError::Full => {
                    producer.trigger_burst(producer.untriggered())?;
                    drain(&mut worker, &mut popped, &mut id_sum)?;
                }
                Err(e) => return Err(Failure::Submit(e.error)),
            }
        };
        last = Some(seq);
    }
    producer.trigger_burst(producer.untriggered())?;
    drain(&mut worker, &mut popped, &mut id_sum)?;
    let last = last.ok_or(Failure::Mismatch("nothing submitted"))?;
    let done = producer.queue().is_completed(last);
    if done != Ok(true) || producer.queue().last_completed() != last {
        return Err(Failure::Mismatch("last submit not completed"));
    }
    if STATUS.iter().any(|c| c.get() != Some(NrtStatus::SUCCESS)) {
        return Err(Failure::Mismatch("a status cell was not written"));
    }

    // The datastore: lay out, count, publish a record; read it back.
    let writer = Writer::new(SLAB.slab())?;
    let done = Counter::nc(0, NcCounter::InferCompleted)?;
    writer.add(done, u64::from(popped))?;
    let slot = writer.commit_model(&ModelRecord {
        model_id: 42,
        ..ModelRecord::EMPTY
    })?;
    // No clock without an OS: the header retry does not pause.
    let reader = Reader::<RawSlab>::attach_with_pause(SLAB.slab(), |_| {})?;
    let counted = reader.counter(done)?;
    let model_id = match reader.model(slot)? {
        RecordRead::Fresh(m) => m.model_id,
        _ => return Err(Failure::Mismatch("model record not fresh")),
    };
    Ok(Summary {
        popped,
        id_sum,
        counted,
        model_id,
    })
}

/// Pop every triggered item, counting them and summing their ids.
fn drain(
    worker: &mut xunds::ring::Worker<&'static XuQueue<&'static Job, &'static StatusCell>>,
    popped: &mut u32,
    id_sum: &mut u32,
) -> Result<(), Failure> {
    loop {
        match worker.pop(NrtStatus::SUCCESS) {
            Ok(p) => {
                *popped += 1;
                *id_sum += p.item.id;
            }
            Err(PopError::Empty) => return Ok(()),
            Err(e) => return Err(Failure::Pop(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ring_and_slab_over_static_memory() {
        let s = super::run().unwrap();
        assert_eq!(s.popped, super::JOBS as u32);
        assert_eq!(s.id_sum, (1..=super::JOBS as u32).sum());
        assert_eq!(s.counted, super::JOBS as u64);
        assert_eq!(s.model_id, 42);
        // The statics hold one queue: a second run is refused, not aliased.
        assert!(matches!(
            super::run(),
            Err(super::Failure::Init(xunds::ring::InitError::InUse))
        ));
    }
}
