//! The NDS datastore: counter addressing, the reader over random bytes,
//! `xunds nds dump`, truncation races and cross-process readers and writers.

#[path = "../nds_support/mod.rs"]
mod nds_support;

mod cross_process;
mod dump;
mod fuzz;
mod sweep;
mod truncate;
