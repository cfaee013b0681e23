//! `xunds replay FILE [--print]`: re-run a recorded deterministic run from
//! its trace header and compare the new event stream with the recorded
//! checkpoints. Exit 0 when identical, 1 with the first differing block of
//! the text view, 2 on a usage or header error.

use std::io::{BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use xunds::system::job::{self, JobConfig};
use xunds::system::trace::{self, TraceDiff, TraceHeader, BINARY_VERSION};

/// Re-run a recorded deterministic trace and compare.
///
/// Reads the header of a trace written by `xunds run --deterministic --trace
/// FILE` (seed and configuration), runs the same deterministic job again,
/// and compares its event stream with the recorded checkpoints as it goes:
/// exit 0 when they agree, exit 1 with the first block of the text view
/// where they differ (the replay stops there, or where the recorded trace
/// ends), exit 2 when FILE is not a binary trace of ours or its header is
/// out of range.
#[derive(clap::Args)]
pub struct Args {
    /// The recorded trace.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print the replay's text view (one line per event, up to the first
    /// difference) before the verdict.
    #[arg(long)]
    print: bool,
}

/// Replay `file`: the diff outcome, and the text view when asked for.
fn replay(file: &Path, print: bool) -> Result<(TraceDiff, Option<PathBuf>), String> {
    let f = trace::open_recorded(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let header = TraceHeader::read(&mut BufReader::new(f))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    if header.version != BINARY_VERSION {
        return Err(format!(
            "{}: a text view (v{}), not a recorded trace: record one with `xunds run --deterministic --trace FILE`",
            file.display(),
            header.version
        ));
    }
    // The header's configuration is the recorded run's, not flags of this
    // command: say so when the runner refuses it.
    let mut cfg = JobConfig::from_header(&header).map_err(|e| {
        format!(
            "{}: the recorded configuration is refused: {e}",
            file.display()
        )
    })?;
    let dir = std::env::temp_dir();
    let tag = format!("xunds-replay-{}", std::process::id());
    let view = print.then(|| dir.join(format!("{tag}.txt")));
    // The replay compares as it runs and stops at the first difference or
    // at the recorded end, whatever executions the header claims; the view
    // holds at most the recorded events plus one block.
    cfg.replay = Some(file.to_path_buf());
    cfg.trace = view.clone();
    cfg.unnamed_slab = true;
    let r = job::run(&cfg, &mut |_, _| {});
    let r = r.map_err(|e| {
        if let Some(v) = &view {
            let _ = std::fs::remove_file(v);
        }
        e.to_string()
    })?;
    let d = r
        .replay
        .ok_or_else(|| "the run kept no comparison".to_string())?;
    Ok((d, view))
}

/// Copy the text view to stdout and delete it.
fn print_view(view: &Path) -> std::io::Result<()> {
    let mut f = std::fs::File::open(view)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    std::io::copy(&mut f, &mut out)?;
    out.flush()?;
    std::fs::remove_file(view)
}

pub fn main(args: Args) -> ExitCode {
    match replay(&args.file, args.print) {
        Ok((d, view)) => {
            if let Some(v) = view {
                if let Err(e) = print_view(&v) {
                    eprintln!("xunds replay: the text view: {e}");
                }
            }
            println!("replay: {d}");
            if d.is_identical() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("xunds replay: {e}");
            ExitCode::from(2)
        }
    }
}
