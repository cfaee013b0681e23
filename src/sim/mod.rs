//! The simulator's platform: [`crate::hal::Hal`] backends and middleware that
//! exist only to run and check xunds without the hardware.
//!
//! - [`fake::FakeHal`]: in-memory words (`crate::sync` atomics, so loom sees
//!   them under `--cfg loom`), simulated events that never block. Deterministic.
//! - [`tracer::Tracer`]: records every operation as a deterministic
//!   [`tracer::TraceOp`] (regions by name, offsets relative to the region base):
//!   the one HAL event stream, its text view and its binary encoding for
//!   the trace digest (the device tests re-issue its records).
//! - [`stream`]: the trace's binary event stream (header, event encoding,
//!   digest, checkpoints, a replay's compare) that `crate::system::trace`
//!   writes to its files.
//! - [`fault::FaultInjector`]: seeded ([`crate::prng::SplitMix64`]) corruption
//!   of descriptors, dropped doorbells, dropped or rewritten NQ records, stale
//!   register reads.
//!
//! Each middleware wraps `Hal::access` once, so it composes over any backend,
//! the Linux one included.

pub mod events;
pub mod fake;
pub mod fault;
pub mod stream;
pub mod tracer;
