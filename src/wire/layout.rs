//! Layout descriptors and the annotated hex dump.
//!
//! Every wire module declares its blocks once with `wire_block!`: a
//! `LAYOUT: Block` naming the fields with the C names, the offset consts and
//! a compile-time assert per row against the spec's literal numbers. The
//! descriptors drive `xunds layout` (table and `--json`) and the annotated
//! dumps used in snapshots and error messages. A field is marked
//! [`Origin::Ours`] when the spec gives only the enclosing size and xunds
//! chose the inside.

#[cfg(feature = "std")]
use core::fmt::Write as _;

/// Where a field's name and position come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Stated by the ABI (docs/abi.md): an ABI fact.
    Seed,
    /// Chosen by xunds where the sources give only the enclosing size.
    Ours,
}

/// One named field of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The C field name (array fields keep their C name, e.g. `eng_addresses_lo`).
    pub name: &'static str,
    /// Byte offset from the start of the block.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Seed fact or our choice.
    pub origin: Origin,
}

impl Field {
    /// A field the seed states.
    pub const fn seed(name: &'static str, offset: usize, size: usize) -> Self {
        Self {
            name,
            offset,
            size,
            origin: Origin::Seed,
        }
    }
    /// A field that is ours to define.
    pub const fn ours(name: &'static str, offset: usize, size: usize) -> Self {
        Self {
            name,
            offset,
            size,
            origin: Origin::Ours,
        }
    }
    /// One past the field's last byte.
    pub const fn end(&self) -> usize {
        self.offset + self.size
    }
}

/// One ABI block: its C name, total size and fields in offset order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// The seed's C name (`xu_queue_t`, `nds_header`, ...).
    pub name: &'static str,
    /// Total size in bytes.
    pub size: usize,
    /// Fields in ascending offset order; gaps are padding.
    pub fields: &'static [Field],
}

impl Block {
    /// The field called `name`, if any.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// `true` when fields are sorted, non-overlapping and inside the block.
    pub const fn is_well_formed(&self) -> bool {
        let mut i = 0;
        let mut end = 0;
        while i < self.fields.len() {
            let f = &self.fields[i];
            if f.offset < end || f.end() > self.size {
                return false;
            }
            end = f.end();
            i += 1;
        }
        true
    }

    /// `true` when `inner`'s fields appear in `self`, in order and
    /// contiguously, shifted by `base`, with the same sizes and origins and
    /// names ending in the inner names (a nested struct flattened).
    pub const fn embeds(&self, inner: &Block, base: usize) -> bool {
        let mut first = 0;
        while first < self.fields.len() && self.fields[first].offset != base {
            first += 1;
        }
        if first + inner.fields.len() > self.fields.len() {
            return false;
        }
        let mut i = 0;
        while i < inner.fields.len() {
            let (o, n) = (&self.fields[first + i], &inner.fields[i]);
            let (a, b) = (o.name.as_bytes(), n.name.as_bytes());
            if o.offset != base + n.offset || o.size != n.size || a.len() < b.len() {
                return false;
            }
            if (o.origin as u8) != (n.origin as u8) {
                return false;
            }
            let mut k = 0;
            while k < b.len() {
                if a[a.len() - b.len() + k] != b[k] {
                    return false;
                }
                k += 1;
            }
            i += 1;
        }
        true
    }
}

/// One declared row of a `wire_block!`: a field or a padding gap. Only the
/// macro builds these.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Row {
    field: Field,
    padding: bool,
}

#[doc(hidden)]
impl Row {
    pub const fn seed(name: &'static str, offset: usize, size: usize) -> Row {
        Row {
            field: Field::seed(name, offset, size),
            padding: false,
        }
    }
    pub const fn ours(name: &'static str, offset: usize, size: usize) -> Row {
        Row {
            field: Field::ours(name, offset, size),
            padding: false,
        }
    }
    pub const fn pad(offset: usize, size: usize) -> Row {
        Row {
            field: Field::ours("(padding)", offset, size),
            padding: true,
        }
    }
}

/// The number of field rows (not padding) in `rows`.
#[doc(hidden)]
pub const fn field_count(rows: &[Row]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        n += !rows[i].padding as usize;
        i += 1;
    }
    n
}

/// The field rows of `rows`, in order (`N` is [`field_count`]).
#[doc(hidden)]
pub const fn fields<const N: usize>(rows: &[Row]) -> [Field; N] {
    let mut out = [Field::seed("", 0, 0); N];
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        if !rows[i].padding {
            out[n] = rows[i].field;
            n += 1;
        }
        i += 1;
    }
    out
}

