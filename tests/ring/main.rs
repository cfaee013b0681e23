//! The XU ring protocol over both storages: the suite and the property tests
//! against a model. The suite counts the process's open fds (its tests take
//! `ring_common::serial`), so no other layer's tests share this binary.

#[macro_use]
mod ring_common;

mod props;
mod queue;
