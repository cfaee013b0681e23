//! NDS record commit lifecycle (docs/abi.md §2.6-§2.8).
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
//!    |       in private)       copy, docs/abi.md §2.8)                               |   |
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

use super::{Fsm, Row};

/// Where one record is in its commit lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordState {
    /// Nothing published; for a model slot its bitmap bit is clear.
    Free,
    /// Reserved (bitmap bit set for a model slot); the record is built in a
    /// private staging copy with a zero hash word.
    Staged,
    /// The staging copy carries its FNV-1a-32 hash (docs/abi.md §2.8).
    Stamped,
    /// The slab holds the record with a valid hash; readers see it Fresh.
    Published,
    /// An update in place is running: the slab's hash word is zero while the
    /// body is rewritten.
    Updating,
    /// The record is zeroed in the slab; the bitmap bit is still set.
    Deleted,
}

/// What the writer does to a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordEvent {
    /// Take the slot and build the record in private staging memory.
    Stage,
    /// Stamp the staging copy with its hash.
    Stamp,
    /// Copy the body into the slab word by word, then store the hash word
    /// with Release.
    Publish,
    /// Start an update in place: stage and stamp the new copy, zero the slab's
    /// hash word.
    BeginUpdate,
    /// Zero the hash word, then the whole record.
    Delete,
    /// Clear the bitmap bit: the slot may be reused.
    Reclaim,
}

/// The NDS record commit machine.
#[derive(Clone, Copy, Debug)]
pub struct RecordFsm;

impl Fsm for RecordFsm {
    type State = RecordState;
    type Event = RecordEvent;

    const NAME: &'static str = "nds_record";

    const TABLE: &'static [Row<RecordState, RecordEvent>] = {
        use RecordEvent as E;
        use RecordState as S;
        &[
            Row {
                from: S::Free,
                event: E::Stage,
                to: S::Staged,
            },
            Row {
                from: S::Staged,
                event: E::Stamp,
                to: S::Stamped,
            },
            Row {
                from: S::Stamped,
                event: E::Publish,
                to: S::Published,
            },
            Row {
                from: S::Published,
                event: E::BeginUpdate,
                to: S::Updating,
            },
            Row {
                from: S::Updating,
                event: E::Publish,
                to: S::Published,
            },
            Row {
                from: S::Published,
                event: E::Delete,
                to: S::Deleted,
            },
            Row {
                from: S::Deleted,
                event: E::Reclaim,
                to: S::Free,
            },
        ]
    };

    const STATES: &'static [RecordState] = &[
        RecordState::Free,
        RecordState::Staged,
        RecordState::Stamped,
        RecordState::Published,
        RecordState::Updating,
        RecordState::Deleted,
    ];

    const EVENTS: &'static [RecordEvent] = &[
        RecordEvent::Stage,
        RecordEvent::Stamp,
        RecordEvent::Publish,
        RecordEvent::BeginUpdate,
        RecordEvent::Delete,
        RecordEvent::Reclaim,
    ];

    fn transition(state: RecordState, event: RecordEvent) -> Option<RecordState> {
        use RecordEvent as E;
        use RecordState as S;
        match (state, event) {
            (S::Free, E::Stage) => Some(S::Staged),
            (S::Staged, E::Stamp) => Some(S::Stamped),
            (S::Stamped, E::Publish) | (S::Updating, E::Publish) => Some(S::Published),
            (S::Published, E::BeginUpdate) => Some(S::Updating),
            (S::Published, E::Delete) => Some(S::Deleted),
            (S::Deleted, E::Reclaim) => Some(S::Free),
            _ => None,
        }
    }

    fn state_name(state: RecordState) -> &'static str {
        match state {
            RecordState::Free => "FREE",
            RecordState::Staged => "STAGED",
            RecordState::Stamped => "STAMPED",
            RecordState::Published => "PUBLISHED",
            RecordState::Updating => "UPDATING",
            RecordState::Deleted => "DELETED",
        }
    }

    fn event_name(event: RecordEvent) -> &'static str {
        match event {
            RecordEvent::Stage => "stage",
            RecordEvent::Stamp => "stamp",
            RecordEvent::Publish => "publish",
            RecordEvent::BeginUpdate => "begin_update",
            RecordEvent::Delete => "delete",
            RecordEvent::Reclaim => "reclaim",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step, step_traced, Transition};

    #[test]
    fn table_and_function_agree() {
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
