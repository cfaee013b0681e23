//! `xunds`: the command line. Subcommands: `layout`, `nds dump`, `run`,
//! `replay`, `sim`, `monitor`, `top`. Command-line-only code (argument parsing with clap, JSON output
//! with serde_json, text tables, the progress line) lives here, outside the
//! library.
//!
//! Each subcommand is a variant of [`Command`] holding its own clap `Args`
//! struct in its own module; a flag is one field of that struct. Exit codes:
//! 0 success (and `--help`, `--version`), 1 a failure while running (a slab
//! refused, wrong outputs, a replay that differs), 2 a usage error: an
//! unknown flag, a bad or out-of-range value, a bad combination of flags
//! (one line on stderr naming the flag), or no subcommand at all (the usage).

/// A JSON object with its keys in the order written: a struct made on the
/// spot (serde writes a struct's fields in order, and each field's type is
/// its value's), so a document is written once, key by key, where its
/// values are taken. Attributes on a key go to its field
/// (`#[serde(skip_serializing_if = "crate::is_null")]`).
macro_rules! obj {
    ($($(#[$m:meta])* $k:ident : $v:expr),* $(,)?) => {{
        #[derive(serde::Serialize)]
        struct Doc<$(#[allow(non_camel_case_types)] $k),*> { $($(#[$m])* $k: $k),* }
        Doc { $($k: $v),* }
    }};
}

mod duration;
pub(crate) use duration::parse_duration;
mod layout;
mod monitor;
mod nds;
mod replay;
mod run;
mod sim;

use std::fmt::Display;
use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};
use serde::Serialize;

/// Byte-exact, hardware-free reimplementation of the libnrt 2.31 XU
/// execution queue and NDS datastore ABIs, on a simulated device.
#[derive(Parser)]
#[command(name = "xunds", version, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands (a new one is a variant here and a module beside this
/// file).
#[derive(Subcommand)]
enum Command {
    Layout(layout::Args),
    #[command(subcommand)]
    Nds(nds::Command),
    Run(run::Args),
    Replay(replay::Args),
    Sim(sim::Args),
    Monitor(monitor::MonitorArgs),
    Top(monitor::top::TopArgs),
}

fn main() -> ExitCode {
    // SAFETY: restores the default SIGPIPE disposition before any thread is
    // started; no Rust state depends on it. A closed pipe (`xunds nds dump
    // ... | head`) then ends the process quietly, as other Unix tools do,
    // instead of making `println!` panic.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    match cli.command {
        Command::Layout(a) => layout::main(a),
        Command::Nds(c) => nds::main(c),
        Command::Run(a) => run::main(a),
        Command::Replay(a) => replay::main(a),
        Command::Sim(a) => sim::main(a),
        Command::Monitor(a) => monitor::main(a),
        Command::Top(a) => monitor::top::main(a),
    }
}

/// One line `<command>: <message>` on stderr and exit `code`: 2 for a
/// usage error found after parsing (a bad combination of flags; the same
/// style as clap's own), 1 for a failure while running.
pub(crate) fn fail(code: u8, command: &str, msg: impl Display) -> ExitCode {
    eprintln!("{command}: {msg}");
    ExitCode::from(code)
}

/// clap's verdict: help and version on stdout with exit 0, and the usage
/// on stderr with exit 2 when no subcommand is given, as clap exits; any
/// other error as one line `xunds <subcommand>: <what>` (clap's message,
/// which names the flag and the allowed range) with exit 2.
fn clap_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            // clap renders "error: <what>[\n  <detail>...]\n\n<tip and
            // usage>"; keep the first paragraph, on one line.
            let text = e.render().to_string();
            let first = text.split("\n\n").next().unwrap_or_default();
            let msg = first.lines().map(str::trim).collect::<Vec<_>>().join(" ");
            let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
            fail(2, &command_path(), msg)
        }
    }
}

/// `xunds <subcommand>...`: the subcommands named on the command line (what
/// an error message starts with).
fn command_path() -> String {
    let mut cmd = Cli::command();
    let mut path = vec!["xunds".to_string()];
    for arg in std::env::args().skip(1) {
        let Some(sub) = cmd.find_subcommand(&arg).cloned() else {
            break;
        };
        path.push(sub.get_name().to_string());
        cmd = sub;
    }
    path.join(" ")
}

/// The progress line of a text run on a terminal (stderr): shown once the
/// run has taken `after`, redrawn at most ten times a second, cleared when
/// dropped if it was drawn.
pub(crate) struct Progress {
    on: bool,
    start: Instant,
    after: Duration,
    last: Option<Instant>,
}

impl Progress {
    /// Off with `--json` or when stderr is not a terminal.
    pub(crate) fn new(json: bool, after: Duration) -> Progress {
        Progress {
            on: !json && std::io::stderr().is_terminal(),
            start: Instant::now(),
            after,
            last: None,
        }
    }

    /// Draw `line(seconds since the start)` over the last line, unless the
    /// run is younger than `after` or the last line is under 100 ms old.
    pub(crate) fn draw(&mut self, line: impl FnOnce(f64) -> String) {
        let recent = |t: Instant| t.elapsed() < Duration::from_millis(100);
        if !self.on || self.start.elapsed() < self.after || self.last.is_some_and(recent) {
            return;
        }
        self.last = Some(Instant::now());
        eprint!("\r{}", line(self.start.elapsed().as_secs_f64()));
        let _ = std::io::stderr().flush();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.last.is_some() {
            eprint!("\r{}\r", " ".repeat(79));
            let _ = std::io::stderr().flush();
        }
    }
}

/// Bytes in lower-case hex (a model record's uuid).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `true` when `v` is JSON `null` (for `skip_serializing_if` on an [`obj!`]
/// key, whose type is generic).
pub(crate) fn is_null<T: Serialize>(v: &T) -> bool {
    serde_json::to_value(v).is_ok_and(|v| v.is_null())
}

/// One JSON document on stdout, compact, with a newline.
pub(crate) fn print_json(v: &impl Serialize) {
    match serde_json::to_string(v) {
        Ok(s) => println!("{s}"),
        // Only a non-string map key or a failing Serialize impl can fail,
        // and none of the documents has either.
        Err(e) => eprintln!("xunds: JSON output: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
