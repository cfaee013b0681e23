//! NDS record commit lifecycle (seed 004 §5-§7).
//!
//! One machine per self-describing record the writer owns (the 64 model
//! slots, process-info and process-info-ext). Every commit, update and delete
//! in [`crate::nds::Writer`] steps through it, so an update of a free slot or a
//! double delete is an [`InvalidEvent`](super::InvalidEvent) value instead of
//! corrupted shared memory.
//!
//! ```text
//!            Stage             Stamp              Publish
//!   Free ----------> Staged ----------> Stamped -----------> Published <--+
//!    ^      (slot taken,      (FNV-1a-32 in      (body words, then     |   |
//!    |       record built      the staging        hash word, Release)  |   |
//!    |       in private)       copy, §7)                               |   |
//!    |                                                 BeginUpdate     |   |
//!    |                                  Updating <---------------------+   |
//!    |                (new copy staged and stamped,    |   Publish         |
//!    |                 slab hash word zeroed)          +-------------------+
//!    |   Reclaim                    Delete
//!    +---------- Deleted <------------------ Published
//!       (bitmap bit        (hash word zeroed, then
//!        cleared)           the record zeroed, §5)
//! ```
//!
//! `Staged`/`Stamped` touch only private memory, so a crash there leaves the
//! slot all-zero (Unpublished to readers). In `Updating` and during `Delete`
//! the slab's hash word is 0, which every reader treats as "not published".

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
        /// The staging copy carries its FNV-1a-32 hash (docs/abi.md, record hash).
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
        /// Stamp the staging copy with its hash.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step, step_traced, Fsm, Transition};

    #[test]
    fn every_state_and_event_is_in_a_row() {
        check_table::<RecordFsm>().unwrap();
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
