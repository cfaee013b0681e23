//! Layout descriptors, the field codec and the annotated hex dump.
//!
//! Every wire module declares its blocks once with `wire_block!`
//! (`src/macros.rs`): each row's C name, the spec's literal offset and size,
//! and for a typed block the Rust field and its type. From that one
//! declaration come the struct, its `parse` / `encode` / `emit` / `dump`,
//! the `LAYOUT: Block` descriptor that drives `xunds layout` and the
//! annotated dumps, the offset consts, and the compile-time checks: each
//! row starts where the previous ends, the rows end at the literal size, a
//! field's type has the literal size, and every gap is exactly the padding a
//! C compiler inserts (or is declared `reserved`). A field is marked
//! [`Origin::Ours`] when the spec gives only the enclosing size and xunds
//! chose the inside.
//!
//! A block-typed field (the response inside the work item, a version triple
//! inside process-info) contributes its own rows, renamed `outer.inner`, so
//! a nested block is declared once and each enclosing layout lists its rows.

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
            origin: Origin::Ours,
            ..Self::seed(name, offset, size)
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
        let (mut i, mut end) = (0, 0);
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

    /// `N` fields from the one at `offset`, rebased to start at 0: the
    /// layout of a sub-struct flattened into this block.
    pub const fn part<const N: usize>(&self, offset: usize) -> [Field; N] {
        let mut out = [Field::seed("", 0, 0); N];
        let mut i = 0;
        while self.fields[i].offset != offset {
            i += 1;
        }
        let mut k = 0;
        while k < N {
            out[k] = self.fields[i + k];
            out[k].offset -= offset;
            k += 1;
        }
        out
    }
}

/// A value with a fixed little-endian wire form: `SIZE` bytes at C
/// alignment `ALIGN`. `put` and `get` are given exactly `SIZE` bytes; `get`
/// refuses a value by returning the offset of the row that holds it.
pub(crate) trait Codec: Sized {
    /// Bytes on the wire.
    const SIZE: usize;
    /// Its alignment in a C struct.
    const ALIGN: usize;
    /// The rows a block-typed field expands into (each name starts with
    /// its separator, `.name` or `[i]`); empty for a scalar, one row.
    const ROWS: &'static [Field] = &[];
    /// Write the value into `b`.
    fn put(&self, b: &mut [u8]);
    /// Read a value from `b`, or the offset of the refused row.
    fn get(b: &[u8]) -> Result<Self, usize>;
}

macro_rules! int_codec {
    ($($t:ty),*) => {$(
        impl Codec for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            const ALIGN: usize = Self::SIZE;
            #[inline]
            fn put(&self, b: &mut [u8]) {
                if let Some(d) = b.first_chunk_mut() {
                    *d = self.to_le_bytes();
                }
            }
            #[inline]
            fn get(b: &[u8]) -> Result<Self, usize> {
                b.first_chunk().map(|a| <$t>::from_le_bytes(*a)).ok_or(0)
            }
        }
    )*};
}
int_codec!(u8, u16, u32, u64, i32, i64);

/// A C `bool`: 0 or 1, anything else refused.
impl Codec for bool {
    const SIZE: usize = 1;
    const ALIGN: usize = 1;
    fn put(&self, b: &mut [u8]) {
        u8::from(*self).put(b);
    }
    fn get(b: &[u8]) -> Result<Self, usize> {
        match u8::get(b)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(0),
        }
    }
}

macro_rules! array_codec {
    ($($t:ty),*) => {$(
        /// An array of scalars: one row.
        impl<const N: usize> Codec for [$t; N] {
            const SIZE: usize = N * <$t as Codec>::SIZE;
            const ALIGN: usize = <$t as Codec>::ALIGN;
            fn put(&self, b: &mut [u8]) {
                for (v, d) in self.iter().zip(b.chunks_exact_mut(<$t as Codec>::SIZE)) {
                    v.put(d);
                }
            }
            fn get(b: &[u8]) -> Result<Self, usize> {
                let mut out = [<$t>::default(); N];
                for (v, s) in out.iter_mut().zip(b.chunks_exact(<$t as Codec>::SIZE)) {
                    *v = <$t>::get(s)?;
                }
                Ok(out)
            }
        }
    )*};
}
array_codec!(u8, u32);

