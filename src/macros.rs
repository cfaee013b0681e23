//! The crate's declarative macros, declared first so every layer can use
//! them (textual scope): `wire_enum!` (a named wire enum), `wire_block!` (an
//! ABI block declared once), `error_enum!` (an error type's `Display`,
//! `Error` and `From`), `forward!` (trait methods that call the same
//! method on another value) and, for the simulator, `debug_fields!` (a
//! `Debug` of a few named values). No proc-macro dependency.

/// A fieldless `#[repr(u8)]` wire enum with its names: `ALL` (ascending
/// code), `name()`, `index()` / `from_index()` (the index type is given after
/// the enum name), `from_u8()`, `from_name()` and `Display` (the name).
///
/// ```ignore
/// wire_enum! {
///     /// A TPB engine.
///     pub enum Engine(usize) {
///         Pe = 0 => "PE",
///         Act = 1 => "ACT",
///     }
/// }
/// ```
///
/// Adding a variant is one line: its code and its name.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Name:ident($Idx:ty) {
            $($(#[$vmeta:meta])* $Variant:ident = $code:literal => $name:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        $vis enum $Name {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($code), ").")]
                $(#[$vmeta])*
                $Variant = $code,
            )*
        }

        impl $Name {
            /// Every variant, ascending code.
            pub const ALL: [Self; [$($name),*].len()] = [$(Self::$Variant,)*];

            /// Its name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$Variant => $name,)*
                }
            }

            /// Its code, as an index.
            pub const fn index(self) -> $Idx {
                self as $Idx
            }

            /// The variant with code `code`, if any.
            pub const fn from_u8(code: u8) -> Option<Self> {
                match code {
                    $($code => Some(Self::$Variant),)*
                    _ => None,
                }
            }

            /// The variant at index `index`, if any.
            pub const fn from_index(index: $Idx) -> Option<Self> {
                if index as u64 > u8::MAX as u64 {
                    return None;
                }
                Self::from_u8(index as u8)
            }

            /// The variant called `name`, if any.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }
        }

        impl core::fmt::Display for $Name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

