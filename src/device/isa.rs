//! The engines' instruction format (ours: the real TPB instruction set is not
//! public; docs/abi.md §1.15).
//!
//! Every instruction is [`INSN_BYTES`] = 32 bytes: eight little-endian `u32`
//! words. Word 0 is the header (opcode in bits 7:0, flags in 15:8, the base
//! selects of `d`, `a`, `b` in 21:16, the rest reserved); words 1..3 are the
//! byte offsets of the operands `d`, `a`, `b`; words 4..7 are the parameters
//! `p0..p3`. An operand address is `R[sel] + offset`, where `R0..R3` are the
//! engine's four 64-bit base registers, set by `SETBASE`.
//!
//! Decoding is strict, so that [`Insn::decode`] and [`Insn::encode`] are
//! inverse bijections on valid words: an unknown opcode, a flag the opcode
//! does not take, a non-zero reserved bit, a base select or word the opcode
//! does not use, or a parameter outside its range is a typed
//! [`DecodeError`], never a panic.
#![forbid(unsafe_code)]

use core::fmt;

use crate::wire::nq::ErrorClass;

/// `u32` words per instruction.
pub const INSN_WORDS: usize = 8;
/// Bytes per instruction.
pub const INSN_BYTES: usize = 4 * INSN_WORDS;

/// Number of base registers per engine.
pub const NUM_BASES: usize = 4;
/// Number of semaphores shared by the five engines of one execution.
pub const NUM_SEMAPHORES: usize = 16;
/// Largest element count of one operand (`n`, `rows * cols`, each matrix of
/// a `MATMUL`): 2^20 elements = 4 MiB.
pub const MAX_ELEMS: u64 = 1 << 20;
/// Largest `m * k * n` of one `MATMUL`.
pub const MAX_MACS_PER_INSN: u64 = 1 << 24;

/// Header flag: raise [`ErrorClass::Numerical`] if any result is NaN or ±Inf.
pub const FLAG_CHECK: u8 = 1 << 0;
/// Header flag (`MATMUL` only): accumulate into `d` instead of overwriting.
pub const FLAG_ACC: u8 = 1 << 1;

pub use opcode::Op;
// Public through the crate's API only when `testkit` is on.
#[cfg_attr(not(feature = "testkit"), allow(dead_code))]
mod opcode {
    wire_enum! {
        /// An opcode (word 0 bits 7:0) other than the binary operators (whose
        /// codes are [`BinOp`](super::BinOp)'s), by its mnemonic. `0x00` is deliberately
        /// invalid, so zeroed memory is never a program.
        pub enum Op(u8) {
            /// Stop: the engine is done.
            End = 0x01 => "END",
            /// Do nothing for one cycle.
            Nop = 0x02 => "NOP",
            /// `R[p0] = p1 | p2 << 32`.
            SetBase = 0x03 => "SETBASE",
            /// Copy `p0` words from `a` to `d`.
            Copy = 0x10 => "COPY",
            /// Store the word `p1` into `p0` words at `d`.
            Fill = 0x11 => "FILL",
            /// `d[i] = a[i] * scale + bias`.
            Affine = 0x24 => "AFFINE",
            /// `d[m x n] (+)= a[m x k] . b[k x n]`.
            MatMul = 0x30 => "MATMUL",
            /// `d[i] = f(a[i])`.
            Act = 0x40 => "ACT",
            /// `d[r] = fold(a[r, 0..cols])`.
            Reduce = 0x50 => "REDUCE",
            /// Block until `S[p0] >= p1`, then `S[p0] -= p1`.
            Wait = 0x60 => "WAIT",
            /// `S[p0] += p1`.
            Signal = 0x61 => "SIGNAL",
            /// Spend `p0 | p1 << 32` cycles.
            Delay = 0x70 => "DELAY",
            /// Stop with an error of class `p0`.
            Raise = 0x7F => "RAISE",
        }
    }
}

wire_enum! {
    /// A base register.
    pub enum Base(usize) {
        R0 = 0 => "R0",
        R1 = 1 => "R1",
        R2 = 2 => "R2",
        R3 = 3 => "R3",
    }
}
const _: () = assert!(Base::ALL.len() == NUM_BASES);

/// An operand: a byte offset from a base register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    /// The base register.
    pub base: Base,
    /// The byte offset added to it.
    pub off: u32,
}

