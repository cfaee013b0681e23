//! The system's error: each layer below keeps its own small error type
//! (giving the payload back where that matters) and converts into [`Error`]
//! here, at the system boundary; nothing below `system` names it. `Display`, `Error` and
//! `From` come from `error_enum!`; no `anyhow` or `thiserror` in the library.

use std::io;

use crate::hal::mem::MemError;
use crate::hal::HalError;
use crate::nds::NdsError;
use crate::ring::InitError;
use crate::wire::{status::NrtStatus, WireError};

error_enum! {
    /// Any xunds failure, as the public API and the command line see it.
    #[derive(Debug)]
    pub enum Error {
        /// Bytes refused by a wire decoder.
        Wire(#[from] WireError) => "wire: {0}",
        /// A bad access into mapped memory.
        Mem(#[from] MemError) => "memory: {0}",
        /// An operating-system call failed.
        Io(#[from] io::Error) => "io: {0}",
        /// A runtime status with context (what the C runtime would return).
        Status {
            /// The status code.
            status: NrtStatus,
            /// What was being done.
            context: String,
        } => "{status}: {context}",
        /// A HAL operation failed.
        Hal(#[from] HalError) => "hal: {0}",
        /// A run of the actor system failed (livelock, panic, wall bound).
        Run(#[from] crate::system::runner::RunError) => "{0}",
        /// Anything else, described.
        Other(String) => "{0}",
    }
}

impl Error {
    /// The `NRT_STATUS` a C caller would see for this error.
    pub fn status(&self) -> NrtStatus {
        match self {
            Error::Status { status, .. } => *status,
            Error::Wire(_) | Error::Mem(_) => NrtStatus::INVALID,
            Error::Io(_) | Error::Hal(_) | Error::Run(_) | Error::Other(_) => NrtStatus::FAILURE,
        }
    }

    /// A status error with context.
    pub fn status_with(status: NrtStatus, context: impl Into<String>) -> Error {
        Error::Status {
            status,
            context: context.into(),
        }
    }
}

impl From<NdsError> for Error {
    fn from(e: NdsError) -> Self {
        match e {
            NdsError::Io(e) => Error::Io(e),
            NdsError::NoSpace => Error::status_with(NrtStatus::RESOURCE, e.to_string()),
            other => Error::status_with(NrtStatus::INVALID, other.to_string()),
        }
    }
}

impl From<InitError> for Error {
    fn from(e: InitError) -> Self {
        Error::status_with(e.status(), e.to_string())
    }
}
