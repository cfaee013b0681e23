//! `xunds replay FILE`: re-run a recorded deterministic run from its trace
//! header and compare the new trace with the recorded one line by line.
//! Exit 0 when identical, 1 with the first differing line, 2 on a usage or
//! header error.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use xunds::system::job::{self, JobConfig};
use xunds::system::trace::TraceHeader;

/// Re-run a recorded deterministic trace and compare.
///
/// Reads the header of a trace written by `xunds run --deterministic --trace
/// FILE` (seed and configuration), runs the same deterministic job again
/// into a new trace, and compares the two line by line as it goes: exit 0
/// when they are identical, exit 1 with the first line where they differ
/// (the replay stops there, or where the recorded trace ends), exit 2 when
/// FILE is not a trace of ours or its header is out of range.
#[derive(clap::Args)]
pub struct Args {
    /// The recorded trace.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Replay `file`: the diff outcome.
fn replay(file: &Path) -> Result<(xunds::system::trace::TraceDiff, PathBuf), String> {
    let f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let header = TraceHeader::read(&mut BufReader::new(f)).map_err(|e| e.to_string())?;
    let mut cfg = JobConfig::from_header(&header).map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir();
    let tag = format!("xunds-replay-{}", std::process::id());
    let new_trace = dir.join(format!("{tag}.trace"));
    let slab = dir.join(format!("{tag}.nds"));
    // The replay compares as it runs and stops at the first difference or
    // at the recorded end: it keeps at most the recorded size plus one line
    // on disk, whatever executions the header claims.
    cfg.replay = Some(file.to_path_buf());
    cfg.trace = Some(new_trace.clone());
    cfg.slab = Some(slab.clone());
    let r = job::run(&cfg, &mut |_, _| {});
    let _ = std::fs::remove_file(&slab);
    let r = r.map_err(|e| {
        let _ = std::fs::remove_file(&new_trace);
        e.to_string()
    })?;
    let d = r
        .replay
        .ok_or_else(|| "the run kept no comparison".to_string())?;
    Ok((d, new_trace))
}

pub fn main(args: Args) -> ExitCode {
    match replay(&args.file) {
        Ok((d, new_trace)) => {
            let same = d.is_identical();
            if same {
                println!("replay: {d}");
                let _ = std::fs::remove_file(&new_trace);
                ExitCode::SUCCESS
            } else {
                println!(
                    "replay: {d}\n  (replayed trace kept at {})",
                    new_trace.display()
                );
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("xunds replay: {e}");
            ExitCode::from(2)
        }
    }
}
