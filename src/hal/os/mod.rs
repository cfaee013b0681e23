//! The operating-system layer at the bottom of the HAL: mappings ([`mem`],
//! with the SIGBUS guard of file-backed ones), eventfds and `poll(2)`
//! ([`eventfd`]), and the `membarrier(2)` fence ([`membarrier`]). Every raw
//! `libc` call of the crate's protocols and runners is here; this layer
//! imports nothing else of the crate, so everything above it (the device
//! bus in [`crate::hal`], the ring, the datastore, the runners) points down
//! to it and never the other way.

pub mod eventfd;
pub mod mem;
pub mod membarrier;
mod sigbus;
