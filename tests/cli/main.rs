//! The `xunds` command line as a user and another process see it: argument
//! handling, `layout`, `sim`, `monitor` and its Prometheus companion, the
//! README's examples, and the C conformance program (ignored by a plain
//! `cargo test`; `.ci/run` runs it).

#[path = "../nds_support/mod.rs"]
mod nds_support;

mod c_conformance;
mod commands;
mod companion;
mod examples;
mod layout;
mod monitor;
mod sim;
