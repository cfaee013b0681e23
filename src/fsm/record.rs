//! NDS record commit lifecycle (docs/abi.md §2.6-§2.8).
//!
//! One machine per self-describing record the writer owns (the 64 model
//! slots, process-info and process-info-ext). Every commit, update and delete
//! in [`crate::nds::Writer`] steps through it, so an update of a free slot or a
//! double delete is an [`InvalidEvent`] value instead of
//! corrupted shared memory.
//!
//! ```text
//!            Stage             Stamp              Publish
//!   Free ----------> Staged ----------> Stamped -----------> Published <--+
//!    ^      (slot taken,      (bytes final;      (body words, hashed   |   |
//!    |       record built      hash computed     as copied, then the   |   |
//!    |       in private)       at publish)       hash word, Release)   |   |
//!    |                                                 BeginUpdate     |   |
//!    |                                  Updating <---------------------+   |
//!    |                (new copy staged and stamped,    |   Publish         |
//!    |                 slab hash word zeroed)          +-------------------+
//!    |   Reclaim                    Delete
//!    +---------- Deleted <------------------ Published
//!       (bitmap bit        (hash word zeroed, then
//!        cleared)           the record zeroed, docs/abi.md §2.6)
//! ```
//!
//! `Staged`/`Stamped` touch only private memory, so a crash there leaves the
//! slot all-zero (Unpublished to readers). In `Updating` and during `Delete`
//! the slab's hash word is 0, which every reader treats as "not published".

use super::{step, step_traced, InvalidEvent, TransitionHook};

super::machine! {
    /// The NDS record commit machine.
    pub struct RecordFsm = "nds_record";
    /// Where one record is in its commit lifecycle.
    pub enum RecordState {
        /// Nothing published; for a model slot its bitmap bit is clear.
        Free = "FREE",
        /// Reserved (bitmap bit set for a model slot); the record is built in a
        /// private staging copy with a zero hash word.
        Staged = "STAGED",
        /// The record's bytes are final and ready to publish; its FNV-1a-32
        /// hash is folded while `Publish` copies the body into the slab and
        /// stored last (docs/abi.md §2.8, §2.9).
        Stamped = "STAMPED",
        /// The slab holds the record with a valid hash; readers see it Fresh.
        Published = "PUBLISHED",
        /// An update in place is running: the slab's hash word is zero while the
        /// body is rewritten.
        Updating = "UPDATING",
        /// The record is zeroed in the slab; the bitmap bit is still set.
        Deleted = "DELETED",
    }
    /// What the writer does to a record.
    pub enum RecordEvent {
        /// Take the slot and build the record in private staging memory.
        Stage = "stage",
        /// Fix the staging copy for publishing (its hash is computed as
        /// `Publish` copies it).
        Stamp = "stamp",
        /// Copy the body into the slab word by word, then store the hash word
        /// with Release.
        Publish = "publish",
        /// Start an update in place: stage and stamp the new copy, zero the slab's
        /// hash word.
        BeginUpdate = "begin_update",
        /// Zero the hash word, then the whole record.
        Delete = "delete",
        /// Clear the bitmap bit: the slot may be reused.
        Reclaim = "reclaim",
    }
    rows {
        Free + Stage => Staged,
        Staged + Stamp => Stamped,
        Stamped + Publish => Published,
        Published + BeginUpdate => Updating,
        Updating + Publish => Published,
        Published + Delete => Deleted,
        Deleted + Reclaim => Free,
    }
}

/// One lifecycle step of record `id`, traced when a hook is given.
pub(crate) fn go(
    state: &mut RecordState,
    event: RecordEvent,
    id: u64,
    hook: Option<&mut dyn TransitionHook>,
) -> Result<(), InvalidEvent<RecordState, RecordEvent>> {
    *state = match hook {
        Some(h) => step_traced::<RecordFsm, dyn TransitionHook>(*state, event, id, h)?,
        None => step::<RecordFsm>(*state, event)?,
    };
    Ok(())
}

/// A record this call staged (a free record, built privately): the commit's
/// typed steps start here. A record's state outlives a call, so entering is
/// checked against it; the steps after that are ordered by type.
///
/// Publishing a record before stamping it does not compile:
///
/// ```compile_fail,E0599
/// use xunds::fsm::record::{RecordState, Staged};
/// let mut s = RecordState::Free;
/// let staged = Staged::stage(&mut s, 0, None).unwrap();
/// staged.publish(None); // no `publish` on Staged
/// ```
///
/// The order the compiler accepts:
///
/// ```
/// use xunds::fsm::record::{RecordState, Staged};
/// let mut s = RecordState::Free;
/// Staged::stage(&mut s, 0, None).unwrap().stamp(None).unwrap().publish(None).unwrap();
/// assert_eq!(s, RecordState::Published);
/// ```
#[must_use]
#[derive(Debug)]
pub struct Staged<'a> {
    state: &'a mut RecordState,
    id: u64,
}

