//! `nq_entry`: our 16-byte notification-queue record (SPEC-NOTES.md
//! "Notification queues": the format is not public, so it is ours).
//!
//! (The HAL issue completes this module.)

use super::layout::Block;

/// `sizeof(nq_entry)`.
pub const SIZE: usize = 16;

/// Layout (placeholder until the HAL issue defines the fields).
pub const LAYOUT: Block = Block {
    name: "nq_entry",
    size: SIZE,
    fields: &[],
};

/// The error class a device engine reports. The numbering is order-locked to
/// the NDS `ERR_*` counters: counter index = `ERR_GENERIC` (7) + class
/// (seed 004 §3 GOTCHA; SPEC-NOTES.md NC counters 7..12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ErrorClass {
    /// `ERR_GENERIC` (NC counter 7).
    Generic = 0,
    /// `ERR_NUMERICAL` (NC counter 8).
    Numerical = 1,
    /// `ERR_MODEL` (NC counter 9).
    Model = 2,
    /// `ERR_TRANSIENT` (NC counter 10).
    Transient = 3,
    /// `ERR_HW` (NC counter 11).
    Hw = 4,
    /// `ERR_RT` (NC counter 12).
    Runtime = 5,
}

impl ErrorClass {
    /// Every class, in code order.
    pub const ALL: [ErrorClass; 6] = [
        ErrorClass::Generic,
        ErrorClass::Numerical,
        ErrorClass::Model,
        ErrorClass::Transient,
        ErrorClass::Hw,
        ErrorClass::Runtime,
    ];

    /// Decode a raw class byte.
    pub const fn from_u8(v: u8) -> Option<ErrorClass> {
        match v {
            0 => Some(ErrorClass::Generic),
            1 => Some(ErrorClass::Numerical),
            2 => Some(ErrorClass::Model),
            3 => Some(ErrorClass::Transient),
            4 => Some(ErrorClass::Hw),
            5 => Some(ErrorClass::Runtime),
            _ => None,
        }
    }

    /// Lower-case name (`generic`, `numerical`, ...), as fault specs spell it.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorClass::Generic => "generic",
            ErrorClass::Numerical => "numerical",
            ErrorClass::Model => "model",
            ErrorClass::Transient => "transient",
            ErrorClass::Hw => "hw",
            ErrorClass::Runtime => "runtime",
        }
    }
}
