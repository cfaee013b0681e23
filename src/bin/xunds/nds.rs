//! `xunds nds`.

use std::process::ExitCode;

pub fn main(_args: &[String]) -> ExitCode {
    crate::usage_error("`nds` is not implemented yet")
}