/// `true` when the first row at `offset` has `size` bytes and starts where
/// the row before it ends (or at 0 when it is the first).
#[doc(hidden)]
pub const fn row_follows(rows: &[Row], offset: usize, size: usize) -> bool {
    let mut i = 0;
    while i < rows.len() {
        let f = &rows[i].field;
        if f.offset == offset && f.size == size && size > 0 {
            return if i == 0 {
                offset == 0
            } else {
                rows[i - 1].field.end() == offset
            };
        }
        i += 1;
    }
    false
}

/// Where the last row ends.
#[doc(hidden)]
pub const fn rows_end(rows: &[Row]) -> usize {
    match rows.last() {
        Some(r) => r.field.end(),
        None => 0,
    }
}

/// A named byte range of a larger map (the NDS region map rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The region name (docs/abi.md §2.2 naming).
    pub name: &'static str,
    /// Byte offset from the start of the map.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

impl Span {
    /// The row `name` at `offset`, `size` bytes long.
    pub const fn new(name: &'static str, offset: usize, size: usize) -> Self {
        Span { name, offset, size }
    }
}

/// Annotated hex dump of `bytes` as `block`: one line per field (offset, C
/// name, raw bytes, and the little-endian value for 1/2/4/8-byte fields), and
/// one line per padding gap. Bytes past `bytes.len()` are shown as `--`.
#[cfg(feature = "std")]
pub fn annotated_dump(block: &Block, bytes: &[u8]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} ({} bytes)", block.name, block.size);
    let mut cursor = 0usize;
    for f in block.fields {
        if f.offset > cursor {
            dump_range(
                &mut out,
                "(padding)",
                cursor,
                f.offset - cursor,
                bytes,
                false,
            );
        }
        let name = if f.origin == Origin::Ours {
            format!("{} [ours]", f.name)
        } else {
            f.name.to_string()
        };
        dump_range(&mut out, &name, f.offset, f.size, bytes, true);
        cursor = f.end();
    }
    if cursor < block.size {
        dump_range(
            &mut out,
            "(padding)",
            cursor,
            block.size - cursor,
            bytes,
            false,
        );
    }
    out
}

#[cfg(feature = "std")]
fn dump_range(out: &mut String, name: &str, off: usize, len: usize, bytes: &[u8], value: bool) {
    const PER_LINE: usize = 16;
    let mut first = true;
    let mut o = off;
    while o < off + len {
        let n = PER_LINE.min(off + len - o);
        let mut hex = String::new();
        for i in o..o + n {
            match bytes.get(i) {
                Some(b) => {
                    let _ = write!(hex, "{b:02x} ");
                }
                None => hex.push_str("-- "),
            }
        }
        let label = if first { name } else { "" };
        let _ = write!(out, "  +0x{o:04x} {label:<28} {hex}");
        if first && value && matches!(len, 1 | 2 | 4 | 8) && off + len <= bytes.len() {
            let mut v = [0u8; 8];
            v[..len].copy_from_slice(&bytes[off..off + len]);
            let _ = write!(out, "= {:#x}", u64::from_le_bytes(v));
        }
        // Trim the trailing space left by the hex column.
        while out.ends_with(' ') {
            out.pop();
        }
        out.push('\n');
        first = false;
        o += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEMO: Block = Block {
        name: "demo_t",
        size: 12,
        fields: &[Field::seed("a", 0, 4), Field::ours("b", 8, 4)],
    };
    const _: () = assert!(DEMO.is_well_formed());

    #[test]
    fn dump_marks_padding_and_ours() {
        let bytes = [1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0];
        let d = annotated_dump(&DEMO, &bytes);
        assert!(d.contains("(padding)"));
        assert!(d.contains("b [ours]"));
        assert!(d.contains("= 0x2"));
    }

    #[test]
    fn declared_rows_must_follow_each_other() {
        const ROWS: &[Row] = &[Row::seed("a", 0, 4), Row::pad(4, 4), Row::ours("b", 8, 4)];
        assert!(row_follows(ROWS, 0, 4) && row_follows(ROWS, 4, 4) && row_follows(ROWS, 8, 4));
        assert_eq!(rows_end(ROWS), 12);
        assert_eq!(field_count(ROWS), 2);
        assert_eq!(
            fields::<2>(ROWS),
            [Field::seed("a", 0, 4), Field::ours("b", 8, 4)]
        );
        // A gap, a wrong size or a wrong first offset is refused.
        assert!(!row_follows(
            &[Row::seed("a", 0, 4), Row::seed("b", 6, 2)],
            6,
            2
        ));
        assert!(!row_follows(ROWS, 8, 2));
        assert!(!row_follows(&[Row::seed("a", 1, 4)], 1, 4));
    }

    #[test]
    fn dump_of_short_input_does_not_panic() {
        let d = annotated_dump(&DEMO, &[1]);
        assert!(d.contains("--"));
    }
}
