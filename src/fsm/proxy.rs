//! The device proxy's cycle: it polls the simulated device while requests
//! come in, yields a while when none do, then announces sleep on its
//! doorbell eventfd (docs/abi.md §1.10) and sleeps until rung.
//!
//! ```text
//! RUNNING --work--> RUNNING      IDLING --work--> RUNNING
//! RUNNING --no_work--> IDLING    IDLING --no_work--> IDLING
//! IDLING --sleep--> SLEEPING     SLEEPING --wake--> RUNNING
//! ```

super::machine! {
    /// The device proxy machine.
    pub struct ProxyCycle = "device_proxy";
    /// Where the proxy is.
    pub enum ProxyState {
        /// The last poll of the device made progress.
        Running = "RUNNING",
        /// Polls without progress: yielding before it sleeps.
        Idling = "IDLING",
        /// Sleep announced on the doorbell eventfd.
        Sleeping = "SLEEPING",
    }
    /// What a poll found.
    pub enum ProxyEvent {
        /// The device made progress.
        Work = "work",
        /// The device made none.
        NoWork = "no_work",
        /// The yields are spent: announce sleep.
        Sleep = "sleep",
        /// Polled again after sleeping (rung, or the idle bound passed).
        Wake = "wake",
    }
    rows {
        Running + Work => Running,
        Running + NoWork => Idling,
        Idling + Work => Running,
        Idling + NoWork => Idling,
        Idling + Sleep => Sleeping,
        Sleeping + Wake => Running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, step};

    #[test]
    fn sleeps_only_after_idling_and_wakes_to_running() {
        check_table::<ProxyCycle>().unwrap();
        use ProxyEvent as E;
        use ProxyState as S;
        assert!(step::<ProxyCycle>(S::Running, E::Sleep).is_err());
        assert!(step::<ProxyCycle>(S::Sleeping, E::Work).is_err());
        assert_eq!(step::<ProxyCycle>(S::Sleeping, E::Wake), Ok(S::Running));
    }
}
