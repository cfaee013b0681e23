//! The HAL: everything that touches memory shared with another process or the
//! device, and the kernel.
//!
//! `hal` owns `mmap` ([`mem`]), eventfds ([`eventfd`]), and (from the HAL
//! issue) the `Hal` trait with its Linux and in-memory backends and the tracer
//! and fault-injector middleware. Memory another agent may write is reached
//! only through raw pointers with atomic or volatile access, here and in the
//! ring/datastore memory modules; `// SAFETY:` is on every unsafe block.

pub mod eventfd;
pub mod mem;
