//! The model builder: instruction blocks, tensor layout and constants linked
//! into a [`ModelImage`] for a given load address and IO address, and the
//! example model (a two-layer MLP, [`MlpSpec`]) with its plain CPU reference.
//!
//! An image has three sections, each reached through one base register that
//! a linker-written prologue sets at the top of every block:
//!
//! | section | base | where | what |
//! |---|---|---|---|
//! | constants | `R0` | load area, after the code | weights and biases (in `bytes`) |
//! | scratch | `R1` | load area, after the constants | intermediates (not in `bytes`; zero: the heap is never reused) |
//! | IO | `R2` | the IO area at `io_pa` | inputs, then outputs |
//!
//! The load area is `[code blocks][constants][scratch]`, each 64-byte
//! aligned; `R3` is free for the program.
#![forbid(unsafe_code)]

use std::sync::Arc;

use super::engine::{self, DeviceMemory, Engine, MemFault, NUM_ENGINES};
use super::isa::{ActFn, Base, BinOp, DecodeError, Insn, Operand, ReduceOp, INSN_BYTES};
use crate::prng::SplitMix64;
use crate::wire::nq::ErrorClass;

/// Alignment of every block, section and tensor.
pub const ALIGN: u64 = 64;

wire_enum! {
    /// Where a tensor lives, by its lower-case name; its code is that of the
    /// base register that points at the section (`R0`, `R1`, `R2`).
    pub enum Section(u8) {
        /// Constants (base `R0`), part of the image bytes.
        Constants = 0 => "const",
        /// Scratch (base `R1`), reserved after the image bytes.
        Scratch = 1 => "scratch",
        /// The IO area (base `R2`).
        Io = 2 => "io",
    }
}

/// An f32 tensor: row-major, at a byte offset within its section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    /// Name (for listings).
    pub name: &'static str,
    /// Its section.
    pub section: Section,
    /// Byte offset within the section (64-byte aligned).
    pub offset: u64,
    /// Shape, outermost first.
    pub shape: Vec<u32>,
}

impl TensorDesc {
    /// Element count (saturating: a shape that large is refused at link).
    pub fn elems(&self) -> u64 {
        self.shape
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)))
    }

    /// The operand addressing its first element.
    pub fn operand(&self) -> Operand {
        Operand::new(Base::ALL[self.section as usize], self.offset as u32)
    }
}

/// The per-model memory usage the NDS mem-usage grid reports (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemUsage {
    /// Instruction blocks (including alignment padding).
    pub code: u64,
    /// The IO area (inputs and outputs).
    pub tensors: u64,
    /// Weights and other constants.
    pub constants: u64,
    /// Scratch for intermediates.
    pub scratchpad: u64,
}

impl MemUsage {
    /// In NDS mem-usage slot order: CODE, TENSORS, CONSTANTS, SCRATCHPAD
    /// (docs/abi.md §2.6).
    pub const fn as_array(&self) -> [u64; 4] {
        [self.code, self.tensors, self.constants, self.scratchpad]
    }
}

error_enum! {
    /// Why a model could not be built or linked.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum ModelError {
        /// An instruction does not validate.
        BadInsn {
            /// The engine.
            engine: Engine,
            /// Position in the engine's block (before the prologue).
            index: usize,
            /// Why.
            err: DecodeError,
        } => "engine {engine} instruction {index}: {err}",
        /// A load or IO address is not 64-byte aligned.
        Misaligned {
            /// Which address.
            what: &'static str,
            /// Its value.
            pa: u64,
        } => "{what} {pa:#x} is not {ALIGN}-byte aligned",
        /// The load address is 0, which a request reads as "no block".
        ZeroLoad => "load_pa 0 (a request reads address 0 as an idle engine)",
        /// A section outgrows the 32-bit operand offsets, or an area overflows
        /// the 64-bit address space.
        TooLarge {
            /// Which section.
            what: &'static str,
        } => "{what} too large",
        /// A model dimension is 0 or too large.
        BadShape {
            /// Which dimension.
            what: &'static str,
            /// Its value.
            value: u64,
        } => "bad dimension {what} = {value}",
        /// An input of the wrong length was given.
        InputLength {
            /// Expected elements.
            need: usize,
            /// Given.
            got: usize,
        } => "input has {got} elements, model needs {need}",
        /// Device memory refused an access.
        Memory(#[from] MemFault) => "{0}",
    }
}

