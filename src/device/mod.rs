//! The simulated device (seed 000 §3, §6): UDMA descriptor rings, request
//! staging, the sequencer and its engines executing our small instruction
//! format on device memory, and the NQ records it writes back. Its own folder
//! because it is the far side of the HAL: it plays the hardware.

pub mod engine;
pub mod isa;
pub mod model;
