//! The crate's declarative macros, declared first so every layer can use
//! them (textual scope): `wire_enum!` (a named wire enum), `wire_block!` (an
//! ABI block declared once) and `error_enum!` (an error type's `Display`,
//! `Error` and `From`). No proc-macro dependency.

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
/// ```ignore
/// wire_block! {
///     /// Layout of `demo_t`.
///     pub LAYOUT: "demo_t", SIZE = 16, off {
///         seed A "a" = 0x00, 4;
///         pad = 0x04, 4;
///         ours B "b" = 0x08, 8;
///     }
/// }
/// ```
///
/// gives `SIZE`, `LAYOUT` (the rows of `xunds layout`, the annotated dumps),
/// the module `off` with one offset const per named row (`off::A`) and its
/// byte range (`off::range::A`), and a compile-time assert per row that its
/// literal offset is where the previous row ends (and that the last row ends
/// at the literal size): a wrong number fails the build. A row kind is
/// `seed` (a spec fact), `ours` (our choice inside a size the spec gives) or
/// `pad`; the const name is optional (`seed "b.hi" = 0x0c, 4;`).
macro_rules! wire_block {
    (
        $(#[$meta:meta])*
        $vis:vis $LAYOUT:ident: $cname:literal, $SIZE:ident = $size:literal, $off:ident {
            $($(#[$fmeta:meta])* $kind:ident $($K:ident)? $($fname:literal)? = $o:literal, $n:literal;)*
        }
    ) => {
        #[doc = concat!("`sizeof(", $cname, ")`.")]
        $vis const $SIZE: usize = $size;

        #[doc = concat!("Byte offsets of the `", $cname, "` fields.")]
        $vis mod $off {
            $(wire_block!(@off [$(#[$fmeta])*] [$($K)?] [$($fname)?] $o, $n);)*

            /// The fields' byte ranges (`offset..offset + size`).
            pub mod range {
                $(wire_block!(@range [$($K)?] [$($fname)?] $o, $n);)*
            }

            pub(super) const ROWS: &[$crate::wire::layout::Row] =
                &[$($crate::wire::layout::Row::$kind($($fname,)? $o, $n),)*];
        }

        $(#[$meta])*
        $vis const $LAYOUT: $crate::wire::layout::Block = $crate::wire::layout::Block {
            name: $cname,
            size: $SIZE,
            fields: &$crate::wire::layout::fields::<
                { $crate::wire::layout::field_count($off::ROWS) },
            >($off::ROWS),
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
    (@off $m:tt [] $f:tt $o:literal, $n:literal) => {};
    (@off [$(#[$m:meta])*] [$K:ident] [$f:literal] $o:literal, $n:literal) => {
        #[doc = concat!("`", $f, "` (+", stringify!($o), ", ", stringify!($n), " bytes).")]
        $(#[$m])*
        pub const $K: usize = $o;
    };
    (@range [] $f:tt $o:literal, $n:literal) => {};
    (@range [$K:ident] [$f:literal] $o:literal, $n:literal) => {
        #[doc = concat!("`", $f, "`.")]
        pub const $K: core::ops::Range<usize> = $o..$o + $n;
    };
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

/// Declare modules that are not part of the API: `pub` with the `testkit`
/// feature (the integration tests, benches and loom models drive them
/// directly), private to the crate otherwise, so `cargo doc` of the default
/// features does not show them.
macro_rules! testkit_mod {
    ($($(#[$m:meta])* mod $name:ident;)*) => {$(
        #[cfg(feature = "testkit")]
        $(#[$m])*
        pub mod $name;
        #[cfg(not(feature = "testkit"))]
        $(#[$m])*
        mod $name;
    )*};
}