impl Operand {
    /// `base + off`.
    pub const fn new(base: Base, off: u32) -> Self {
        Self { base, off }
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[r{}+{:#x}]", self.base.index(), self.off)
    }
}

wire_enum! {
    /// An elementwise binary operator, by its opcode and mnemonic.
    pub enum BinOp(u8) {
        /// `a + b`.
        Add = 0x20 => "ADD",
        /// `a - b`.
        Sub = 0x21 => "SUB",
        /// `a * b`.
        Mul = 0x22 => "MUL",
        /// [`fmax`]`(a, b)`.
        Max = 0x23 => "MAX",
    }
}

impl BinOp {
    /// Apply it in f32.
    #[inline]
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Max => fmax(a, b),
        }
    }
}

/// The engines' maximum: `b` if `b > a` or `a` is NaN, else `a`. Ties
/// (including `-0.0` vs `+0.0`) keep `a`, and NaN loses unless both are NaN,
/// so the result is a pure function of the two bit patterns.
#[inline]
pub fn fmax(a: f32, b: f32) -> f32 {
    if b > a || a.is_nan() {
        b
    } else {
        a
    }
}

wire_enum! {
    /// An activation function (`ACT` parameter `p1`), by its lower-case name.
    pub enum ActFn(u32) {
        /// `x`.
        Identity = 0 => "identity",
        /// `x < 0 ? 0 : x` (NaN and `-0.0` pass through).
        Relu = 1 => "relu",
        /// `1 / (1 + exp(-x))`.
        Sigmoid = 2 => "sigmoid",
        /// `tanh(x)`.
        Tanh = 3 => "tanh",
    }
}

impl ActFn {
    /// Apply it in f32.
    #[inline]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            ActFn::Identity => x,
            ActFn::Relu if x < 0.0 => 0.0,
            ActFn::Relu => x,
            ActFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            ActFn::Tanh => x.tanh(),
        }
    }
}

wire_enum! {
    /// A reduction (`REDUCE` parameter `p2`), by its lower-case name.
    pub enum ReduceOp(u32) {
        /// Left-to-right f32 sum, starting from the first element.
        Sum = 0 => "sum",
        /// Left-to-right [`fmax`], starting from the first element.
        Max = 1 => "max",
    }
}

impl ReduceOp {
    /// Fold one row, left to right, starting from `row[0]` (an empty row
    /// gives `0.0`; decoding refuses `cols == 0`).
    #[inline]
    pub fn fold(self, row: impl IntoIterator<Item = f32>) -> f32 {
        let mut row = row.into_iter();
        let Some(first) = row.next() else {
            return 0.0;
        };
        match self {
            ReduceOp::Sum => row.fold(first, |acc, x| acc + x),
            ReduceOp::Max => row.fold(first, fmax),
        }
    }
}
/// One decoded instruction. Element counts are in 4-byte elements (f32 or
/// raw words); float immediates are kept as bit patterns so that decode and
/// encode round-trip every NaN payload. The fields are in the order the
/// variant's docs name them; `check` is [`FLAG_CHECK`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Insn {
    /// `END`: the engine is done.
    End,
    /// `NOP`.
    Nop,
    /// `SETBASE(reg, value)`: `R[reg] = value`.
    SetBase(Base, u64),
    /// `COPY(dst, src, n)`: `n` raw words from `src` (`a`) to `dst` (`d`).
    Copy(Operand, Operand, u32),
    /// `FILL(dst, n, value)`: `n` copies of the word `value` at `dst` (`d`).
    Fill(Operand, u32, u32),
    /// `ADD`/`SUB`/`MUL`/`MAX` `(op, dst, a, b, n, b_len, check)`:
    /// `dst[i] = a[i] op b[i mod b_len]`; `b_len` elements of `b` are
    /// broadcast cyclically (0 means `n`; it must divide `n`).
    Binary(BinOp, Operand, Operand, Operand, u32, u32, bool),
    /// `AFFINE(dst, src, n, scale_bits, bias_bits, check)`:
    /// `dst[i] = src[i] * scale + bias` (two f32 roundings; both as f32 bits).
    Affine(Operand, Operand, u32, u32, u32, bool),
    /// `MATMUL(dst, a, b, m, k, n, acc, check)`: `dst[m x n] (+)= a[m x k] .
    /// b[k x n]`, row-major; `acc` ([`FLAG_ACC`]) starts each sum from `dst`
    /// instead of `+0.0`.
    MatMul(Operand, Operand, Operand, u32, u32, u32, bool, bool),
    /// `ACT(func, dst, src, n, check)`: `dst[i] = func(src[i])`.
    Act(ActFn, Operand, Operand, u32, bool),
    /// `REDUCE(op, dst, src, rows, cols, check)`: `dst[r] = op-fold of
    /// src[r, 0..cols]`, row-major.
    Reduce(ReduceOp, Operand, Operand, u32, u32, bool),
    /// `WAIT(sem, value)`: block until `S[sem] >= value`, then
    /// `S[sem] -= value` (`sem` < [`NUM_SEMAPHORES`]).
    Wait(u8, u32),
    /// `SIGNAL(sem, value)`: `S[sem] += value`.
    Signal(u8, u32),
    /// `DELAY(cycles)`: spend `cycles` device cycles.
    Delay(u64),
    /// `RAISE(class)`: stop with an error of this class.
    Raise(ErrorClass),
}

