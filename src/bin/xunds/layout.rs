//! `xunds layout [--json]`: every ABI block (docs/abi.md §1, device side, docs/abi.md §2)
//! and the NDS region map, as a readable table or as the reference JSON a
//! reimplementer in another language checks against:
//! `{"blocks":[{"name","size","fields":[{"name","offset","size"}]}],
//! "nds_regions":[{"name","offset","size"}]}` (no other keys; fields and
//! regions in offset order).

use std::fmt::Write as _;
use std::process::ExitCode;

use serde::Serialize;
use xunds::wire::layout::{Block, Field, Origin};
use xunds::wire::{all_blocks, nds};

/// Every ABI block and the NDS region map.
///
/// Prints each block of the XU queue, device and NDS ABIs (fields, offsets,
/// sizes, padding, whether a field is the spec's or ours) and the NDS region
/// map; `--json` prints the reference document a reimplementer checks
/// against.
#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON document: {"blocks":[{"name","size","fields":[{"name","offset","size"}]}],"nds_regions":[{"name","offset","size"}]}
    #[arg(long)]
    json: bool,
}

pub fn main(args: Args) -> ExitCode {
    let blocks: Vec<&Block> = all_blocks().collect();
    let regions = nds::REGIONS;
    match args.json {
        true => crate::print_json(&to_json(&blocks, regions)),
        false => print!("{}", to_table(&blocks, regions)),
    }
    ExitCode::SUCCESS
}

/// The reference JSON document (keys in this order, no others; fields and
/// regions in offset order, as every layout keeps them: `Block::is_well_formed`).
fn to_json(blocks: &[&Block], regions: &[Field]) -> impl Serialize {
    let span = |name, offset, size| obj! { name: name, offset: offset, size: size };
    let blocks = blocks.iter().map(|b| {
        let fields = b.fields.iter().map(|f| span(f.name, f.offset, f.size));
        obj! { name: b.name, size: b.size, fields: fields.collect::<Vec<_>>() }
    });
    let regions = regions.iter().map(|r| span(r.name, r.offset, r.size));
    obj! { blocks: blocks.collect::<Vec<_>>(), nds_regions: regions.collect::<Vec<_>>() }
}

/// The readable table: one section per block (padding gaps shown), then the
/// NDS region map.
fn to_table(blocks: &[&Block], regions: &[Field]) -> String {
    let mut out = String::new();
    for b in blocks {
        let _ = writeln!(out, "{} ({} bytes, {:#x})", b.name, b.size, b.size);
        let (offset, size, field) = ("offset", "size", "field");
        let _ = writeln!(out, "  {offset:>8}  {size:>5}  {field:<36} origin");
        let mut cursor = 0;
        for f in b.fields {
            if f.offset > cursor {
                pad_row(&mut out, cursor, f.offset - cursor);
            }
            let origin = match f.origin {
                Origin::Seed => "seed",
                Origin::Ours => "ours",
            };
            let (offset, size, name) = (f.offset, f.size, f.name);
            let _ = writeln!(out, "  {offset:>#8x}  {size:>5}  {name:<36} {origin}");
            cursor = cursor.max(f.end());
        }
        if cursor < b.size {
            pad_row(&mut out, cursor, b.size - cursor);
        }
        out.push('\n');
    }
    let _ = writeln!(out, "NDS region map");
    let _ = writeln!(out, "  {:>8}  {:>8}  region", "offset", "size");
    if regions.is_empty() {
        let _ = writeln!(out, "  (no regions defined)");
    }
    for r in regions {
        let _ = writeln!(out, "  {:>#8x}  {:>8}  {}", r.offset, r.size, r.name);
    }
    out
}

fn pad_row(out: &mut String, offset: usize, size: usize) {
    let _ = writeln!(out, "  {offset:>#8x}  {size:>5}  {:<36} -", "(padding)");
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEMO: Block = Block {
        name: "demo_t",
        size: 16,
        fields: &[Field::seed("a", 0, 4), Field::ours("b", 8, 4)],
    };

    #[test]
    fn json_shape() {
        let regions = [Field::seed("header", 0, 8)];
        assert_eq!(
            serde_json::to_string(&to_json(&[&DEMO], &regions)).unwrap(),
            r#"{"blocks":[{"name":"demo_t","size":16,"fields":[{"name":"a","offset":0,"size":4},{"name":"b","offset":8,"size":4}]}],"nds_regions":[{"name":"header","offset":0,"size":8}]}"#
        );
    }

    #[test]
    fn table_shows_padding_and_origin() {
        let t = to_table(&[&DEMO], &[]);
        assert!(t.contains("(padding)"), "{t}");
        assert!(t.contains("ours"), "{t}");
        assert!(t.contains("(no regions defined)"), "{t}");
    }
}
