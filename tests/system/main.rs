//! The runners and the whole system: the deterministic and threaded
//! runners, the deadlock rule, the ABI path end to end, the public API,
//! faults and recovery, deterministic replay.

mod common;
#[path = "../runner_toys/mod.rs"]
mod runner_toys;

mod abi_path;
mod api_system;
mod e2e_deadlock;
mod e2e_faults;
mod e2e_null_rate;
mod e2e_threaded;
mod recovery;
mod replay;
mod runner_deadlock;
mod runner_det;
mod runner_threaded;
