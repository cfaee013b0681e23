//! The suites that need `CountingAlloc` as the process's global allocator,
//! which is why they are a test binary of their own.

#[path = "../counting_alloc/mod.rs"]
mod counting_alloc;
#[path = "../runner_toys/mod.rs"]
mod runner_toys;

mod counter;
mod e2e;

#[global_allocator]
static ALLOC: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc::new();
