//! `xunds run`.

use std::process::ExitCode;

pub fn main(_args: &[String]) -> ExitCode {
    crate::usage_error("`run` is not implemented yet")
}
