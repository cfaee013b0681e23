//! The wire layer (docs/abi.md §1 and §2 byte formats): every worked example
//! and checklist item pinned byte for byte, property tests of every decoder,
//! and insta snapshots of the annotated dumps. One test binary, one module
//! per suite.

mod fuzz000;
mod fuzz004;
mod seed000;
mod seed004;
mod snapshots000;
mod snapshots004;
