//! `xunds replay`.

use std::process::ExitCode;

pub fn main(_args: &[String]) -> ExitCode {
    crate::usage_error("`replay` is not implemented yet")
}