error_enum! {
    /// Why eight words are not an instruction. Each variant carries the opcode
    /// byte so a fault report says exactly what was refused.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum DecodeError {
        /// The opcode byte is not assigned.
        BadOpcode {
            /// The byte.
            opcode: u8,
        } => "bad opcode {opcode:#04x}",
        /// A flag bit this opcode does not take.
        BadFlags {
            /// The opcode.
            opcode: u8,
            /// The whole flags byte.
            flags: u8,
        } => "opcode {opcode:#04x}: flags {flags:#04x} not allowed",
        /// A reserved bit, an unused base select or an unused word is non-zero.
        Reserved {
            /// The opcode.
            opcode: u8,
            /// Word index (0 = header: base selects or reserved byte).
            word: u8,
            /// The offending word.
            value: u32,
        } => "opcode {opcode:#04x}: reserved bits set in word {word} ({value:#010x})",
        /// A parameter is outside its range (size 0 or over a limit, unknown
        /// function/reduction/class, semaphore or register index, `b_len` not
        /// dividing `n`).
        BadParam {
            /// The opcode.
            opcode: u8,
            /// Which parameter.
            what: &'static str,
            /// The offending value.
            value: u64,
        } => "opcode {opcode:#04x}: {what} = {value} out of range",
    }
}

