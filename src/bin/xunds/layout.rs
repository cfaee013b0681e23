//! `xunds layout`.

use std::process::ExitCode;

pub fn main(_args: &[String]) -> ExitCode {
    crate::usage_error("`layout` is not implemented yet")
}