/// The null model: one instruction (`COPY` of one word from input `x` to
/// output `y`, on SP), no MACs. Its executions cost the engines almost
/// nothing, so a run of it measures the host path (producer, staging and
/// doorbell, sequencer protocol, NQ harvest, worker, publisher) apart from
/// the interpreter. Its reference is the identity on its one value.
pub fn null_model() -> Result<ModelBuilder, ModelError> {
    let mut mb = ModelBuilder::new("null");
    let x = mb.input("x", &[1]);
    let y = mb.output("y", &[1]);
    mb.push(Engine::Sp, Insn::Copy(y.operand(), x.operand(), 1))?;
    mb.reference(|x| x.to_vec());
    Ok(mb)
}

/// A CPU reference: the concatenated inputs to the concatenated outputs.
pub type ReferenceFn = dyn Fn(&[f32]) -> Vec<f32> + Send + Sync;

/// Assembles instruction blocks and a tensor layout; [`ModelBuilder::link`]
/// places them for a load address and an IO address.
#[derive(Clone, Default)]
pub struct ModelBuilder {
    name: &'static str,
    blocks: [Vec<Insn>; NUM_ENGINES],
    consts: Vec<u8>,
    /// Each section's length as placed, by [`Section`] code (saturating):
    /// `consts` holds the bytes only while the constants fit a section
    /// [`Self::link`] accepts.
    lens: [u64; Section::ALL.len()],
    inputs: Vec<TensorDesc>,
    outputs: Vec<TensorDesc>,
    constants: Vec<TensorDesc>,
    scratch: Vec<TensorDesc>,
    reference: Option<Arc<ReferenceFn>>,
}

/// `v` rounded up to a multiple of [`ALIGN`], saturating (a section that
/// large is refused by [`ModelBuilder::link`] anyway).
fn round_up(v: u64) -> u64 {
    v.saturating_add(ALIGN - 1) / ALIGN * ALIGN
}

