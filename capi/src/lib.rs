//! The C interface of xunds (`include/xunds.h`, generated from this crate by
//! cbindgen; docs/design.md "The C layer").
//!
//! Three sections, in the library's layer order: **core** (an XU ring in
//! caller memory, an NDS writer over caller memory and a reader over a
//! read-only mapping), **std** (slab files with the one-writer lock, ring
//! completion by eventfd) and **sim** (the simulated system, shaped like the
//! runtime's `nrta_*` calls).
//!
//! Every entry point returns an `NRT_STATUS` and runs under `catch_unwind`
//! ([`status::guard`]): a panic never unwinds into C, it is `NRT_FAILURE`.
//! Results go through out-pointers, written only on `NRT_SUCCESS` (unless a
//! function says otherwise). Handles are opaque heap objects carrying a magic
//! word that their release clears ([`status::Checked`]).

#![allow(non_camel_case_types)]

// In the header's order: the status codes, then core, std and sim items
// (each module's functions in layer order).
pub mod status;
pub mod ring;
pub mod nds;
pub mod sim;