/// One declared row of a `wire_block!`: a field (its name with a leading
/// `.`) or a padding gap. Only the macro builds these.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub kind: Kind,
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
    /// The rows a block-typed field expands into (empty: one row).
    pub inner: &'static [Field],
    /// C alignment of the field's type (0: not known, no C check).
    pub align: usize,
}

/// A row's kind, as the declaration spells it.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A field the spec states.
    seed,
    /// A field we chose inside a size the spec gives.
    ours,
    /// Alignment padding: C inserts exactly these bytes.
    pad,
    /// Declared bytes that no field names.
    reserved,
}

impl Row {
    /// How many fields this row gives.
    const fn count(&self) -> usize {
        match (self.kind, self.inner.len()) {
            (Kind::pad | Kind::reserved, _) => 0,
            (_, 0) => 1,
            (_, n) => n,
        }
    }
    /// Its `k`th field, named by the inner row's name alone (the row's own
    /// name is the prefix [`parts`] puts before it).
    const fn nth(&self, k: usize) -> Field {
        let ours = matches!(self.kind, Kind::ours);
        let f = match self.inner.is_empty() {
            true => Field::seed("", 0, self.size),
            false => self.inner[k],
        };
        Field {
            offset: self.offset + f.offset,
            origin: if ours { Origin::Ours } else { f.origin },
            ..f
        }
    }
}

/// The number of fields `rows` give.
pub(crate) const fn field_count(rows: &[Row]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        n += rows[i].count();
        i += 1;
    }
    n
}

/// Each field's name as two parts: the row's own name and the inner row's.
pub(crate) const fn parts<const N: usize>(rows: &[Row]) -> [(&'static str, &'static str); N] {
    let mut out = [("", ""); N];
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        let mut k = 0;
        while k < rows[i].count() {
            out[n] = (rows[i].name, rows[i].nth(k).name);
            (n, k) = (n + 1, k + 1);
        }
        i += 1;
    }
    out
}

/// Bytes of the names `parts` make.
pub(crate) const fn joined_len(parts: &[(&str, &str)]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < parts.len() {
        n += parts[i].0.len() + parts[i].1.len();
        i += 1;
    }
    n
}

/// The names `parts` make, back to back: the storage [`split`] cuts the
/// `&'static str`s of names built at compile time from.
pub(crate) const fn joined<const L: usize>(parts: &[(&str, &str)]) -> [u8; L] {
    let mut out = [0u8; L];
    let (mut i, mut at) = (0, 0);
    // Each part's two names in turn: the row's, then the inner row's.
    while i < 2 * parts.len() {
        let (row, inner) = parts[i / 2];
        let b = if i % 2 == 0 { row } else { inner }.as_bytes();
        let mut j = 0;
        while j < b.len() {
            out[at] = b[j];
            (at, j) = (at + 1, j + 1);
        }
        i += 1;
    }
    out
}

/// The names of `parts` cut from their [`joined`] `bytes`, each without its
/// first `skip` bytes.
pub(crate) const fn split<const N: usize>(
    bytes: &'static [u8],
    parts: &[(&str, &str)],
    skip: usize,
) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut rest) = (0, bytes);
    while i < N {
        let (s, tail) = rest.split_at(parts[i].0.len() + parts[i].1.len());
        out[i] = match core::str::from_utf8(s.split_at(skip).1) {
            Ok(s) => s,
            Err(_) => panic!("a name is not UTF-8"),
        };
        (rest, i) = (tail, i + 1);
    }
    out
}

