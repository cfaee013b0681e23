//! The NDS publisher's cycle: it publishes the process info once, then
//! applies messages; a model unload is accepted only for a model whose
//! record it committed.
//!
//! ```text
//! STARTING --start--> RUNNING
//! RUNNING --apply--> RUNNING
//! RUNNING --unload--> RUNNING   (a committed record)
//! ```

super::machine! {
    /// The publisher machine.
    pub struct PublisherCycle = "publisher";
    /// Where the publisher is.
    pub enum PublisherState {
        /// Nothing published yet.
        Starting = "STARTING",
        /// Process info published: applying messages.
        Running = "RUNNING",
    }
    /// What the publisher handles.
    pub enum PublisherEvent {
        /// Publish process info, versions and features.
        Start = "start",
        /// Apply a completion, refusal, model load or host-memory message.
        Apply = "apply",
        /// Delete the record of an unloaded model.
        Unload = "unload",
    }
    rows {
        Starting + Start => Running,
        Running + Apply => Running,
        Running + Unload => Running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, step};

    #[test]
    fn nothing_is_applied_before_the_start() {
        check_table::<PublisherCycle>().unwrap();
        use PublisherEvent as E;
        use PublisherState as S;
        assert!(step::<PublisherCycle>(S::Starting, E::Apply).is_err());
        assert!(step::<PublisherCycle>(S::Running, E::Start).is_err());
        assert_eq!(
            step::<PublisherCycle>(S::Running, E::Unload),
            Ok(S::Running)
        );
    }
}
