//! The system: the public async API (load, unload, schedule, is_completed,
//! last_completed, completion fd, blocking execute), the builder that wires
//! the actors, the threaded and deterministic runners, and trace/replay.
//!
//! The groundwork the API is built on:
//!
//! - `runner`: `runner::ThreadedRunner` (actors on threads of their own or
//!   shared, [`Placement`]) and
//!   `runner::DetRunner` (one thread, seeded schedule, virtual clock,
//!   livelock guard), both driving the same `crate::actors::Actor`s;
//! - `trace`: the line-oriented trace file, its header, digest and diff
//!   (what `xunds replay` reports);
//! - `job` and `sim`: `xunds run` and the seed swarm of `xunds sim` (case
//!   derivation, invariant checks, shrinking).
//!
//! `job`, `sim` and `trace` are the command line's engine: public so the
//! `xunds` binary and the fuzz targets reach them, hidden from the
//! documented API, which is [`System`], its configuration and its reports.

pub mod api;
pub mod error;
pub mod faults;
#[doc(hidden)]
pub mod job;
#[doc(hidden)]
pub mod sim;
#[doc(hidden)]
pub mod trace;

// Public to the testkit (tests and benches drive them directly), private
// otherwise; written out as cfg pairs (not through a macro) so rustfmt
// reaches them.
#[cfg(feature = "testkit")]
pub mod builder;
#[cfg(not(feature = "testkit"))]
mod builder;
#[cfg(feature = "testkit")]
pub mod runner;
#[cfg(not(feature = "testkit"))]
mod runner;

pub use api::{Execution, ModelHandle, ScheduleOpts, System, SystemReport};
pub use builder::{Placement, SlabTarget, SystemConfig};
pub use error::Error;

// What the API's signatures name from the layers below (the simulated
// device's model builder, the actors' statistics), re-exported so a user can
// name them without those modules being public.
pub use crate::actors::producer::PoolAudit;
pub use crate::actors::sequencer::DeviceStats;
pub use crate::actors::work::{Expectations, OutputBuf, RecoverError};
pub use crate::actors::worker::WorkerStats;
pub use crate::actors::Nanos;
pub use crate::device::model::{MlpSpec, ModelBuilder};