/// A record whose new copy is stamped (or whose update began): next, its
/// bytes go to the slab and [`Stamped::publish`] ends the commit.
#[must_use]
#[derive(Debug)]
pub struct Stamped<'a> {
    state: &'a mut RecordState,
    id: u64,
}

impl<'a> Staged<'a> {
    /// Stage a free record (`FREE --stage--> STAGED`).
    pub fn stage(
        state: &'a mut RecordState,
        id: u64,
        hook: Option<&mut dyn TransitionHook>,
    ) -> Result<Staged<'a>, InvalidEvent<RecordState, RecordEvent>> {
        go(state, RecordEvent::Stage, id, hook)?;
        Ok(Staged { state, id })
    }

    /// The private copy carries its hash (`STAGED --stamp--> STAMPED`).
    pub fn stamp(
        self,
        hook: Option<&mut dyn TransitionHook>,
    ) -> Result<Stamped<'a>, InvalidEvent<RecordState, RecordEvent>> {
        go(self.state, RecordEvent::Stamp, self.id, hook)?;
        Ok(Stamped {
            state: self.state,
            id: self.id,
        })
    }
}

impl<'a> Stamped<'a> {
    /// Begin the in-place update of a published record (`PUBLISHED
    /// --begin_update--> UPDATING`): its new copy is stamped already.
    pub fn begin_update(
        state: &'a mut RecordState,
        id: u64,
        hook: Option<&mut dyn TransitionHook>,
    ) -> Result<Stamped<'a>, InvalidEvent<RecordState, RecordEvent>> {
        go(state, RecordEvent::BeginUpdate, id, hook)?;
        Ok(Stamped { state, id })
    }

    /// The slab holds the record, hash word last (`--publish--> PUBLISHED`).
    pub fn publish(
        self,
        hook: Option<&mut dyn TransitionHook>,
    ) -> Result<(), InvalidEvent<RecordState, RecordEvent>> {
        go(self.state, RecordEvent::Publish, self.id, hook)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, Fsm, Transition};

    #[test]
    fn every_state_and_event_is_in_a_row() {
        check_table::<RecordFsm>().unwrap();
    }

    /// The table as the other machines pin theirs: a change of a row shows
    /// here, and the diagrams above and in docs/design.md must follow it.
    #[test]
    #[cfg_attr(miri, ignore = "insta reads the snapshot file (Miri isolation)")]
    fn table_snapshot() {
        insta::assert_snapshot!(render_table::<RecordFsm>());
    }

    #[test]
    fn commit_update_delete_walk() {
        use RecordEvent as E;
        let mut trace: Vec<Transition> = Vec::new();
        let mut s = RecordState::Free;
        for e in [
            E::Stage,
            E::Stamp,
            E::Publish,
            E::BeginUpdate,
            E::Publish,
            E::Delete,
            E::Reclaim,
        ] {
            s = step_traced::<RecordFsm, _>(s, e, 5, &mut trace).unwrap();
        }
        assert_eq!(s, RecordState::Free);
        assert_eq!(trace.len(), 7);
        assert_eq!(trace[3].from, "PUBLISHED");
        assert_eq!(trace[3].to, "UPDATING");
        assert!(trace.iter().all(|t| t.id == 5 && t.machine == "nds_record"));
    }

    #[test]
    fn illegal_events_are_values() {
        // Updating or deleting a free slot, publishing an unstamped copy and a
        // double delete are refused without changing the state.
        let e = step::<RecordFsm>(RecordState::Free, RecordEvent::BeginUpdate).unwrap_err();
        assert_eq!(e.state, RecordState::Free);
        assert!(step::<RecordFsm>(RecordState::Free, RecordEvent::Delete).is_err());
        assert!(step::<RecordFsm>(RecordState::Staged, RecordEvent::Publish).is_err());
        assert!(step::<RecordFsm>(RecordState::Deleted, RecordEvent::Delete).is_err());
        assert!(step::<RecordFsm>(RecordState::Updating, RecordEvent::Delete).is_err());
        assert!(e.to_string().contains("nds_record"));
    }

    #[test]
    fn rendered_table_lists_every_row() {
        let t = render_table::<RecordFsm>();
        assert_eq!(t.lines().count(), RecordFsm::TABLE.len());
        assert!(t.contains("PUBLISHED --begin_update--> UPDATING"));
    }
}
