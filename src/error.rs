//! The top-level error: each layer keeps its own small error type (giving the
//! payload back where that matters) and converts into [`Error`] at the
//! system boundary. Hand-written `Display`; no `anyhow` in the library.

use core::fmt;
use std::io;

use crate::hal::mem::MemError;
use crate::wire::{status::NrtStatus, WireError};

/// Any xunds failure, as the public API and the command line see it.
#[derive(Debug)]
pub enum Error {
    /// Bytes refused by a wire decoder.
    Wire(WireError),
    /// A bad access into mapped memory.
    Mem(MemError),
    /// An operating-system call failed.
    Io(io::Error),
    /// A runtime status with context (what the C runtime would return).
    Status {
        /// The status code.
        status: NrtStatus,
        /// What was being done.
        context: String,
    },
    /// A run of the actor system failed (livelock, panic, wall bound).
    Run(crate::system::runner::RunError),
    /// Anything else, described.
    Other(String),
}

impl Error {
    /// The `NRT_STATUS` a C caller would see for this error.
    pub fn status(&self) -> NrtStatus {
        match self {
            Error::Status { status, .. } => *status,
            Error::Wire(_) => NrtStatus::INVALID,
            Error::Mem(_) => NrtStatus::INVALID,
            Error::Io(_) => NrtStatus::FAILURE,
            Error::Run(_) => NrtStatus::FAILURE,
            Error::Other(_) => NrtStatus::FAILURE,
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

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Wire(e) => write!(f, "wire: {e}"),
            Error::Mem(e) => write!(f, "memory: {e}"),
            Error::Io(e) => write!(f, "io: {e}"),
            Error::Status { status, context } => write!(f, "{status}: {context}"),
            Error::Run(e) => write!(f, "run: {e}"),
            Error::Other(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Wire(e) => Some(e),
            Error::Mem(e) => Some(e),
            Error::Io(e) => Some(e),
            Error::Run(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WireError> for Error {
    fn from(e: WireError) -> Self {
        Error::Wire(e)
    }
}

impl From<MemError> for Error {
    fn from(e: MemError) -> Self {
        Error::Mem(e)
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<crate::system::runner::RunError> for Error {
    fn from(e: crate::system::runner::RunError) -> Self {
        Error::Run(e)
    }
}
