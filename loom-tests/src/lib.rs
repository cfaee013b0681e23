//! Loom models for xunds live in `tests/`; this crate only hosts them.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p loom-tests --release`.