impl ModelBuilder {
    /// An empty model called `name`.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            ..Self::default()
        }
    }

    /// Place a tensor of `shape` (f32 elements) at the next 64-byte boundary
    /// of `section` and add it to `list`. Saturating, so an absurd shape
    /// makes [`ModelBuilder::link`] refuse the section as
    /// [`ModelError::TooLarge`] instead of overflowing.
    fn place(
        &mut self,
        list: fn(&mut Self) -> &mut Vec<TensorDesc>,
        name: &'static str,
        section: Section,
        shape: &[u32],
    ) -> TensorDesc {
        let len = &mut self.lens[section as usize];
        let t = TensorDesc {
            name,
            section,
            offset: round_up(*len),
            shape: shape.to_vec(),
        };
        *len = t.offset.saturating_add(t.elems().saturating_mul(4));
        list(self).push(t.clone());
        t
    }

    /// A constant tensor holding `data` (row-major, `shape`'s product long;
    /// padded or truncated to it).
    pub fn constant(&mut self, name: &'static str, shape: &[u32], data: &[f32]) -> TensorDesc {
        let t = self.place(|m| &mut m.constants, name, Section::Constants, shape);
        // Past 4 GiB the section is refused at link (`TooLarge`): the bytes
        // are not made (a shape's product can be any size, or wrap).
        if self.lens[Section::Constants as usize] <= u64::from(u32::MAX) {
            self.consts.resize(t.offset as usize, 0);
            for i in 0..t.elems() as usize {
                let v = data.get(i).copied().unwrap_or(0.0);
                self.consts.extend_from_slice(&v.to_le_bytes());
            }
        }
        t
    }

    /// A scratch tensor.
    pub fn scratch(&mut self, name: &'static str, shape: &[u32]) -> TensorDesc {
        self.place(|m| &mut m.scratch, name, Section::Scratch, shape)
    }

    /// An input tensor in the IO area.
    pub fn input(&mut self, name: &'static str, shape: &[u32]) -> TensorDesc {
        self.place(|m| &mut m.inputs, name, Section::Io, shape)
    }

    /// An output tensor in the IO area.
    pub fn output(&mut self, name: &'static str, shape: &[u32]) -> TensorDesc {
        self.place(|m| &mut m.outputs, name, Section::Io, shape)
    }

    /// The CPU reference for the linked image.
    pub fn reference(&mut self, f: impl Fn(&[f32]) -> Vec<f32> + Send + Sync + 'static) {
        self.reference = Some(Arc::new(f));
    }

    /// Append `insn` to `engine`'s block. The linker adds the base prologue
    /// before and `END` after.
    pub fn push(&mut self, engine: Engine, insn: Insn) -> Result<(), ModelError> {
        let block = &mut self.blocks[engine.index()];
        insn.validate().map_err(|err| ModelError::BadInsn {
            engine,
            index: block.len(),
            err,
        })?;
        block.push(insn);
        Ok(())
    }

    /// Link for a load area at `load_pa` and an IO area at `io_pa` (both
    /// 64-byte aligned). An engine with no instructions is idle.
    pub fn link(&self, load_pa: u64, io_pa: u64) -> Result<ModelImage, ModelError> {
        for (what, pa) in [("load_pa", load_pa), ("io_pa", io_pa)] {
            if pa % ALIGN != 0 {
                return Err(ModelError::Misaligned { what, pa });
            }
        }
        // A block at address 0 would read as "engine idle" in the request.
        if load_pa == 0 {
            return Err(ModelError::ZeroLoad);
        }
        // Code: one block per busy engine, each 64-byte aligned.
        let prologue_len = 3;
        let mut offsets = [None; NUM_ENGINES];
        let mut code_len = 0u64;
        for (i, b) in self.blocks.iter().enumerate() {
            if !b.is_empty() {
                offsets[i] = Some(code_len);
                let n = (prologue_len + b.len() + 1) as u64;
                code_len = (code_len + n * INSN_BYTES as u64).next_multiple_of(ALIGN);
            }
        }
        let const_off = code_len;
        let lens = self.lens.map(round_up);
        let [const_len, scratch_len, io_len] = lens;
        for (what, len) in ["constants", "scratch", "io area"].into_iter().zip(lens) {
            if len > u64::from(u32::MAX) {
                return Err(ModelError::TooLarge { what });
            }
        }
        // Every section is below 4 GiB now: no overflow from here on.
        let scratch_off = const_off + const_len;
        let too_large = |what| ModelError::TooLarge { what };
        load_pa
            .checked_add(scratch_off + scratch_len)
            .ok_or(too_large("load area"))?;
        io_pa.checked_add(io_len).ok_or(too_large("io area"))?;

        let mut bytes = vec![0u8; scratch_off as usize];
        for (i, b) in self.blocks.iter().enumerate() {
            let Some(off) = offsets[i] else { continue };
            let prologue = [
                Insn::SetBase(Base::R0, load_pa + const_off),
                Insn::SetBase(Base::R1, load_pa + scratch_off),
                Insn::SetBase(Base::R2, io_pa),
            ];
            let all = prologue.iter().chain(b).chain([&Insn::End]);
            for (j, insn) in all.enumerate() {
                let at = off as usize + j * INSN_BYTES;
                bytes[at..at + INSN_BYTES].copy_from_slice(&insn.to_bytes());
            }
        }
        bytes[const_off as usize..const_off as usize + self.consts.len()]
            .copy_from_slice(&self.consts);

        Ok(ModelImage {
            name: self.name,
            load_pa,
            io_pa,
            bytes,
            blocks: offsets,
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
            constants: self.constants.clone(),
            scratch: self.scratch.clone(),
            macs: self.blocks.iter().flatten().map(Insn::macs).sum(),
            mem: MemUsage {
                code: code_len,
                tensors: io_len,
                constants: const_len,
                scratchpad: scratch_len,
            },
            reference: self.reference.clone(),
        })
    }
}

