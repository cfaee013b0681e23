//! The XU execution queue protocol (seed 000 §1, §2, §5, §6): the three-cursor
//! SPSC ring, seq_id handles and completion waiters.
//!
//! `ring` is its own folder because the protocol is generic over where its
//! cursors and slots live: owned atomics through [`crate::sync`] (unit tests,
//! loom, deterministic runs) and the byte-exact `xu_queue_t` header and slot
//! array inside mapped memory (production, through [`crate::hal::mem`]).
