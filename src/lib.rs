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
//! | platform | [`hal`] | mmaps, eventfds, volatile/atomic access to shared and device memory |
//! | simulated platform | `sim` | the in-memory fake HAL, the tracer (the HAL event stream, its text and binary forms, replay) and the fault injector |
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
//!
//! ## Features
//!
//! | feature | default | adds |
//! |---|---|---|
//! | (none) | | `#![no_std]`, no allocator: [`wire`], [`fsm`], [`prng`], the [`ring`] protocol over caller memory ([`ring::StaticQueue`], [`ring::RingMem::init_raw`]), the [`nds`] writer and reader over a caller slab ([`nds::RawSlab`]) |
//! | `std` | yes | the Linux [`hal`], heap and mapped-file storages and slabs, eventfd waiters |
//! | `sim` | yes | (implies `std`) the simulated device and the actors (crate-private), the [`system`] API and its [`system::Error`] |
//! | `testkit` | no | test and benchmark support: the simulator's internals public (the actors' lockstep pace the ring benchmark uses among them), the tracer's replay |
//! | `cli` | yes | (implies `sim`) the `xunds` binary's crates |
#![cfg_attr(not(feature = "std"), no_std)]
// The docs are written for the default features; without `std` their links
// to std-only items (hal, the mapped slabs, waiters) have no target.
#![cfg_attr(not(feature = "std"), allow(rustdoc::broken_intra_doc_links))]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

#[macro_use]
mod macros;

// Public to the testkit (tests and benches drive the simulator's internals),
// private otherwise; cfg pairs rather than a macro, so rustfmt reaches them.
#[cfg(feature = "testkit")]
#[cfg(feature = "sim")]
pub mod actors;
#[cfg(not(feature = "testkit"))]
#[cfg(feature = "sim")]
mod actors;
#[cfg(feature = "testkit")]
#[cfg(feature = "sim")]
pub mod device;
#[cfg(not(feature = "testkit"))]
#[cfg(feature = "sim")]
mod device;
pub mod fsm;
#[cfg(feature = "std")]
pub mod hal;
pub mod nds;
pub mod prng;
pub mod ring;
#[cfg(feature = "testkit")]
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(not(feature = "testkit"))]
#[cfg(feature = "sim")]
mod sim;
#[cfg(feature = "testkit")]
pub mod sync;
#[cfg(not(feature = "testkit"))]
mod sync;
#[cfg(feature = "sim")]
pub mod system;
pub mod wire;

pub use wire::status::NrtStatus;