/// A linked model: what a loader copies to the device and what a caller
/// needs to run it and check it.
#[derive(Clone)]
pub struct ModelImage {
    /// Model name.
    pub name: &'static str,
    /// Where the image was linked to load.
    pub load_pa: u64,
    /// Where its IO area was linked.
    pub io_pa: u64,
    /// Code blocks then constants; copy to `load_pa`.
    pub bytes: Vec<u8>,
    /// Per engine ([`Engine::index`] order: PE, ACT, POOL, DVE, SP): its
    /// block's byte offset within `bytes`, `None` when idle.
    pub blocks: [Option<u64>; NUM_ENGINES],
    /// Input tensors (IO area), in reference order.
    pub inputs: Vec<TensorDesc>,
    /// Output tensors (IO area), in reference order.
    pub outputs: Vec<TensorDesc>,
    /// Constant tensors (weights).
    pub constants: Vec<TensorDesc>,
    /// Scratch tensors.
    pub scratch: Vec<TensorDesc>,
    /// MACs per execution (every `MATMUL` of every block).
    pub macs: u64,
    /// Memory usage by NDS category, which is also the layout: code then
    /// constants in `bytes` (so the constants at offset `mem.code`), then
    /// `mem.scratchpad` bytes of scratch; `mem.tensors` bytes of IO area at
    /// `io_pa`.
    pub mem: MemUsage,
    reference: Option<Arc<ReferenceFn>>,
}

debug_fields!(
    [] ModelImage,
    |s| name = s.name,
    load_pa = format_args!("{:#x}", s.load_pa),
    io_pa = format_args!("{:#x}", s.io_pa),
    bytes = s.bytes.len(),
    blocks = s.blocks,
    macs = s.macs,
    mem = s.mem;
    ..
);

impl ModelImage {
    /// Offset of the scratch section from `load_pa`: it follows the image.
    pub fn scratch_offset(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Bytes to reserve at `load_pa`: the image plus its scratch.
    pub fn footprint(&self) -> u64 {
        self.scratch_offset() + self.mem.scratchpad
    }

    /// The physical address of a tensor of this image.
    pub fn tensor_pa(&self, t: &TensorDesc) -> u64 {
        t.offset
            + match t.section {
                Section::Constants => self.load_pa + self.mem.code,
                Section::Scratch => self.load_pa + self.scratch_offset(),
                Section::Io => self.io_pa,
            }
    }

    /// Elements of all inputs together.
    pub fn input_len(&self) -> usize {
        self.inputs.iter().map(|t| t.elems() as usize).sum()
    }

    /// Elements of all outputs together.
    pub fn output_len(&self) -> usize {
        self.outputs.iter().map(|t| t.elems() as usize).sum()
    }

    /// Write the concatenated inputs into the IO area.
    pub fn write_input(&self, mem: &dyn DeviceMemory, input: &[f32]) -> Result<(), ModelError> {
        let (need, got) = (self.input_len(), input.len());
        if got != need {
            return Err(ModelError::InputLength { need, got });
        }
        let mut rest = input;
        for t in &self.inputs {
            let (now, later) = rest.split_at(t.elems() as usize);
            engine::write_f32s(mem, self.tensor_pa(t), now)?;
            rest = later;
        }
        Ok(())
    }

    /// Read the concatenated outputs from the IO area.
    pub fn read_output(&self, mem: &dyn DeviceMemory) -> Result<Vec<f32>, MemFault> {
        let mut out = Vec::with_capacity(self.output_len());
        for t in &self.outputs {
            let (pa, n) = (self.tensor_pa(t), t.elems() as usize);
            out.extend(engine::read_f32s(mem, pa, n)?);
        }
        Ok(out)
    }

    /// The CPU reference: the outputs the device must produce for `input`
    /// (concatenated, like [`ModelImage::read_output`]). Empty when the
    /// image was built without a reference.
    pub fn reference(&self, input: &[f32]) -> Vec<f32> {
        self.reference.as_ref().map_or_else(Vec::new, |f| f(input))
    }
}

/// A fault planted in the example model, for fault tests (docs/abi.md
/// §1.15, fault injection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// `RAISE class` at the top of `engine`'s block (after the prologue).
    Raise {
        /// The engine.
        engine: Engine,
        /// The class raised.
        class: ErrorClass,
    },
    /// `DELAY cycles` at the top of `engine`'s block; the outputs are
    /// unchanged, only the timing moves.
    Delay {
        /// The engine.
        engine: Engine,
        /// Cycles.
        cycles: u64,
    },
}