/// A decoded enumerated parameter, or (out of range) `stand_in`, its word
/// and name noted in `bad`.
fn param<T>(
    v: Option<T>,
    stand_in: T,
    bad: &mut Option<(usize, &'static str)>,
    at: (usize, &'static str),
) -> T {
    if v.is_none() {
        *bad = Some(at);
    }
    v.unwrap_or(stand_in)
}

impl Insn {
    /// The opcode byte.
    pub const fn opcode(&self) -> u8 {
        match self {
            Insn::Binary(op, ..) => *op as u8,
            Insn::End => Op::End as u8,
            Insn::Nop => Op::Nop as u8,
            Insn::SetBase(..) => Op::SetBase as u8,
            Insn::Copy(..) => Op::Copy as u8,
            Insn::Fill(..) => Op::Fill as u8,
            Insn::Affine(..) => Op::Affine as u8,
            Insn::MatMul(..) => Op::MatMul as u8,
            Insn::Act(..) => Op::Act as u8,
            Insn::Reduce(..) => Op::Reduce as u8,
            Insn::Wait(..) => Op::Wait as u8,
            Insn::Signal(..) => Op::Signal as u8,
            Insn::Delay(..) => Op::Delay as u8,
            Insn::Raise(..) => Op::Raise as u8,
        }
    }

    /// The mnemonic (`MATMUL`, ...).
    fn mnemonic(&self) -> &'static str {
        match *self {
            Insn::Binary(op, ..) => op.name(),
            _ => Op::from_u8(self.opcode()).map_or("?", Op::name),
        }
    }

    /// Encode to eight words. Total: any `Insn` encodes; [`Insn::validate`]
    /// says whether the words will decode back to it.
    pub fn encode(&self) -> [u32; INSN_WORDS] {
        let (none, lo, hi) = ([None; 3], |v: u64| v as u32, |v: u64| (v >> 32) as u32);
        let chk = |check: bool| u8::from(check) * FLAG_CHECK;
        let (ops, p, flags): ([Option<Operand>; 3], [u32; 4], u8) = match *self {
            Insn::End | Insn::Nop => (none, [0; 4], 0),
            Insn::SetBase(reg, value) => (none, [reg as u32, lo(value), hi(value), 0], 0),
            Insn::Copy(dst, src, n) => ([Some(dst), Some(src), None], [n, 0, 0, 0], 0),
            Insn::Fill(dst, n, value) => ([Some(dst), None, None], [n, value, 0, 0], 0),
            Insn::Binary(_, dst, a, b, n, b_len, check) => {
                ([Some(dst), Some(a), Some(b)], [n, b_len, 0, 0], chk(check))
            }
            Insn::Affine(dst, src, n, scale, bias, check) => (
                [Some(dst), Some(src), None],
                [n, scale, bias, 0],
                chk(check),
            ),
            Insn::MatMul(dst, a, b, m, k, n, acc, check) => {
                let flags = chk(check) | (u8::from(acc) * FLAG_ACC);
                ([Some(dst), Some(a), Some(b)], [m, k, n, 0], flags)
            }
            Insn::Act(func, dst, src, n, check) => (
                [Some(dst), Some(src), None],
                [n, func as u32, 0, 0],
                chk(check),
            ),
            Insn::Reduce(op, dst, src, rows, cols, check) => (
                [Some(dst), Some(src), None],
                [rows, cols, op as u32, 0],
                chk(check),
            ),
            Insn::Wait(sem, value) | Insn::Signal(sem, value) => {
                (none, [sem.into(), value, 0, 0], 0)
            }
            Insn::Delay(cycles) => (none, [lo(cycles), hi(cycles), 0, 0], 0),
            Insn::Raise(class) => (none, [class as u32, 0, 0, 0], 0),
        };
        let mut w = [0u32; INSN_WORDS];
        let mut sel = 0u32;
        for (i, o) in ops.iter().enumerate() {
            if let Some(o) = o {
                sel |= (o.base as u32) << (2 * i);
                w[1 + i] = o.off;
            }
        }
        w[0] = u32::from(self.opcode()) | u32::from(flags) << 8 | sel << 16;
        w[4..].copy_from_slice(&p);
        w
    }

    /// Encode to 32 little-endian bytes.
    pub fn to_bytes(self) -> [u8; INSN_BYTES] {
        let mut b = [0u8; INSN_BYTES];
        for (chunk, w) in b.chunks_exact_mut(4).zip(self.encode()) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Decode eight words. Never panics; refuses anything [`Insn::encode`]
    /// would not produce from a valid instruction: the words must be the
    /// encoding of what they decode to (so a flag the opcode does not take
    /// is [`DecodeError::BadFlags`], and an unused select, word or reserved
    /// bit is [`DecodeError::Reserved`]), checked before the parameters.
    pub fn decode(w: &[u32; INSN_WORDS]) -> Result<Insn, DecodeError> {
        let opcode = w[0] as u8;
        let flags = (w[0] >> 8) as u8;
        let operand =
            |s: usize| Operand::new(Base::ALL[(w[0] >> (16 + 2 * s)) as usize & 3], w[1 + s]);
        let (d, a, b) = (operand(0), operand(1), operand(2));
        let [p0, p1, p2] = [w[4], w[5], w[6]];
        let check = flags & FLAG_CHECK != 0;
        // An enumerated parameter out of range decodes as a stand-in, its
        // error kept (with its word) for after the unused bits are checked.
        let mut bad = None;
        let insn = match Op::from_u8(opcode) {
            Some(Op::End) => Insn::End,
            Some(Op::Nop) => Insn::Nop,
            Some(Op::SetBase) => {
                let reg = Base::from_index(p0 as usize);
                let reg = param(reg, Base::R0, &mut bad, (4, "reg"));
                Insn::SetBase(reg, u64::from(p1) | u64::from(p2) << 32)
            }
            Some(Op::Copy) => Insn::Copy(d, a, p0),
            Some(Op::Fill) => Insn::Fill(d, p0, p1),
            Some(Op::Affine) => Insn::Affine(d, a, p0, p1, p2, check),
            Some(Op::MatMul) => Insn::MatMul(d, a, b, p0, p1, p2, flags & FLAG_ACC != 0, check),
            Some(Op::Act) => {
                let func = ActFn::from_index(p1);
                let func = param(func, ActFn::Identity, &mut bad, (5, "func"));
                Insn::Act(func, d, a, p0, check)
            }
            Some(Op::Reduce) => {
                let op = param(ReduceOp::from_index(p2), ReduceOp::Sum, &mut bad, (6, "op"));
                Insn::Reduce(op, d, a, p0, p1, check)
            }
            Some(op @ (Op::Wait | Op::Signal)) => {
                // Its range (below `NUM_SEMAPHORES`) is checked by `validate`.
                let sem = param(u8::try_from(p0).ok(), 0, &mut bad, (4, "sem"));
                match op {
                    Op::Wait => Insn::Wait(sem, p1),
                    _ => Insn::Signal(sem, p1),
                }
            }
            Some(Op::Delay) => Insn::Delay(u64::from(p0) | u64::from(p1) << 32),
            Some(Op::Raise) => {
                let class = u8::try_from(p0).ok().and_then(ErrorClass::from_u8);
                Insn::Raise(param(class, ErrorClass::Runtime, &mut bad, (4, "class")))
            }
            None => match BinOp::from_u8(opcode) {
                Some(op) => Insn::Binary(op, d, a, b, p0, p1, check),
                None => return Err(DecodeError::BadOpcode { opcode }),
            },
        };
        let e = insn.encode();
        if (e[0] >> 8) as u8 != flags {
            return Err(DecodeError::BadFlags { opcode, flags });
        }
        let stand_in = |i| bad.is_some_and(|(word, _)| word == i);
        if let Some(i) = (0..INSN_WORDS).find(|&i| e[i] != w[i] && !stand_in(i)) {
            let (word, value) = (i as u8, w[i]);
            return Err(DecodeError::Reserved {
                opcode,
                word,
                value,
            });
        }
        if let Some((word, what)) = bad {
            let value = w[word].into();
            return Err(DecodeError::BadParam {
                opcode,
                what,
                value,
            });
        }
        insn.validate()?;
        Ok(insn)
    }

    /// Check the sizes and indices [`Insn::decode`] checks: every size is in
    /// `1..=`[`MAX_ELEMS`], `b_len` divides `n`, a `MATMUL` has at most
    /// [`MAX_MACS_PER_INSN`] MACs, semaphores are below [`NUM_SEMAPHORES`].
    pub fn validate(&self) -> Result<(), DecodeError> {
        let opcode = self.opcode();
        let bad = |what, value| {
            Err(DecodeError::BadParam {
                opcode,
                what,
                value,
            })
        };
        // An element count is in `1..=MAX_ELEMS`.
        let count = |what, value: u64| match value {
            1..=MAX_ELEMS => Ok(()),
            _ => bad(what, value),
        };
        match *self {
            Insn::End | Insn::Nop | Insn::SetBase(..) | Insn::Delay(..) | Insn::Raise(..) => Ok(()),
            Insn::Copy(_, _, n)
            | Insn::Fill(_, n, ..)
            | Insn::Affine(_, _, n, ..)
            | Insn::Act(_, _, _, n, ..) => count("n", n.into()),
            Insn::Binary(_, _, _, _, n, b_len, ..) => {
                count("n", n.into())?;
                if b_len != 0 && n % b_len != 0 {
                    return bad("b_len", b_len.into());
                }
                Ok(())
            }
            Insn::MatMul(_, _, _, m, k, n, ..) => {
                let (m, k, n) = (u64::from(m), u64::from(k), u64::from(n));
                for (what, v) in [("m", m), ("k", k), ("n", n), ("m*k", m * k)] {
                    count(what, v)?;
                }
                count("k*n", k * n)?;
                count("m*n", m * n)?;
                if m * k * n > MAX_MACS_PER_INSN {
                    return bad("m*k*n", m * k * n);
                }
                Ok(())
            }
            Insn::Reduce(_, _, _, rows, cols, ..) => {
                count("rows", rows.into())?;
                count("cols", cols.into())?;
                count("rows*cols", u64::from(rows) * u64::from(cols))
            }
            Insn::Wait(sem, ..) | Insn::Signal(sem, ..) if usize::from(sem) >= NUM_SEMAPHORES => {
                bad("sem", sem.into())
            }
            Insn::Wait(..) | Insn::Signal(..) => Ok(()),
        }
    }

    /// The cycles the instruction costs when it completes (docs/abi.md
    /// §1.15: 1 for control, 4 + elements for vector ops,
    /// 8 + m*k*n for `MATMUL`, the count for `DELAY`; time spent blocked in
    /// `WAIT` comes on top).
    pub fn cycles(&self) -> u64 {
        match *self {
            Insn::Copy(_, _, n)
            | Insn::Fill(_, n, ..)
            | Insn::Binary(_, _, _, _, n, ..)
            | Insn::Affine(_, _, n, ..)
            | Insn::Act(_, _, _, n, ..) => 4 + u64::from(n),
            Insn::Reduce(_, _, _, rows, cols, ..) => 4 + u64::from(rows) * u64::from(cols),
            Insn::MatMul(..) => 8 + self.macs(),
            Insn::Delay(cycles) => cycles,
            _ => 1,
        }
    }

    /// Multiply-accumulates performed (non-zero only for `MATMUL`).
    pub fn macs(&self) -> u64 {
        match *self {
            Insn::MatMul(_, _, _, m, k, n, ..) => u64::from(m) * u64::from(k) * u64::from(n),
            _ => 0,
        }
    }
}

/// Disassembly: `MATMUL.acc.chk [r1+0x0], [r0+0x40], [r0+0x440], m=4 k=16 n=32`.
impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.mnemonic();
        let chk = |check| if check { ".chk" } else { "" };
        match *self {
            Insn::End | Insn::Nop => f.write_str(m),
            Insn::SetBase(reg, value) => write!(f, "{m} r{}, {value:#x}", reg.index()),
            Insn::Copy(dst, src, n) => write!(f, "{m} {dst}, {src}, n={n}"),
            Insn::Fill(dst, n, value) => write!(f, "{m} {dst}, n={n}, value={value:#x}"),
            Insn::Binary(_, dst, a, b, n, b_len, check) => {
                write!(f, "{m}{} {dst}, {a}, {b}, n={n}, b_len={b_len}", chk(check))
            }
            Insn::Affine(dst, src, n, scale, bias, check) => {
                let (c, s, b) = (chk(check), f32::from_bits(scale), f32::from_bits(bias));
                write!(f, "{m}{c} {dst}, {src}, n={n}, scale={s:?}, bias={b:?}")
            }
            Insn::MatMul(dst, a, b, rows, k, n, acc, check) => {
                let (acc, c) = (if acc { ".acc" } else { "" }, chk(check));
                write!(f, "{m}{acc}{c} {dst}, {a}, {b}, m={rows} k={k} n={n}")
            }
            Insn::Act(func, dst, src, n, check) => {
                write!(f, "{m}.{}{} {dst}, {src}, n={n}", func.name(), chk(check))
            }
            Insn::Reduce(op, dst, src, rows, cols, check) => {
                let (op, c) = (op.name(), chk(check));
                write!(f, "{m}.{op}{c} {dst}, {src}, rows={rows} cols={cols}")
            }
            Insn::Wait(sem, value) | Insn::Signal(sem, value) => write!(f, "{m} s{sem}, {value}"),
            Insn::Delay(cycles) => write!(f, "{m} {cycles}"),
            Insn::Raise(class) => write!(f, "{m} {}", class.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_packs_opcode_flags_and_selects() {
        let i = Insn::MatMul(
            Operand::new(Base::R2, 0x10),
            Operand::new(Base::R1, 0x20),
            Operand::new(Base::R0, 0x30),
            2,
            3,
            4,
            true,
            true,
        );
        let w = i.encode();
        assert_eq!(w, [0x0006_0330, 0x10, 0x20, 0x30, 2, 3, 4, 0]);
        assert_eq!(Insn::decode(&w), Ok(i));
    }

    #[test]
    fn zero_words_are_not_an_instruction() {
        assert_eq!(
            Insn::decode(&[0; INSN_WORDS]),
            Err(DecodeError::BadOpcode { opcode: 0 })
        );
    }

    #[test]
    fn fmax_is_a_function_of_bits() {
        assert_eq!(fmax(-0.0, 0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fmax(0.0, -0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(fmax(f32::NAN, 1.0), 1.0);
        assert_eq!(fmax(1.0, f32::NAN), 1.0);
        assert!(fmax(f32::NAN, f32::NAN).is_nan());
    }
}
