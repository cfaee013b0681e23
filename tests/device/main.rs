//! The HAL contract over every backend, and the simulated device above it:
//! wire formats, staging, the engines, the model, the whole device loop and
//! every device fault.

mod engines;
mod faults;
mod hal_backends;
mod model;
mod replay;
mod staging;
mod support;
mod whole_loop;
mod wire;