/// The example model: `y = act(x . W1 + b1) . W2 + b2`, `m = rowmax(y)`, for
/// a batch of `batch` rows, with weights drawn from `seed`.
///
/// Engines hand off through semaphores: SP copies the input to scratch (s0)
/// -> PE `MATMUL` (s1) -> DVE bias add (s2) -> ACT activation (s3) -> PE
/// `MATMUL` (s4) -> DVE bias add (s5) -> POOL row max. Every arithmetic
/// instruction carries `.chk` when `check` is set, so a NaN or Inf in the
/// input ends the execution with a `Numerical` error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MlpSpec {
    /// Rows per execution.
    pub batch: u32,
    /// Input features.
    pub input: u32,
    /// Hidden units.
    pub hidden: u32,
    /// Output features.
    pub output: u32,
    /// The hidden activation.
    pub act: ActFn,
    /// Weight seed.
    pub seed: u64,
    /// Set `.chk` on every arithmetic instruction.
    pub check: bool,
    /// A planted fault, if any.
    pub inject: Option<Inject>,
}

/// Weights of an [`MlpSpec`], row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct MlpWeights {
    /// `input x hidden`.
    pub w1: Vec<f32>,
    /// `hidden`.
    pub b1: Vec<f32>,
    /// `hidden x output`.
    pub w2: Vec<f32>,
    /// `output`.
    pub b2: Vec<f32>,
}