/// The fields of `rows`, called `names` (1: the leading `.` left out, the
/// block's own layout; 0: the rows an enclosing block embeds).
pub(crate) const fn fields<const N: usize>(rows: &[Row], names: &[&'static str; N]) -> [Field; N] {
    let mut out = [Field::seed("", 0, 0); N];
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        let mut k = 0;
        while k < rows[i].count() {
            out[n] = Field {
                name: names[n],
                ..rows[i].nth(k)
            };
            (n, k) = (n + 1, k + 1);
        }
        i += 1;
    }
    out
}

/// `true` when the first row at `offset` has `size` bytes and starts where
/// the row before it ends (or at 0 when it is the first).
pub(crate) const fn row_follows(rows: &[Row], offset: usize, size: usize) -> bool {
    let mut i = 0;
    while i < rows.len() {
        let r = &rows[i];
        if r.offset == offset && r.size == size && size > 0 {
            return if i == 0 {
                offset == 0
            } else {
                rows[i - 1].offset + rows[i - 1].size == offset
            };
        }
        i += 1;
    }
    false
}

/// Where the last row ends.
pub(crate) const fn rows_end(rows: &[Row]) -> usize {
    match rows.last() {
        Some(r) => r.offset + r.size,
        None => 0,
    }
}

/// The C alignment of a block of `rows`: its strictest field's.
pub(crate) const fn rows_align(rows: &[Row]) -> usize {
    let (mut i, mut a) = (0, 1);
    while i < rows.len() {
        if rows[i].align > a {
            a = rows[i].align;
        }
        i += 1;
    }
    a
}

/// `true` when `rows` of a `size`-byte block are where a C compiler puts
/// them: each field at a multiple of its alignment, each `pad` gap shorter
/// than the alignment of what follows it (so exactly the padding C
/// inserts), and the size a multiple of the block's alignment.
pub(crate) const fn c_layout(rows: &[Row], size: usize) -> bool {
    let align = rows_align(rows);
    let mut i = 0;
    while i < rows.len() {
        let r = &rows[i];
        let next = if i + 1 < rows.len() {
            rows[i + 1].align
        } else {
            align
        };
        let ok = match r.kind {
            Kind::seed | Kind::ours => r.align > 0 && r.offset % r.align == 0,
            Kind::pad => r.size < next,
            Kind::reserved => true,
        };
        if !ok {
            return false;
        }
        i += 1;
    }
    size % align == 0
}

