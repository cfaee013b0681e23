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

/// Replay `file`: the diff outcome, the text view written to `view` when
/// given.
fn replay(file: &Path, view: Option<&Path>) -> Result<TraceDiff, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", file.display());
    let f = trace::open_recorded(file).map_err(|e| at(&e))?;
    let header = TraceHeader::read(&mut BufReader::new(f)).map_err(|e| at(&e))?;
    if header.version != BINARY_VERSION {
        let v = header.version;
        return Err(at(&format_args!(
            "a text view (v{v}), not a recorded trace: record one with `xunds run --deterministic --trace FILE`"
        )));
    }
    // The header's configuration is the recorded run's, not flags of this
    // command: say so when the runner refuses it.
    let mut cfg = JobConfig::from_header(&header)
        .map_err(|e| at(&format_args!("the recorded configuration is refused: {e}")))?;
    // The replay compares as it runs and stops at the first difference or
    // at the recorded end, whatever executions the header claims; the view
    // holds at most the recorded events plus one block.
    cfg.replay = Some(file.to_path_buf());
    cfg.trace = view.map(Path::to_path_buf);
    cfg.unnamed_slab = true;
    let r = job::run(&cfg, &mut |_, _| {}).map_err(|e| e.to_string())?;
    r.replay.ok_or_else(|| "the run kept no comparison".into())
}

/// Copy the text view to stdout and delete it.
fn print_view(view: &Path) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    std::io::copy(&mut std::fs::File::open(view)?, &mut out)?;
    out.flush()?;
    std::fs::remove_file(view)
}

pub fn main(args: Args) -> ExitCode {
    let tag = format!("xunds-replay-{}.txt", std::process::id());
    let view = args.print.then(|| std::env::temp_dir().join(tag));
    match replay(&args.file, view.as_deref()) {
        Ok(d) => {
            if let Some(Err(e)) = view.as_deref().map(print_view) {
                eprintln!("xunds replay: the text view: {e}");
            }
            println!("replay: {d}");
            // 0 when identical, 1 at a difference.
            ExitCode::from(u8::from(!d.is_identical()))
        }
        Err(e) => {
            if let Some(v) = &view {
                let _ = std::fs::remove_file(v);
            }
            crate::fail(2, "xunds replay", e)
        }
    }
}