/// An ABI block declared once: its C name, its size and one row per field
/// or padding gap, each with the spec's **literal** offset and size.
///
/// A typed block is a struct, one row per field (the C name after the
/// offset const, when it is not the field's name):
///
/// ```ignore
/// wire_block! {
///     /// `demo_t`.
///     pub struct Demo: "demo_t", SIZE = 16, LAYOUT, off {
///         seed TYPE "type" ty: u32 = 0x00, 4;
///         pad = 0x04, 4;
///         ours B b: u64 = 0x08, 8 if |v| *v != 0;
///     }
/// }
/// ```
///
/// gives the struct (`pub` fields, documented with their C name, offset and
/// size), `Demo::parse` (checked: `Truncated`, or `InvalidField` naming the
/// refused row; never panics), `encode` (padding zero), `emit` (writes the
/// field bytes only), `dump` (the annotated hex dump), its field codec (so
/// the block can be a field of another: its rows appear there renamed
/// `outer.inner`; `, dump + lines` after `off` appends `self.lines()` to
/// the dump), and `SIZE`, `LAYOUT` (the rows of `xunds layout`), the
/// module `off` with one offset const per field (`off::B`). The compile-time
/// checks: each row starts where the previous one ends, the last ends at the
/// literal size, each field's type has the literal size, and the rows are
/// where a C compiler puts them (a `pad` row is exactly the alignment
/// padding; `reserved` bytes are declared; `align N` states an alignment the
/// field's type does not have). `if |v| cond` refuses a value on parse.
///
/// A layout-only block (bytes a codec of its own reads) names its rows
/// without types: `pub LAYOUT: "demo_t", SIZE = 16, off { seed A "a" =
/// 0x00, 4; ... }` (the const is optional). A row kind is `seed` (a spec
/// fact), `ours` (our choice inside a size the spec gives), `pad` or
/// `reserved`.
macro_rules! wire_block {
    (
        $(#[$meta:meta])*
        $vis:vis struct $Name:ident: $cname:literal, $SIZE:ident = $size:literal, $LAYOUT:ident, $off:ident
        $(, dump + $tail:ident)? {
            $($rows:tt)*
        }
    ) => {
        wire_block!(@rows [[$(#[$meta])*] [$vis] $Name $cname $SIZE $size $LAYOUT $off [$($tail)?]] [] []
            $($rows)*);
    };
    (
        $(#[$meta:meta])*
        $vis:vis $LAYOUT:ident: $cname:literal, $SIZE:ident = $size:literal, $off:ident {
            $($rows:tt)*
        }
    ) => {
        wire_block!(@rows [[$(#[$meta])*] [$vis] - $cname $SIZE $size $LAYOUT $off []] [] [] $($rows)*);
    };
    // Row by row: a gap, a named layout row, a typed field.
    (@rows $h:tt $f:tt [$($r:tt)*]
        $(#[$m:meta])* $gap:ident = $o:literal, $n:literal; $($rest:tt)*) => {
        wire_block!(@rows $h $f [$($r)* ($gap [] () $o $n [] [])] $($rest)*);
    };
    (@rows $h:tt $f:tt [$($r:tt)*]
        $(#[$m:meta])* $kind:ident $($K:ident)? $name:literal = $o:literal, $n:literal;
        $($rest:tt)*) => {
        wire_block!(@rows $h $f [$($r)* ($kind [$($K)?] ($name) $o $n [] [])] $($rest)*);
    };
    (@rows $h:tt [$($f:tt)*] [$($r:tt)*]
        $(#[$m:meta])* $kind:ident $K:ident $($name:literal)? $field:ident: $T:ty = $o:literal, $n:literal
        $(align $al:literal)? $(if |$v:ident| $chk:expr)?; $($rest:tt)*) => {
        wire_block!(@rows $h
            [$($f)* ([$(#[$m])*] $field [$T] ($field $($name)?) $o $n [$($v $chk)?])]
            [$($r)* ($kind [$K] ($field $($name)?) $o $n [$T] [$($al)?])]
            $($rest)*);
    };
    // A typed block: the struct and its codec, then its layout.
    (@rows [[$(#[$meta:meta])*] [$vis:vis] $Name:ident $cname:literal $SIZE:ident $size:literal $LAYOUT:ident
            $off:ident [$($tail:ident)?]]
        [$(([$(#[$m:meta])*] $field:ident [$T:ty] $nm:tt $o:literal $n:literal [$($v:ident $chk:expr)?]))*]
        [$($r:tt)*]) => {
        $(#[$meta])*
        $vis struct $Name {
            $(
                #[doc = concat!("`", wire_block!(@name $nm), "` (+", stringify!($o), ", ",
                    stringify!($n), " bytes).")]
                $(#[$m])*
                pub $field: $T,
            )*
        }

        impl $crate::wire::layout::Codec for $Name {
            const SIZE: usize = $size;
            const ALIGN: usize = $crate::wire::layout::rows_align($off::ROWS);
            const ROWS: &'static [$crate::wire::layout::Field] = &$off::DOTTED;
            #[inline]
            fn put(&self, b: &mut [u8]) {
                $(if let Some(d) = b.get_mut($o..$o + $n) {
                    $crate::wire::layout::Codec::put(&self.$field, d);
                })*
            }
            #[inline]
            fn get(b: &[u8]) -> Result<Self, usize> {
                Ok($Name {$($field: {
                    let d = b.get($o..$o + $n).ok_or($o as usize)?;
                    let v = <$T as $crate::wire::layout::Codec>::get(d).map_err(|at| at + $o)?;
                    $(let $v = &v;
                    if !$chk {
                        return Err($o);
                    })?
                    v
                },)*})
            }
        }

        impl $Name {
            #[doc = concat!("Decode the first ", stringify!($size), " bytes (`", $cname,
                "`): `Truncated` when there are fewer, `InvalidField` naming the first",
                " refused field.")]
            #[inline]
            pub fn parse(bytes: &[u8]) -> Result<Self, $crate::wire::WireError> {
                $crate::wire::need($cname, bytes, $SIZE)?;
                let b = &bytes[..$SIZE];
                <Self as $crate::wire::layout::Codec>::get(b)
                    .map_err(|at| $crate::wire::layout::refused(&$LAYOUT, b, at))
            }

            #[doc = concat!("The ", stringify!($size), " bytes, little-endian, padding zero.")]
            #[inline]
            pub fn encode(&self) -> [u8; $SIZE] {
                let mut b = [0u8; $SIZE];
                $crate::wire::layout::Codec::put(self, &mut b);
                b
            }

            #[doc = concat!("Write the field bytes into `buf[..", stringify!($size),
                "]`, leaving padding (and anything past the block) as it is.")]
            pub fn emit(&self, buf: &mut [u8]) -> Result<(), $crate::wire::WireError> {
                $crate::wire::need($cname, buf, $SIZE)?;
                $crate::wire::layout::Codec::put(self, &mut buf[..$SIZE]);
                Ok(())
            }

            /// Annotated hex dump of the encoding.
            #[cfg(feature = "std")]
            pub fn dump(&self) -> String {
                #[allow(unused_mut)]
                let mut out = $crate::wire::layout::annotated_dump(&$LAYOUT, &self.encode());
                $(out.push_str(&self.$tail());)?
                out
            }
        }

        $(const _: () = assert!(
            <$T as $crate::wire::layout::Codec>::SIZE == $n,
            concat!($cname, ": the type of the row at ", stringify!($o), " is not ",
                stringify!($n), " bytes"),
        );)*
        const _: () = assert!(
            $crate::wire::layout::c_layout($off::ROWS, $SIZE),
            concat!($cname, ": the rows are not where a C compiler puts them"),
        );
        wire_block!(@layout [#[doc = concat!("The layout of `", $cname, "`.")]] [$vis] $cname $SIZE
            $size $LAYOUT $off [$($r)*]);
    };
    (@rows [[$(#[$meta:meta])*] [$vis:vis] - $cname:literal $SIZE:ident $size:literal $LAYOUT:ident
            $off:ident []]
        [] [$($r:tt)*]) => {
        wire_block!(@layout [$(#[$meta])*] [$vis] $cname $SIZE $size $LAYOUT $off [$($r)*]);
    };
    // The layout of either form: SIZE, the offset consts, LAYOUT, the row checks.
    (@layout [$(#[$meta:meta])*] [$vis:vis] $cname:literal $SIZE:ident $size:literal $LAYOUT:ident $off:ident
        [$(($kind:ident [$($K:ident)?] $nm:tt $o:literal $n:literal [$($T:ty)?] [$($al:literal)?]))*]) => {
        #[doc = concat!("`sizeof(", $cname, ")`.")]
        $vis const $SIZE: usize = $size;

        #[doc = concat!("Byte offsets of the `", $cname, "` fields.")]
        $vis mod $off {
            #[allow(unused_imports)]
            use super::*;
            $($(
                #[doc = concat!("`", wire_block!(@name $nm), "` (+", stringify!($o), ", ",
                    stringify!($n), " bytes).")]
                pub const $K: usize = $o;
            )?)*

            pub(crate) const ROWS: &[$crate::wire::layout::Row] = &[$($crate::wire::layout::Row {
                kind: $crate::wire::layout::Kind::$kind,
                name: concat!(".", wire_block!(@name $nm)),
                offset: $o,
                size: $n,
                inner: wire_block!(@inner $($T)?),
                align: wire_block!(@align [$($T)?] $($al)?),
            },)*];
            const COUNT: usize = $crate::wire::layout::field_count(ROWS);
            const PARTS: [(&str, &str); COUNT] = $crate::wire::layout::parts(ROWS);
            const NAMES: [u8; $crate::wire::layout::joined_len(&PARTS)] =
                $crate::wire::layout::joined(&PARTS);
            pub(crate) const FIELDS: [$crate::wire::layout::Field; COUNT] =
                $crate::wire::layout::fields(ROWS, &$crate::wire::layout::split(&NAMES, &PARTS, 1));
            #[allow(dead_code)]
            pub(crate) const DOTTED: [$crate::wire::layout::Field; COUNT] =
                $crate::wire::layout::fields(ROWS, &$crate::wire::layout::split(&NAMES, &PARTS, 0));
        }

        $(#[$meta])*
        $vis const $LAYOUT: $crate::wire::layout::Block = $crate::wire::layout::Block {
            name: $cname,
            size: $SIZE,
            fields: &$off::FIELDS,
        };

        $(const _: () = assert!(
            $crate::wire::layout::row_follows($off::ROWS, $o, $n),
            concat!($cname, ": the row at ", stringify!($o), " (", stringify!($n),
                " bytes) does not start where the previous row ends"),
        );)*
        const _: () = assert!(
            $crate::wire::layout::rows_end($off::ROWS) == $SIZE,
            concat!($cname, ": the rows do not end at ", stringify!($size)),
        );
    };
    (@name ()) => { "" };
    (@name ($name:literal)) => { $name };
    (@name ($field:ident)) => { stringify!($field) };
    (@name ($field:ident $name:literal)) => { $name };
    (@inner) => { &[] };
    (@inner $T:ty) => { <$T as $crate::wire::layout::Codec>::ROWS };
    (@align [] $($al:literal)?) => { 0 };
    (@align [$T:ty]) => { <$T as $crate::wire::layout::Codec>::ALIGN };
    (@align [$T:ty] $al:literal) => { $al };
}

/// A field codec for a type that travels as another (a newtype, a wire
/// enum): `codec_as!(NrtStatus: u32, |s| s.0, |v| Some(NrtStatus(v)))`; a
/// `None` refuses the value.
macro_rules! codec_as {
    ($T:ty: $R:ty, |$s:ident| $to:expr, |$v:ident| $from:expr) => {
        impl $crate::wire::layout::Codec for $T {
            const SIZE: usize = <$R as $crate::wire::layout::Codec>::SIZE;
            const ALIGN: usize = <$R as $crate::wire::layout::Codec>::ALIGN;
            #[inline]
            fn put(&self, b: &mut [u8]) {
                let $s = *self;
                let raw: $R = $to;
                $crate::wire::layout::Codec::put(&raw, b);
            }
            #[inline]
            fn get(b: &[u8]) -> Result<Self, usize> {
                let $v = <$R as $crate::wire::layout::Codec>::get(b)?;
                $from.ok_or(0)
            }
        }
    };
}

/// `Debug` written by hand for a type whose fields are not all `Debug` (an
/// actor, a HAL, a runner of actors), or that would print too much: the
/// type's name and a few named values (each computed from `s`, the value),
/// then `..` when they are only part of its state. A derive would ask every
/// field to be `Debug` and print each whole.
///
/// ```ignore
/// debug_fields!([H: Hal] Lane<H>, |s| core = s.xu.core, free = s.free.len(); ..);
/// ```
#[cfg(feature = "sim")]
macro_rules! debug_fields {
    ([$($g:tt)*] $T:ident $(<$($p:tt),*>)?, |$s:ident| $($f:ident = $e:expr),+ $(; $more:tt)?) => {
        impl<$($g)*> core::fmt::Debug for $T $(<$($p),*>)? {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let $s = self;
                let mut d = f.debug_struct(stringify!($T));
                $(d.field(stringify!($f), &$e);)+
                debug_fields!(@end d $($more)?)
            }
        }
    };
    (@end $d:ident) => { $d.finish() };
    (@end $d:ident ..) => { $d.finish_non_exhaustive() };
}

/// An error enum with its `Display` (one message per variant),
/// `core::error::Error` (whose `source` is the field marked `#[from]` or
/// `#[source]`) and `From` for each `#[from]` field. A variant's attributes
/// (its docs, a `#[cfg(feature = "std")]`) also go on its match arms and
/// its `From`, so a variant may exist only with a feature. Struct variants name
/// their fields in the message (`"{len} bytes"`); a one-field tuple variant
/// calls its field `{0}`; a message with computed arguments is written
/// `("... {}", expr)`.
///
/// ```ignore
/// error_enum! {
///     /// Why it failed.
///     #[derive(Debug)]
///     pub enum DemoError {
///         /// Too short.
///         Short { got: usize } => "need 4 bytes, got {got}",
///         /// A wire error.
///         Wire(#[from] WireError) => "wire: {0}",
///     }
/// }
/// ```
macro_rules! error_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Name:ident {
            $(
                $(#[$vm:meta])*
                $V:ident
                $(($(#[$how:ident])? $T:ty))?
                $({ $($(#[$fm:meta])* $F:ident: $FT:ty),* $(,)? })?
                => $msg:tt,
            )*
        }
    ) => {
        $(#[$meta])*
        $vis enum $Name {
            $(
                $(#[$vm])*
                $V $(($T))? $({ $($(#[$fm])* $F: $FT),* })?,
            )*
        }

        impl core::fmt::Display for $Name {
            #[allow(unused_variables, unused_doc_comments)]
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    $($(#[$vm])* error_enum!(@pat $V [$($T)?] [$({ $($F),* })?] v0)
                        => error_enum!(@msg f [$($T)?] v0 $msg),)*
                }
            }
        }

        impl core::error::Error for $Name {
            #[allow(unused_doc_comments)]
            fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
                match self {
                    $($(#[$vm])* error_enum!(@srcpat $V [$($($how)?)?] v0)
                        => error_enum!(@src [$($($how)?)?] v0),)*
                }
            }
        }

        $(error_enum!(@from [$(#[$vm])*] $Name $V $([$($how)?] $T)?);)*
    };
    (@pat $V:ident [] [] $b:ident) => { Self::$V };
    (@pat $V:ident [$T:ty] [] $b:ident) => { Self::$V($b) };
    (@pat $V:ident [] [{ $($F:ident),* }] $b:ident) => { Self::$V { $($F),* } };
    (@msg $f:ident [$T:ty] $b:ident $fmt:literal) => { write!($f, $fmt, $b) };
    (@msg $f:ident [] $b:ident $fmt:literal) => { write!($f, $fmt) };
    (@msg $f:ident [] $b:ident ($fmt:literal $(, $arg:expr)* $(,)?)) => {
        write!($f, $fmt $(, $arg)*)
    };
    (@srcpat $V:ident [] $b:ident) => { Self::$V { .. } };
    (@srcpat $V:ident [$how:ident] $b:ident) => { Self::$V($b) };
    (@src [] $b:ident) => { None };
    (@src [$how:ident] $b:ident) => { Some($b as &(dyn core::error::Error + 'static)) };
    (@from [$($a:tt)*] $Name:ident $V:ident [from] $T:ty) => {
        $($a)*
        impl From<$T> for $Name {
            fn from(e: $T) -> Self {
                Self::$V(e)
            }
        }
    };
    (@from [$($a:tt)*] $Name:ident $V:ident $([$($how:ident)?] $T:ty)?) => {};
}

/// Trait methods that each call the method of the same name on `$to`, the
/// same arguments in the same order: `forward!(self => (**self); fn
/// len(&self) -> usize; fn map(&mut self, id: RegionId) -> Handle;)`. `self`
/// is passed in so the generated methods and `$to` share it.
macro_rules! forward {
    ($s:tt => $to:expr;) => {};
    ($s:tt => $to:expr; fn $f:ident(&mut self $(, $x:ident: $T:ty)*) $(-> $R:ty)?; $($rest:tt)*) => {
        #[inline]
        fn $f(&mut $s $(, $x: $T)*) $(-> $R)? {
            $to.$f($($x),*)
        }
        forward!($s => $to; $($rest)*);
    };
    ($s:tt => $to:expr; fn $f:ident(&self $(, $x:ident: $T:ty)*) $(-> $R:ty)?; $($rest:tt)*) => {
        #[inline]
        fn $f(&$s $(, $x: $T)*) $(-> $R)? {
            $to.$f($($x),*)
        }
        forward!($s => $to; $($rest)*);
    };
}
