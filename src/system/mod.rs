//! The system: the public async API (load, unload, schedule, is_completed,
//! last_completed, completion fd, blocking execute), the builder that wires
//! the actors, the threaded and deterministic runners, and trace/replay.
//!
//! The groundwork the API is built on:
//!
//! - [`runner`]: [`runner::ThreadedRunner`] (one thread per actor) and
//!   [`runner::DetRunner`] (one thread, seeded schedule, virtual clock,
//!   livelock guard), both driving the same [`crate::actors::Actor`]s;
//! - [`clock`]: the virtual and monotonic clocks they hand to actors;
//! - [`trace`]: the line-oriented trace file, its header, digest and diff
//!   (what `xunds replay` reports);
//! - [`alloc`]: a counting global allocator for tests and benchmarks.

pub mod alloc;
pub mod api;
pub mod builder;
pub mod clock;
pub mod faults;
pub mod job;
pub mod runner;
pub mod sim;
pub mod trace;
