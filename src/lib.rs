//! # xunds
//!
//! A byte-exact, hardware-free reimplementation of two ABIs of the AWS Neuron
//! runtime (libnrt 2.31): the **XU execution queue** (docs/abi.md §1) and the **NDS
//! datastore** (docs/abi.md §2), built as an embedded-style actor system whose device
//! side is simulated, so the whole pipeline runs and is tested on an ordinary
//! machine.
//!
//! ## A tour of the layers
//!
//! Dependencies point one way, from bytes up to actors (see `docs/design.md`):
//!
//! | layer | module | owns |
//! |---|---|---|
//! | bytes | [`wire`] | every ABI block as a checked byte view / padding-free `repr(C)` type; no unsafe, no I/O |
//! | state | [`fsm`] | pure, table-driven state machines (slot lifecycle, record commit, ...) |
//! | concurrency shim | `sync` | `std` atomics normally, `loom` atomics under `--cfg loom` |
//! | protocols | [`ring`], [`nds`] | the three-cursor XU ring and the NDS record/counter protocols, generic over where their words live |
//! | platform | [`hal`] | mmaps, eventfds, volatile/atomic access to shared and device memory, tracer and fault injector |
//! | device | `device` | the simulated device: UDMA descriptor rings, request staging, the sequencer and its engines |
//! | actors | `actors` | Producer, Worker, Device-sequencer-proxy and NDS-publisher actors with non-blocking `poll` |
//! | system | [`system`] | the public async API, threaded and deterministic runners, trace and replay |
//!
//! One exception to the table's order: [`hal::mem`] (`Mapping`/`Region`, the
//! only way to touch mapped memory) depends on nothing but `libc` and `std`,
//! and the protocols build their mapped backings on it.
//!
//! Support module: [`prng`] (a small seeded generator used by deterministic
//! runs, fault injection and tests). The error the public API returns,
//! [`system::Error`], lives with the system: the layers below keep their own
//! error types and never name it.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

#[macro_use]
mod macros;

testkit_mod! {
    mod actors;
    mod device;
    mod sync;
}
pub mod fsm;
pub mod hal;
pub mod nds;
pub mod prng;
pub mod ring;
pub mod system;
pub mod wire;

pub use wire::status::NrtStatus;