/// The refusal of the row at byte `at` of `bytes` (a whole `block`): the
/// field's name and its raw little-endian value (its first 8 bytes).
pub(crate) fn refused(block: &Block, bytes: &[u8], at: usize) -> super::WireError {
    let f = block.fields.iter().find(|f| f.offset == at);
    let raw = f.and_then(|f| bytes.get(f.offset..f.end())).unwrap_or(&[]);
    let mut v = [0u8; 8];
    let n = raw.len().min(8);
    v[..n].copy_from_slice(&raw[..n]);
    super::WireError::InvalidField {
        block: block.name,
        field: f.map_or("?", |f| f.name),
        value: u64::from_le_bytes(v),
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
    // The fields, then an empty one at the end so a tail gap shows too.
    let end = Field::seed("", block.size, 0);
    for f in block.fields.iter().chain([&end]) {
        if f.offset > cursor {
            let gap = f.offset - cursor;
            dump_range(&mut out, "(padding)", cursor, gap, bytes, false);
        }
        let ours = (f.origin == Origin::Ours).then_some(" [ours]");
        let name = format!("{}{}", f.name, ours.unwrap_or(""));
        dump_range(&mut out, &name, f.offset, f.size, bytes, true);
        cursor = f.end();
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

    const fn row(kind: Kind, name: &'static str, offset: usize, size: usize, align: usize) -> Row {
        Row {
            kind,
            name,
            offset,
            size,
            inner: &[],
            align,
        }
    }

    const ROWS: &[Row] = &[
        row(Kind::seed, ".a", 0, 4, 4),
        row(Kind::pad, "", 4, 4, 0),
        row(Kind::ours, ".b", 8, 8, 8),
    ];
    const PARTS: [(&str, &str); 2] = parts(ROWS);
    const NAMES: [u8; joined_len(&PARTS)] = joined(&PARTS);
    const FIELDS: [Field; 2] = fields(ROWS, &split(&NAMES, &PARTS, 1));
    const DEMO: Block = Block {
        name: "demo_t",
        size: 16,
        fields: &FIELDS,
    };
    const _: () = assert!(DEMO.is_well_formed() && c_layout(ROWS, 16));

    #[test]
    fn dump_marks_padding_and_ours() {
        let bytes = [1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0, 0, 0];
        let d = annotated_dump(&DEMO, &bytes);
        assert!(d.contains("(padding)"));
        assert!(d.contains("b [ours]"));
        assert!(d.contains("= 0x2"));
    }

    #[test]
    fn declared_rows_must_follow_each_other() {
        assert!(row_follows(ROWS, 0, 4) && row_follows(ROWS, 4, 4) && row_follows(ROWS, 8, 8));
        assert_eq!(rows_end(ROWS), 16);
        assert_eq!(field_count(ROWS), 2);
        assert_eq!(DEMO.fields[0], Field::seed("a", 0, 4));
        assert_eq!(
            (DEMO.fields[1].name, DEMO.fields[1].origin),
            ("b", Origin::Ours)
        );
        // A gap, a wrong size or a wrong first offset is refused.
        let gap = [
            row(Kind::seed, ".a", 0, 4, 4),
            row(Kind::seed, ".b", 6, 2, 2),
        ];
        assert!(!row_follows(&gap, 6, 2));
        assert!(!row_follows(ROWS, 8, 2));
        assert!(!row_follows(&[row(Kind::seed, ".a", 1, 4, 4)], 1, 4));
    }

    #[test]
    fn c_layout_refuses_what_a_compiler_would_not_do() {
        // A u64 at 4, a pad longer than the alignment, a size not a multiple.
        assert!(!c_layout(
            &[
                row(Kind::seed, ".a", 0, 4, 4),
                row(Kind::seed, ".b", 4, 8, 8)
            ],
            12
        ));
        let long_pad = [
            row(Kind::seed, ".a", 0, 4, 4),
            row(Kind::pad, "", 4, 8, 0),
            row(Kind::seed, ".b", 12, 4, 4),
        ];
        assert!(!c_layout(&long_pad, 16));
        assert!(!c_layout(&ROWS[..1], 6));
        let reserved = [
            row(Kind::seed, ".a", 0, 4, 4),
            row(Kind::reserved, "", 4, 8, 0),
            row(Kind::seed, ".b", 12, 4, 4),
        ];
        assert!(c_layout(&reserved, 16));
    }

    #[test]
    fn nested_rows_are_renamed_and_shifted() {
        const INNER: &[Field] = &[Field::seed(".x", 0, 4), Field::seed(".y", 4, 4)];
        const R: &[Row] = &[Row {
            inner: INNER,
            ..row(Kind::ours, ".o", 8, 8, 4)
        }];
        const P: [(&str, &str); 2] = parts(R);
        const N: [u8; joined_len(&P)] = joined(&P);
        const F: [Field; 2] = fields(R, &split(&N, &P, 1));
        assert_eq!(F[1].name, "o.y");
        assert_eq!((F[1].offset, F[1].origin), (12, Origin::Ours));
        assert_eq!(split::<2>(&N, &P, 0)[0], ".o.x");
    }

    #[test]
    fn dump_of_short_input_does_not_panic() {
        let d = annotated_dump(&DEMO, &[1]);
        assert!(d.contains("--"));
    }
}
