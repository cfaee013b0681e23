//! `xunds`: the command line. Subcommands: `layout`, `nds dump`, `run`,
//! `replay`, `monitor`, `top`. Command-line-only code (argument parsing, JSON and table output,
//! the progress bar) lives here, outside the library.

mod json;
mod layout;
mod monitor;
mod nds;
mod replay;
mod run;

use std::process::ExitCode;

fn main() -> ExitCode {
    // SAFETY: restores the default SIGPIPE disposition before any thread is
    // started; no Rust state depends on it. A closed pipe (`xunds nds dump
    // ... | head`) then ends the process quietly, as other Unix tools do,
    // instead of making `println!` panic.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    match args.first().map(String::as_str) {
        Some("layout") => layout::main(rest),
        Some("nds") => nds::main(rest),
        Some("run") => run::main(rest),
        Some("replay") => replay::main(rest),
        Some("monitor") => monitor::main_from(rest),
        Some("top") => monitor::top::main_from(rest),
        Some("--help") | Some("-h") | Some("help") | None => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("xunds: unknown command {other:?}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Print a usage error and return exit code 2.
pub(crate) fn usage_error(msg: &str) -> ExitCode {
    eprintln!("xunds: {msg}\n\n{USAGE}");
    ExitCode::from(2)
}

const USAGE: &str = "\
usage: xunds <command> [options]

commands:
  layout [--json]        every ABI block and the NDS region map
  nds dump PATH [--json] read a datastore slab (read-only)
  run [flags]            the main job on the simulated device
                         (--executions N --vncs V --models M --seed S --slab PATH
                          --deterministic --trace FILE --faults SPEC --json)
  replay FILE            re-run a recorded deterministic trace
  monitor [SLAB...]      neuron-monitor JSON per period (--period, --once, -c FILE,
                          --prometheus ADDR for /metrics; --help for all)
  top [SLAB...]          live terminal view of running xunds processes";