/// A uniform f32 in `[-scale, scale)` with 24 random bits (exact in f32).
fn uniform(rng: &mut SplitMix64, scale: f32) -> f32 {
    let u = (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32;
    (u * 2.0 - 1.0) * scale
}

impl MlpSpec {
    /// The shipped example: batch 4, 16 -> 32 -> 8, ReLU, checked.
    pub const EXAMPLE: MlpSpec = MlpSpec {
        batch: 4,
        input: 16,
        hidden: 32,
        output: 8,
        act: ActFn::Relu,
        seed: 0x5EED_0001,
        check: true,
        inject: None,
    };

    /// MACs per execution: `batch * (input * hidden + hidden * output)`.
    pub fn macs(&self) -> u64 {
        let [b, i, h, o] = [self.batch, self.input, self.hidden, self.output].map(u64::from);
        b * (i * h + h * o)
    }

    /// The weights drawn from `seed`: W1, b1, W2, b2 in that order, each
    /// uniform in `[-1/sqrt(fan_in), 1/sqrt(fan_in))`.
    pub fn weights(&self) -> MlpWeights {
        let mut rng = SplitMix64::new(self.seed);
        let [i, h, o] = [self.input, self.hidden, self.output].map(|v| v as usize);
        let s1 = 1.0 / (self.input as f32).sqrt();
        let s2 = 1.0 / (self.hidden as f32).sqrt();
        let mut draw = |n: usize, s: f32| (0..n).map(|_| uniform(&mut rng, s)).collect();
        MlpWeights {
            w1: draw(i * h, s1),
            b1: draw(h, s1),
            w2: draw(h * o, s2),
            b2: draw(o, s2),
        }
    }

    /// A deterministic input batch (`batch * input` values in `[-1, 1)`).
    pub fn example_input(&self, seed: u64) -> Vec<f32> {
        let mut rng = SplitMix64::new(seed);
        let n = self.batch as usize * self.input as usize;
        (0..n).map(|_| uniform(&mut rng, 1.0)).collect()
    }

    /// The builder with the MLP's blocks, layout and reference.
    pub fn builder(&self) -> Result<ModelBuilder, ModelError> {
        let dims = [self.batch, self.input, self.hidden, self.output];
        for (what, v) in ["batch", "input", "hidden", "output"].into_iter().zip(dims) {
            if v == 0 || v > 4096 {
                let value = u64::from(v);
                return Err(ModelError::BadShape { what, value });
            }
        }
        let [bt, i, h, o] = dims;
        let w = self.weights();
        let mut mb = ModelBuilder::new("mlp");
        let x = mb.input("x", &[bt, i]);
        let y = mb.output("y", &[bt, o]);
        let m = mb.output("m", &[bt]);
        let w1 = mb.constant("w1", &[i, h], &w.w1);
        let b1 = mb.constant("b1", &[h], &w.b1);
        let w2 = mb.constant("w2", &[h, o], &w.w2);
        let b2 = mb.constant("b2", &[o], &w.b2);
        let xs = mb.scratch("x_s", &[bt, i]);
        let hs = mb.scratch("h", &[bt, h]);
        let check = self.check;

        if let Some(inj) = self.inject {
            let (engine, insn) = match inj {
                Inject::Raise { engine, class } => (engine, Insn::Raise(class)),
                Inject::Delay { engine, cycles } => (engine, Insn::Delay(cycles)),
            };
            mb.push(engine, insn)?;
        }
        let wait = |sem| Insn::Wait(sem, 1);
        let signal = |sem| Insn::Signal(sem, 1);
        let add = |d: &TensorDesc, b: &TensorDesc| {
            let (od, ob, n, b_len) = (d.operand(), b.operand(), d.elems() as u32, b.elems() as u32);
            Insn::Binary(BinOp::Add, od, od, ob, n, b_len, check)
        };
        let matmul = |d: &TensorDesc, a: &TensorDesc, b: &TensorDesc, k| {
            let (od, oa, ob, n) = (d.operand(), a.operand(), b.operand(), d.shape[1]);
            Insn::MatMul(od, oa, ob, bt, k, n, false, check)
        };
        let copy = Insn::Copy(xs.operand(), x.operand(), bt * i);
        let act = Insn::Act(self.act, hs.operand(), hs.operand(), bt * h, check);
        let reduce = Insn::Reduce(ReduceOp::Max, m.operand(), y.operand(), bt, o, check);
        use Engine::{Act, Dve, Pe, Pool, Sp};
        for (engine, insn) in [
            // SP: stage the input.
            (Sp, copy),
            (Sp, signal(0)),
            // PE: both matrix multiplies.
            (Pe, wait(0)),
            (Pe, matmul(&hs, &xs, &w1, i)),
            (Pe, signal(1)),
            (Pe, wait(3)),
            (Pe, matmul(&y, &hs, &w2, h)),
            (Pe, signal(4)),
            // DVE: both bias adds.
            (Dve, wait(1)),
            (Dve, add(&hs, &b1)),
            (Dve, signal(2)),
            (Dve, wait(4)),
            (Dve, add(&y, &b2)),
            (Dve, signal(5)),
            // ACT: the activation, in place.
            (Act, wait(2)),
            (Act, act),
            (Act, signal(3)),
            // POOL: the row max.
            (Pool, wait(5)),
            (Pool, reduce),
        ] {
            mb.push(engine, insn)?;
        }
        let spec = *self;
        mb.reference(move |x| spec.reference_with(&w, x));
        Ok(mb)
    }

    /// Build and link for `load_pa` / `io_pa` (64-byte aligned).
    pub fn link(&self, load_pa: u64, io_pa: u64) -> Result<ModelImage, ModelError> {
        self.builder()?.link(load_pa, io_pa)
    }

    /// The CPU reference with the spec's own weights: `y` (batch x output)
    /// then `m` (batch). Plain loops, in the engines' order of accumulation
    /// (see `engine::matmul_into`), so the device matches bit for bit.
    /// An input of the wrong length is zero-padded or truncated.
    pub fn reference(&self, x: &[f32]) -> Vec<f32> {
        self.reference_with(&self.weights(), x)
    }

    fn reference_with(&self, w: &MlpWeights, x: &[f32]) -> Vec<f32> {
        let [bt, i, h, o] = [self.batch, self.input, self.hidden, self.output].map(|v| v as usize);
        let mut hid = vec![0f32; bt * h];
        let mut y = vec![0f32; bt * o];
        for r in 0..bt {
            for j in 0..h {
                let mut s = 0.0f32;
                for k in 0..i {
                    s += x.get(r * i + k).copied().unwrap_or(0.0) * w.w1[k * h + j];
                }
                hid[r * h + j] = self.act.apply(s + w.b1[j]);
            }
            for j in 0..o {
                let mut s = 0.0f32;
                for k in 0..h {
                    s += hid[r * h + k] * w.w2[k * o + j];
                }
                y[r * o + j] = s + w.b2[j];
            }
        }
        let max = |row: &[f32]| ReduceOp::Max.fold(row.iter().copied());
        let m: Vec<f32> = y.chunks_exact(o).map(max).collect();
        y.extend(m);
        y
    }
}
