//! The engines' instruction format and interpreter (docs/abi.md
//! §1.15): every instruction's encoding and semantics against
//! hand-computed values, the wait/signal timing rules, every error class,
//! and a property test of >= 100,000 random blocks.

use crate::support::{ended, execute_blocks, execute_request, insn_from_bytes, VecMemory};
use xunds::device::engine::{
    read_f32s, write_f32s, DeviceMemory, Engine, EngineFault, EngineFsm, EngineState, ExecReport,
    Executor, FaultKind, Limits, MemFault, TraceWhat, NUM_ENGINES,
};
use xunds::device::isa::{
    self, ActFn, Base, BinOp, DecodeError, Insn, Op, Operand, ReduceOp, INSN_BYTES, INSN_WORDS,
};
use xunds::prng::SplitMix64;
use xunds::wire::device_request::DeviceExecRequest;
use xunds::wire::nq::ErrorClass;
use EngineState::{Done, Faulted, Idle};

/// Test memory: 64 KiB at 0x10000. Engine `i`'s code at CODE + i * 0x1000,
/// data from DATA on.
const BASE: u64 = 0x1_0000;
const CODE: u64 = BASE;
const DATA: u64 = BASE + 0x8000;
const MEM_BYTES: usize = 0x1_0000;

fn mem() -> VecMemory {
    VecMemory::new(BASE, MEM_BYTES)
}

/// An absolute operand (registers start at 0).
fn at(pa: u64) -> Operand {
    Operand::new(Base::R0, pa as u32)
}

fn code_at(engine: usize) -> u64 {
    CODE + engine as u64 * 0x1000
}

fn store_block(m: &VecMemory, pa: u64, insns: &[Insn]) {
    for (j, i) in insns.iter().enumerate() {
        for (k, w) in i.encode().iter().enumerate() {
            m.write_u32(pa + (j * INSN_BYTES + 4 * k) as u64, *w)
                .unwrap();
        }
    }
}

/// Load one block per engine (empty = idle) and run from cycle `start`.
fn run_on(m: &VecMemory, blocks: &[&[Insn]], start: u64) -> ExecReport {
    let mut addrs = [0u64; NUM_ENGINES];
    for (e, b) in blocks.iter().enumerate() {
        if !b.is_empty() {
            store_block(m, code_at(e), b);
            addrs[e] = code_at(e);
        }
    }
    execute_blocks(m, addrs, start)
}

fn run1(m: &VecMemory, block: &[Insn]) -> ExecReport {
    run_on(m, &[block], 0)
}

fn f32s(m: &VecMemory, pa: u64, n: usize) -> Vec<f32> {
    read_f32s(m, pa, n).unwrap()
}

fn put(m: &VecMemory, pa: u64, v: &[f32]) {
    write_f32s(m, pa, v).unwrap();
}

fn assert_done(r: &ExecReport) {
    for (i, e) in r.engines.iter().enumerate() {
        assert!(
            matches!(ended(e), (Done | Idle, None)),
            "engine {i}: {:?} {:?}",
            e.state,
            e.fault
        );
    }
    assert!(r.is_ok());
}

// ---------------------------------------------------------------- encoding

/// One valid example of every opcode, and its exact words.
fn examples() -> Vec<(Insn, [u32; INSN_WORDS])> {
    let d = Operand::new(Base::R1, 0x100);
    let a = Operand::new(Base::R2, 0x200);
    let b = Operand::new(Base::R3, 0x300);
    vec![
        (Insn::End, [0x01, 0, 0, 0, 0, 0, 0, 0]),
        (Insn::Nop, [0x02, 0, 0, 0, 0, 0, 0, 0]),
        (
            Insn::SetBase(Base::R3, 0x1234_5678_9abc_def0),
            [0x03, 0, 0, 0, 3, 0x9abc_def0, 0x1234_5678, 0],
        ),
        (
            Insn::Copy(d, a, 7),
            [0x0009_0010, 0x100, 0x200, 0, 7, 0, 0, 0],
        ),
        (
            Insn::Fill(d, 5, 0xdead_beef),
            [0x0001_0011, 0x100, 0, 0, 5, 0xdead_beef, 0, 0],
        ),
        (
            Insn::Binary(BinOp::Add, d, a, b, 8, 4, true),
            [0x0039_0120, 0x100, 0x200, 0x300, 8, 4, 0, 0],
        ),
        (
            Insn::Binary(BinOp::Sub, d, a, b, 8, 0, false),
            [0x0039_0021, 0x100, 0x200, 0x300, 8, 0, 0, 0],
        ),
        (
            Insn::Binary(BinOp::Mul, d, a, b, 1, 1, false),
            [0x0039_0022, 0x100, 0x200, 0x300, 1, 1, 0, 0],
        ),
        (
            Insn::Binary(BinOp::Max, d, a, b, 2, 0, true),
            [0x0039_0123, 0x100, 0x200, 0x300, 2, 0, 0, 0],
        ),
        (
            Insn::Affine(d, a, 3, 2.0f32.to_bits(), 0.5f32.to_bits(), false),
            [0x0009_0024, 0x100, 0x200, 0, 3, 0x4000_0000, 0x3f00_0000, 0],
        ),
        (
            Insn::MatMul(d, a, b, 2, 3, 4, true, false),
            [0x0039_0230, 0x100, 0x200, 0x300, 2, 3, 4, 0],
        ),
        (
            Insn::Act(ActFn::Tanh, d, a, 6, true),
            [0x0009_0140, 0x100, 0x200, 0, 6, 3, 0, 0],
        ),
        (
            Insn::Reduce(ReduceOp::Max, d, a, 2, 5, false),
            [0x0009_0050, 0x100, 0x200, 0, 2, 5, 1, 0],
        ),
        (Insn::Wait(15, 2), [0x60, 0, 0, 0, 15, 2, 0, 0]),
        (Insn::Signal(3, 9), [0x61, 0, 0, 0, 3, 9, 0, 0]),
        (Insn::Delay(0x1_0000_0005), [0x70, 0, 0, 0, 5, 1, 0, 0]),
        (
            Insn::Raise(ErrorClass::Runtime),
            [0x7f, 0, 0, 0, 5, 0, 0, 0],
        ),
    ]
}

#[test]
fn every_opcode_encodes_to_its_words_and_back() {
    let ex = examples();
    let mut opcodes: Vec<u8> = ex.iter().map(|(i, _)| i.opcode()).collect();
    opcodes.sort_unstable();
    opcodes.dedup();
    // All 17 opcodes are covered.
    assert_eq!(
        opcodes,
        vec![
            Op::End as u8,
            Op::Nop as u8,
            Op::SetBase as u8,
            Op::Copy as u8,
            Op::Fill as u8,
            BinOp::Add as u8,
            BinOp::Sub as u8,
            BinOp::Mul as u8,
            BinOp::Max as u8,
            Op::Affine as u8,
            Op::MatMul as u8,
            Op::Act as u8,
            Op::Reduce as u8,
            Op::Wait as u8,
            Op::Signal as u8,
            Op::Delay as u8,
            Op::Raise as u8
        ]
    );
    for (insn, words) in ex {
        assert_eq!(insn.encode(), words, "{insn}");
        assert_eq!(Insn::decode(&words), Ok(insn), "{insn}");
        let bytes = insn.to_bytes();
        assert_eq!(bytes[0], insn.opcode());
        assert_eq!(insn_from_bytes(&bytes), Ok(insn));
        // Little-endian words.
        assert_eq!(
            u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            words[1]
        );
    }
}

#[test]
fn every_act_function_and_class_round_trips() {
    for func in ActFn::ALL {
        let i = Insn::Act(func, at(0), at(0), 1, false);
        assert_eq!(Insn::decode(&i.encode()), Ok(i));
    }
    for class in ErrorClass::ALL {
        let i = Insn::Raise(class);
        assert_eq!(i.encode()[4], class as u32);
        assert_eq!(Insn::decode(&i.encode()), Ok(i));
    }
}

#[test]
fn decode_refuses_with_typed_errors() {
    let good = Insn::Copy(at(0), at(4), 1).encode();
    let with = |i: usize, v: u32| {
        let mut w = good;
        w[i] = v;
        w
    };
    assert_eq!(
        Insn::decode(&with(0, 0x05)),
        Err(DecodeError::BadOpcode { opcode: 0x05 })
    );
    assert_eq!(
        Insn::decode(&with(0, 0x0110)),
        Err(DecodeError::BadFlags {
            opcode: Op::Copy as u8,
            flags: 1
        })
    );
    // Reserved byte 3, and the base select of the unused slot b.
    assert!(matches!(
        Insn::decode(&with(0, 0x0100_0010)),
        Err(DecodeError::Reserved { word: 0, .. })
    ));
    assert!(matches!(
        Insn::decode(&with(0, 0x0010_0010)),
        Err(DecodeError::Reserved { word: 0, .. })
    ));
    // Unused operand word b, unused parameter p3.
    assert!(matches!(
        Insn::decode(&with(3, 4)),
        Err(DecodeError::Reserved { word: 3, .. })
    ));
    assert!(matches!(
        Insn::decode(&with(7, 1)),
        Err(DecodeError::Reserved { word: 7, .. })
    ));
    // Sizes.
    assert!(matches!(
        Insn::decode(&with(4, 0)),
        Err(DecodeError::BadParam { what: "n", .. })
    ));
    assert!(matches!(
        Insn::decode(&with(4, (isa::MAX_ELEMS + 1) as u32)),
        Err(DecodeError::BadParam { what: "n", .. })
    ));
    let bin = Insn::Binary(BinOp::Add, at(0), at(0), at(0), 6, 4, false);
    assert!(matches!(
        Insn::decode(&bin.encode()),
        Err(DecodeError::BadParam { what: "b_len", .. })
    ));
    let mm = |m, k, n| Insn::MatMul(at(0), at(0), at(0), m, k, n, false, false).encode();
    assert!(matches!(
        Insn::decode(&mm(1 << 11, 1 << 10, 1)),
        Err(DecodeError::BadParam { what: "m*k", .. })
    ));
    assert!(matches!(
        Insn::decode(&mm(1 << 10, 1 << 10, 1 << 5)),
        Err(DecodeError::BadParam { what: "m*k*n", .. })
    ));
    // Enumerations and indices.
    assert!(matches!(
        Insn::decode(&[0x0009_0040, 0, 0, 0, 1, 4, 0, 0]),
        Err(DecodeError::BadParam { what: "func", .. })
    ));
    assert!(matches!(
        Insn::decode(&[0x0009_0050, 0, 0, 0, 1, 1, 2, 0]),
        Err(DecodeError::BadParam { what: "op", .. })
    ));
    assert!(matches!(
        Insn::decode(&[0x7f, 0, 0, 0, 6, 0, 0, 0]),
        Err(DecodeError::BadParam { what: "class", .. })
    ));
    assert!(matches!(
        Insn::decode(&[0x60, 0, 0, 0, 16, 1, 0, 0]),
        Err(DecodeError::BadParam { what: "sem", .. })
    ));
    assert!(matches!(
        Insn::decode(&[0x03, 0, 0, 0, 4, 1, 0, 0]),
        Err(DecodeError::BadParam { what: "reg", .. })
    ));
}

#[test]
fn engine_state_machine_table() {
    xunds::fsm::check_table::<EngineFsm>().unwrap();
    insta::assert_snapshot!(xunds::fsm::render_table::<EngineFsm>(), @r"
    IDLE --start--> READY
    READY --block--> BLOCKED
    BLOCKED --wake--> READY
    READY --finish--> DONE
    READY --fault--> FAULTED
    BLOCKED --fault--> FAULTED
    ");
}

// --------------------------------------------------------------- semantics

#[test]
fn end_and_nop_cost_one_cycle() {
    let m = mem();
    let r = run_on(&m, &[&[Insn::Nop, Insn::Nop, Insn::End]], 1000);
    assert_done(&r);
    let pe = r.engines[0];
    assert_eq!(ended(&pe), (Done, None));
    assert_eq!((pe.start_cycle, pe.end_cycle, pe.steps), (1000, 1003, 3));
    // Idle engines: no time, no steps.
    for e in &r.engines[1..] {
        assert_eq!(ended(e), (Idle, None));
        assert_eq!((e.start_cycle, e.end_cycle, e.steps), (1000, 1000, 0));
    }
    assert_eq!((r.end_cycle, r.cycles(), r.macs), (1003, 3, 0));
}

#[test]
fn setbase_relocates_operands() {
    let m = mem();
    put(&m, DATA, &[1.5, 2.5]);
    let r = run1(
        &m,
        &[
            Insn::SetBase(Base::R2, DATA),
            Insn::Copy(Operand::new(Base::R2, 0x40), Operand::new(Base::R2, 0), 2),
            Insn::End,
        ],
    );
    assert_done(&r);
    assert_eq!(f32s(&m, DATA + 0x40, 2), [1.5, 2.5]);
    // SETBASE 1 + COPY 4+2 + END 1.
    assert_eq!(r.end_cycle, 8);
}

#[test]
fn copy_and_fill_move_raw_words() {
    let m = mem();
    for (i, w) in [0xdead_beefu32, 0x7fc0_0001, 3].iter().enumerate() {
        m.write_u32(DATA + 4 * i as u64, *w).unwrap();
    }
    let r = run1(
        &m,
        &[
            Insn::Copy(at(DATA + 0x100), at(DATA), 3),
            Insn::Fill(at(DATA + 0x200), 2, 0x1234_5678),
            Insn::End,
        ],
    );
    assert_done(&r);
    let words: Vec<u32> = (0..3)
        .map(|i| m.read_u32(DATA + 0x100 + 4 * i).unwrap())
        .collect();
    // A NaN payload survives (COPY moves words, not floats).
    assert_eq!(words, [0xdead_beef, 0x7fc0_0001, 3]);
    assert_eq!(m.read_u32(DATA + 0x200).unwrap(), 0x1234_5678);
    assert_eq!(m.read_u32(DATA + 0x204).unwrap(), 0x1234_5678);
    assert_eq!(m.read_u32(DATA + 0x208).unwrap(), 0);
    // COPY 4+3, FILL 4+2, END 1.
    assert_eq!(r.end_cycle, 14);
}

#[test]
fn binary_ops_with_and_without_broadcast() {
    let m = mem();
    put(&m, DATA, &[1.0, 2.0, 3.0, 4.0]);
    put(&m, DATA + 0x40, &[10.0, 20.0, 30.0, 40.0]);
    let bin =
        |op, dst, n, b_len| Insn::Binary(op, at(dst), at(DATA), at(DATA + 0x40), n, b_len, false);
    let r = run1(
        &m,
        &[
            bin(BinOp::Add, DATA + 0x100, 4, 0),
            bin(BinOp::Add, DATA + 0x140, 4, 2),
            bin(BinOp::Sub, DATA + 0x180, 4, 0),
            bin(BinOp::Mul, DATA + 0x1c0, 4, 1),
            bin(BinOp::Max, DATA + 0x200, 4, 0),
            Insn::End,
        ],
    );
    assert_done(&r);
    assert_eq!(f32s(&m, DATA + 0x100, 4), [11.0, 22.0, 33.0, 44.0]);
    assert_eq!(f32s(&m, DATA + 0x140, 4), [11.0, 22.0, 13.0, 24.0]);
    assert_eq!(f32s(&m, DATA + 0x180, 4), [-9.0, -18.0, -27.0, -36.0]);
    assert_eq!(f32s(&m, DATA + 0x1c0, 4), [10.0, 20.0, 30.0, 40.0]);
    assert_eq!(f32s(&m, DATA + 0x200, 4), [10.0, 20.0, 30.0, 40.0]);
    assert_eq!(r.end_cycle, 5 * (4 + 4) + 1);
}

#[test]
fn max_is_deterministic_on_nan_and_signed_zero() {
    let m = mem();
    put(&m, DATA, &[f32::NAN, 1.0, -0.0, 0.0]);
    put(&m, DATA + 0x40, &[2.0, f32::NAN, 0.0, -0.0]);
    let r = run1(
        &m,
        &[
            Insn::Binary(
                BinOp::Max,
                at(DATA + 0x80),
                at(DATA),
                at(DATA + 0x40),
                4,
                0,
                false,
            ),
            Insn::End,
        ],
    );
    assert_done(&r);
    let out = f32s(&m, DATA + 0x80, 4);
    assert_eq!(out[0], 2.0);
    assert_eq!(out[1], 1.0);
    // Ties keep `a`.
    assert_eq!(out[2].to_bits(), (-0.0f32).to_bits());
    assert_eq!(out[3].to_bits(), 0.0f32.to_bits());
}

#[test]
fn affine_scales_then_adds() {
    let m = mem();
    put(&m, DATA, &[1.0, 2.0, -3.0]);
    let r = run1(
        &m,
        &[
            Insn::Affine(
                at(DATA + 0x40),
                at(DATA),
                3,
                2.0f32.to_bits(),
                0.5f32.to_bits(),
                true,
            ),
            Insn::End,
        ],
    );
    assert_done(&r);
    assert_eq!(f32s(&m, DATA + 0x40, 3), [2.5, 4.5, -5.5]);
    assert_eq!(r.end_cycle, 4 + 3 + 1);
}

#[test]
fn matmul_computes_counts_macs_and_accumulates() {
    let m = mem();
    // a = [[1,2,3],[4,5,6]], b = [[7,8],[9,10],[11,12]]
    put(&m, DATA, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    put(&m, DATA + 0x40, &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
    put(&m, DATA + 0xc0, &[1.0, 1.0, 1.0, 1.0]);
    let mm = |dst, acc| Insn::MatMul(at(dst), at(DATA), at(DATA + 0x40), 2, 3, 2, acc, true);
    let r = run1(
        &m,
        &[mm(DATA + 0x80, false), mm(DATA + 0xc0, true), Insn::End],
    );
    assert_done(&r);
    // 1*7+2*9+3*11 = 58, 1*8+2*10+3*12 = 64, 4*7+5*9+6*11 = 139, 154.
    assert_eq!(f32s(&m, DATA + 0x80, 4), [58.0, 64.0, 139.0, 154.0]);
    assert_eq!(f32s(&m, DATA + 0xc0, 4), [59.0, 65.0, 140.0, 155.0]);
    assert_eq!(r.macs, 2 * 12);
    assert_eq!(r.end_cycle, 2 * (8 + 12) + 1);
}

#[test]
fn matmul_accumulates_in_k_order_without_fma() {
    // 1e8 + 1 - 1e8 in f32 left to right is 0 (1e8 + 1 rounds to 1e8); a
    // fused or reordered sum would give 1.
    let m = mem();
    put(&m, DATA, &[1e8, 1.0, -1e8]);
    put(&m, DATA + 0x40, &[1.0, 1.0, 1.0]);
    let r = run1(
        &m,
        &[
            Insn::MatMul(
                at(DATA + 0x80),
                at(DATA),
                at(DATA + 0x40),
                1,
                3,
                1,
                false,
                false,
            ),
            Insn::End,
        ],
    );
    assert_done(&r);
    assert_eq!(f32s(&m, DATA + 0x80, 1), [0.0]);
}

#[test]
fn activations() {
    let m = mem();
    put(&m, DATA, &[-1.0, 0.0, 2.0]);
    let act = |func, dst| Insn::Act(func, at(dst), at(DATA), 3, false);
    let r = run1(
        &m,
        &[
            act(ActFn::Identity, DATA + 0x40),
            act(ActFn::Relu, DATA + 0x80),
            act(ActFn::Sigmoid, DATA + 0xc0),
            act(ActFn::Tanh, DATA + 0x100),
            Insn::End,
        ],
    );
    assert_done(&r);
    assert_eq!(f32s(&m, DATA + 0x40, 3), [-1.0, 0.0, 2.0]);
    assert_eq!(f32s(&m, DATA + 0x80, 3), [0.0, 0.0, 2.0]);
    let s = f32s(&m, DATA + 0xc0, 3);
    assert_eq!(s[1], 0.5);
    assert!((s[0] - 0.268_941_43).abs() < 1e-6 && (s[2] - 0.880_797_1).abs() < 1e-6);
    let t = f32s(&m, DATA + 0x100, 3);
    assert_eq!(t[1], 0.0);
    assert!((t[0] + 0.761_594_2).abs() < 1e-6 && (t[2] - 0.964_027_6).abs() < 1e-6);
}

#[test]
fn reductions_fold_rows_left_to_right() {
    let m = mem();
    put(&m, DATA, &[1.0, 2.0, 3.0, 4.0, -5.0, 6.0]);
    let red = |op, dst| Insn::Reduce(op, at(dst), at(DATA), 2, 3, false);
    let r = run1(
        &m,
        &[
            red(ReduceOp::Sum, DATA + 0x40),
            red(ReduceOp::Max, DATA + 0x80),
            Insn::End,
        ],
    );
    assert_done(&r);
    assert_eq!(f32s(&m, DATA + 0x40, 2), [6.0, 5.0]);
    assert_eq!(f32s(&m, DATA + 0x80, 2), [3.0, 6.0]);
    assert_eq!(r.end_cycle, 2 * (4 + 6) + 1);
}

#[test]
fn inputs_are_read_before_outputs_are_written() {
    // In-place and overlapping operands: d = a shifted by one element.
    let m = mem();
    put(&m, DATA, &[1.0, 2.0, 3.0, 4.0]);
    let r = run1(&m, &[Insn::Copy(at(DATA + 4), at(DATA), 3), Insn::End]);
    assert_done(&r);
    assert_eq!(f32s(&m, DATA, 4), [1.0, 1.0, 2.0, 3.0]);
}

#[test]
fn delay_spends_exactly_its_cycles() {
    let m = mem();
    let r = run1(&m, &[Insn::Delay(0x1_0000_0000), Insn::Delay(0), Insn::End]);
    assert_done(&r);
    assert_eq!(r.end_cycle, 0x1_0000_0001);
}

#[test]
fn execute_request_reads_each_engines_lo_and_hi_words() {
    // Memory above 4 GiB, so the high words matter (docs/abi.md §1.5: addr =
    // hi << 32 | lo).
    let base = 0x2_0000_0000u64;
    let m = VecMemory::new(base, 0x1000);
    store_block(&m, base + 0x100, &[Insn::Nop, Insn::End]);
    store_block(&m, base + 0x200, &[Insn::End]);
    let mut req = DeviceExecRequest::default();
    req.set_engine_address(Engine::Act, base + 0x100);
    req.set_engine_address(Engine::Sp, base + 0x200);
    assert_eq!(req.eng_addresses_hi[Engine::Act.index()], 2);
    let r = execute_request(&m, &req, 10);
    assert_done(&r);
    assert_eq!(ended(r.engine(Engine::Act)), (Done, None));
    assert_eq!(r.engine(Engine::Act).end_cycle, 12);
    assert_eq!(r.engine(Engine::Sp).end_cycle, 11);
    for e in [Engine::Pe, Engine::Pool, Engine::Dve] {
        assert_eq!(ended(r.engine(e)), (Idle, None));
    }
    // The same with the high word lost: the block is not there.
    req.eng_addresses_hi[Engine::Act.index()] = 0;
    let r = execute_request(&m, &req, 10);
    assert_eq!(r.first_error, Some((Engine::Act, ErrorClass::Hw)));
}

// ------------------------------------------------------------- wait/signal

#[test]
fn wait_completes_one_cycle_after_the_signal_that_satisfies_it() {
    let m = mem();
    let r = run_on(
        &m,
        &[
            // PE: WAIT issued at 0, blocked until ACT's SIGNAL ends at 101.
            &[Insn::Wait(0, 1), Insn::End],
            // ACT: DELAY 0..100, SIGNAL 100..101, END 101..102.
            &[Insn::Delay(100), Insn::Signal(0, 1), Insn::End],
        ],
        0,
    );
    assert_done(&r);
    assert_eq!(r.engines[0].end_cycle, 103); // WAIT 101..102, END 102..103
    assert_eq!(r.engines[1].end_cycle, 102);
    assert_eq!(r.end_cycle, 103);
}

#[test]
fn a_satisfied_wait_does_not_block_but_waits_for_the_signal_time() {
    let m = mem();
    let r = run_on(
        &m,
        &[
            // PE reaches its WAIT at 50; the SIGNAL already ended at 2.
            &[Insn::Delay(50), Insn::Wait(1, 2), Insn::End],
            &[Insn::Nop, Insn::Signal(1, 2), Insn::End],
        ],
        0,
    );
    assert_done(&r);
    assert_eq!(r.engines[0].end_cycle, 52);
}

#[test]
fn counting_semaphores_are_consumed_by_waits() {
    // Two waiters of 1 each on one SIGNAL of 2: both pass; a third WAIT
    // deadlocks.
    let m = mem();
    let r = run_on(
        &m,
        &[
            &[Insn::Wait(2, 1), Insn::End],
            &[Insn::Wait(2, 1), Insn::End],
            &[Insn::Delay(10), Insn::Wait(2, 1), Insn::End],
            &[Insn::Signal(2, 2), Insn::End],
        ],
        0,
    );
    assert_eq!(ended(&r.engines[0]), (Done, None));
    assert_eq!(ended(&r.engines[1]), (Done, None));
    assert_eq!(ended(&r.engines[3]), (Done, None));
    assert_eq!(ended(&r.engines[2]), (Faulted, Some(ErrorClass::Runtime)));
    assert!(matches!(
        r.engines[2].fault,
        Some(EngineFault {
            kind: FaultKind::Deadlock {
                sem: 2,
                value: 1,
                have: 0,
            },
            ..
        })
    ));
}

// ------------------------------------------------------------------ errors

fn only_error(r: &ExecReport, engine: usize) -> EngineFault {
    let e = r.engines[engine];
    let f = e.fault.expect("a fault");
    assert_eq!(ended(&e), (Faulted, Some(f.class())));
    assert_eq!(r.first_error, Some((Engine::ALL[engine], f.class())));
    f
}

#[test]
fn raise_reports_each_class() {
    for class in ErrorClass::ALL {
        let m = mem();
        let r = run1(&m, &[Insn::Nop, Insn::Raise(class), Insn::End]);
        let f = only_error(&r, 0);
        assert_eq!(
            f,
            EngineFault {
                pc: code_at(0) + INSN_BYTES as u64,
                kind: FaultKind::Raised(class)
            }
        );
        assert_eq!(r.error(), Some(class));
        // NOP 1 + the faulting instruction 1; END never ran.
        assert_eq!((r.engines[0].end_cycle, r.engines[0].steps), (2, 2));
    }
}

#[test]
fn a_memory_fault_is_hw_and_writes_nothing() {
    let m = mem();
    put(&m, DATA, &[7.0; 4]);
    let end = BASE + MEM_BYTES as u64;
    let r = run1(
        &m,
        &[
            // Destination runs 4 bytes past the end of memory.
            Insn::Copy(at(end - 12), at(DATA), 4),
            Insn::End,
        ],
    );
    let f = only_error(&r, 0);
    assert_eq!(
        f,
        EngineFault {
            pc: code_at(0),
            kind: FaultKind::Memory(MemFault { pa: end })
        }
    );
    assert_eq!(f.class(), ErrorClass::Hw);
    assert_eq!(f32s(&m, end - 12, 3), [0.0; 3]);
}

#[test]
fn block_addresses_outside_memory_or_misaligned_are_hw() {
    let m = mem();
    let r = execute_blocks(&m, [0x10, BASE + 2, u64::MAX - 3, 0, 0], 0);
    assert!(matches!(
        r.engines[0].fault,
        Some(EngineFault {
            kind: FaultKind::Memory(MemFault { pa: 0x10 }),
            ..
        })
    ));
    assert!(matches!(
        r.engines[1].fault,
        Some(EngineFault {
            kind: FaultKind::Misaligned { .. },
            ..
        })
    ));
    assert!(matches!(
        r.engines[2].fault,
        Some(EngineFault {
            kind: FaultKind::Memory(_) | FaultKind::AddressOverflow,
            ..
        })
    ));
    for e in &r.engines[..3] {
        assert_eq!(ended(e), (Faulted, Some(ErrorClass::Hw)));
    }
    assert_eq!(r.first_error, Some((Engine::Pe, ErrorClass::Hw)));
}

#[test]
fn misaligned_and_overflowing_operands_are_hw() {
    let m = mem();
    let r = run1(&m, &[Insn::Copy(at(DATA + 2), at(DATA), 1), Insn::End]);
    assert_eq!(
        only_error(&r, 0),
        EngineFault {
            pc: code_at(0),
            kind: FaultKind::Misaligned { pa: DATA + 2 }
        }
    );
    let r = run1(
        &m,
        &[
            Insn::SetBase(Base::R1, u64::MAX - 7),
            Insn::Fill(Operand::new(Base::R1, 0), 4, 0),
            Insn::End,
        ],
    );
    assert!(matches!(
        only_error(&r, 0),
        EngineFault {
            kind: FaultKind::AddressOverflow,
            ..
        }
    ));
}

#[test]
fn a_bad_opcode_is_a_model_error() {
    let m = mem();
    store_block(&m, code_at(0), &[Insn::Nop]);
    // The second slot is left zeroed: opcode 0x00.
    let r = execute_blocks(&m, [code_at(0), 0, 0, 0, 0], 0);
    let f = only_error(&r, 0);
    assert_eq!(
        f,
        EngineFault {
            pc: code_at(0) + INSN_BYTES as u64,
            kind: FaultKind::Decode(DecodeError::BadOpcode { opcode: 0 })
        }
    );
    assert_eq!(f.class(), ErrorClass::Model);
}

#[test]
fn a_deadlocked_wait_is_a_runtime_error_not_a_hang() {
    let m = mem();
    // PE and ACT each wait for the other's signal first.
    let r = run_on(
        &m,
        &[
            &[Insn::Wait(0, 1), Insn::Signal(1, 1), Insn::End],
            &[Insn::Wait(1, 1), Insn::Signal(0, 1), Insn::End],
        ],
        0,
    );
    for (i, sem) in [(0usize, 0u8), (1, 1)] {
        assert_eq!(ended(&r.engines[i]), (Faulted, Some(ErrorClass::Runtime)));
        assert_eq!(
            r.engines[i].fault,
            Some(EngineFault {
                pc: code_at(i),
                kind: FaultKind::Deadlock {
                    sem,
                    value: 1,
                    have: 0
                }
            })
        );
    }
    assert_eq!(r.first_error, Some((Engine::Pe, ErrorClass::Runtime)));
}

#[test]
fn the_root_cause_comes_first_when_a_fault_starves_a_waiter() {
    let m = mem();
    let r = run_on(
        &m,
        &[
            &[Insn::Wait(0, 1), Insn::End],
            &[
                Insn::Delay(10),
                Insn::Raise(ErrorClass::Transient),
                Insn::Signal(0, 1),
                Insn::End,
            ],
        ],
        0,
    );
    assert_eq!(ended(&r.engines[0]), (Faulted, Some(ErrorClass::Runtime)));
    assert_eq!(ended(&r.engines[1]), (Faulted, Some(ErrorClass::Transient)));
    assert_eq!(r.first_error, Some((Engine::Act, ErrorClass::Transient)));
}

#[test]
fn a_non_finite_result_under_chk_is_numerical_and_writes_nothing() {
    let m = mem();
    put(&m, DATA, &[1.0, f32::MAX, 3.0]);
    let mul = |check, dst| Insn::Affine(at(dst), at(DATA), 3, 4.0f32.to_bits(), 0, check);
    // Without .chk the Inf is stored.
    let r = run1(&m, &[mul(false, DATA + 0x40), Insn::End]);
    assert_done(&r);
    assert_eq!(f32s(&m, DATA + 0x40, 3), [4.0, f32::INFINITY, 12.0]);
    // With .chk: Numerical, nothing written.
    let r = run1(&m, &[mul(true, DATA + 0x80), Insn::End]);
    assert_eq!(
        only_error(&r, 0),
        EngineFault {
            pc: code_at(0),
            kind: FaultKind::NonFinite { index: 1 }
        }
    );
    assert_eq!(f32s(&m, DATA + 0x80, 3), [0.0; 3]);
    // A checked MATMUL that faults counts no MACs.
    let r = run1(
        &m,
        &[
            Insn::MatMul(at(DATA + 0xc0), at(DATA), at(DATA), 1, 3, 1, false, true),
            Insn::End,
        ],
    );
    assert_eq!(r.error(), Some(ErrorClass::Numerical));
    assert_eq!(r.macs, 0);
}

#[test]
fn semaphore_overflow_is_a_runtime_error() {
    let m = mem();
    let r = run1(
        &m,
        &[Insn::Signal(4, u32::MAX), Insn::Signal(4, 1), Insn::End],
    );
    assert!(matches!(
        only_error(&r, 0),
        EngineFault {
            kind: FaultKind::SemaphoreOverflow { sem: 4 },
            ..
        }
    ));
}

#[test]
fn step_and_cycle_budgets_end_the_execution() {
    let m = mem();
    let mut block = vec![Insn::Nop; 10];
    block.push(Insn::End);
    store_block(&m, code_at(0), &block);
    let limits = Limits {
        max_steps: 5,
        ..Limits::DEFAULT
    };
    let r = Executor::new(limits).run(&m, [code_at(0), 0, 0, 0, 0], 0);
    let f = only_error(&r, 0);
    assert_eq!(
        f,
        EngineFault {
            pc: code_at(0) + 5 * INSN_BYTES as u64,
            kind: FaultKind::StepBudget
        }
    );
    assert_eq!(r.engines[0].steps, 5);

    let r = run1(
        &m,
        &[Insn::Delay(Limits::DEFAULT.max_cycles + 1), Insn::End],
    );
    assert_eq!(
        only_error(&r, 0),
        EngineFault {
            pc: code_at(0),
            kind: FaultKind::CycleBudget
        }
    );

    // Work: a 64x64x64 MATMUL (8 + 262144) against a budget of 100000;
    // a long DELAY costs no work.
    let mm = Insn::MatMul(at(DATA), at(DATA), at(DATA), 64, 64, 64, false, false);
    let limits = Limits {
        max_work: 100_000,
        ..Limits::DEFAULT
    };
    store_block(&m, code_at(0), &[Insn::Delay(1 << 30), mm, Insn::End]);
    let r = Executor::new(limits).run(&m, [code_at(0), 0, 0, 0, 0], 0);
    assert_eq!(
        only_error(&r, 0),
        EngineFault {
            pc: code_at(0) + INSN_BYTES as u64,
            kind: FaultKind::WorkBudget
        }
    );
    assert_eq!(r.macs, 0);
}

#[test]
fn the_trace_records_each_instruction_with_its_cycles() {
    let m = mem();
    let blocks: [&[Insn]; 2] = [
        &[Insn::Wait(0, 1), Insn::End],
        &[Insn::Signal(0, 1), Insn::End],
    ];
    for (e, b) in blocks.iter().enumerate() {
        store_block(&m, code_at(e), b);
    }
    let mut ex = Executor::default().with_trace();
    let r = ex.run(&m, [code_at(0), code_at(1), 0, 0, 0], 0);
    assert_done(&r);
    let t: Vec<String> = ex.take_trace().iter().map(|l| l.to_string()).collect();
    insta::assert_snapshot!(t.join("\n"), @r"
           0 PE   0x010000  WAIT s0, 1  (blocked)
           0 ACT  0x011000  SIGNAL s0, 1  -> 1
           0 PE   0x010000  WAIT s0, 1  -> 2
           1 ACT  0x011020  END  -> 2
           2 PE   0x010020  END  -> 3
    ");
}

/// A block is decoded once and kept, but what runs is what memory holds
/// when each instruction issues: a block rewritten between executions runs
/// its new words, and one an engine writes into during the execution runs
/// what was written from there on, on a reused executor as on a fresh one.
#[test]
fn rewritten_code_runs_as_written() {
    let m = mem();
    let raise = Insn::Raise(ErrorClass::Transient);
    put_words(&m, DATA, &raise.encode());
    // PE waits for ACT, which overwrites PE's NOP with the RAISE first.
    let pe = [Insn::Wait(0, 1), Insn::Nop, Insn::End];
    let act = [
        Insn::Copy(
            at(code_at(0) + INSN_BYTES as u64),
            at(DATA),
            INSN_WORDS as u32,
        ),
        Insn::Signal(0, 1),
        Insn::End,
    ];
    let mut reused = Executor::default();
    for _ in 0..3 {
        for ex in [&mut reused, &mut Executor::default()] {
            store_block(&m, code_at(0), &pe);
            store_block(&m, code_at(1), &act);
            let r = ex.run(&m, [code_at(0), code_at(1), 0, 0, 0], 0);
            assert_eq!(
                only_error(&r, 0),
                EngineFault {
                    pc: code_at(0) + INSN_BYTES as u64,
                    kind: FaultKind::Raised(ErrorClass::Transient)
                }
            );
            // The same block unchanged in memory completes.
            store_block(&m, code_at(0), &[Insn::Nop, Insn::End]);
            assert_done(&ex.run(&m, [code_at(0), 0, 0, 0, 0], 0));
            // Rewritten between executions: its new words run.
            store_block(&m, code_at(0), &[raise]);
            let r = ex.run(&m, [code_at(0), 0, 0, 0, 0], 0);
            assert!(matches!(only_error(&r, 0).kind, FaultKind::Raised(_)));
            store_block(&m, code_at(0), &[Insn::Nop, Insn::Nop, Insn::End]);
            let r = ex.run(&m, [code_at(0), 0, 0, 0, 0], 0);
            assert_done(&r);
            assert_eq!(r.engines[0].steps, 3);
        }
    }
}

fn put_words(m: &VecMemory, pa: u64, words: &[u32]) {
    for (i, w) in words.iter().enumerate() {
        m.write_u32(pa + 4 * i as u64, *w).unwrap();
    }
}

// ---------------------------------------------------------- property tests

/// A random valid instruction whose operands mostly land in `[lo, hi)`.
/// `friendly` ones always do, never wait, raise or check, and leave `R0`
/// alone, so whole blocks complete often.
fn random_insn(g: &mut SplitMix64, lo: u64, hi: u64, friendly: bool) -> Insn {
    let span = hi - lo;
    let operand = |g: &mut SplitMix64| {
        let pa = if friendly {
            lo + g.below(span - 160) / 4 * 4
        } else if g.chance(1, 16) {
            g.next_u32() as u64
        } else {
            lo + g.below(span) / 4 * 4 + if g.chance(1, 64) { 2 } else { 0 }
        };
        Operand::new(Base::R0, pa as u32)
    };
    let size = |g: &mut SplitMix64| {
        let max = if g.chance(1, 32) && !friendly {
            4096
        } else {
            12
        };
        1 + g.below(max) as u32
    };
    let check = g.chance(1, 2) && !friendly;
    let pick = if friendly {
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14][g.below(11) as usize]
    } else {
        g.below(16)
    };
    match pick {
        0 => Insn::End,
        1 => Insn::Nop,
        2 => Insn::SetBase(
            Base::ALL[(g.below(4) as usize).max(usize::from(friendly))],
            if g.chance(1, 2) { 0 } else { g.next_u64() },
        ),
        3 => Insn::Copy(operand(g), operand(g), size(g)),
        4 => Insn::Fill(operand(g), size(g), g.next_u32()),
        5 | 6 => {
            let n = size(g);
            let b_len = if g.chance(1, 2) { 0 } else { 1 };
            Insn::Binary(
                [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Max][g.below(4) as usize],
                operand(g),
                operand(g),
                operand(g),
                n,
                b_len,
                check,
            )
        }
        7 => Insn::Affine(
            operand(g),
            operand(g),
            size(g),
            g.next_u32(),
            g.next_u32(),
            check,
        ),
        8 => Insn::MatMul(
            operand(g),
            operand(g),
            operand(g),
            1 + g.below(6) as u32,
            1 + g.below(6) as u32,
            1 + g.below(6) as u32,
            g.chance(1, 2),
            check,
        ),
        9 => Insn::Act(
            ActFn::ALL[g.below(4) as usize],
            operand(g),
            operand(g),
            size(g),
            check,
        ),
        10 => Insn::Reduce(
            if g.chance(1, 2) {
                ReduceOp::Sum
            } else {
                ReduceOp::Max
            },
            operand(g),
            operand(g),
            1 + g.below(4) as u32,
            1 + g.below(6) as u32,
            check,
        ),
        11 | 12 => Insn::Wait(g.below(3) as u8, g.below(3) as u32),
        13 => Insn::Signal(
            g.below(3) as u8,
            if g.chance(1, 64) {
                u32::MAX
            } else {
                g.below(3) as u32
            },
        ),
        14 => Insn::Delay(if g.chance(1, 16) && !friendly {
            g.next_u64()
        } else {
            g.below(100)
        }),
        _ => Insn::Raise(ErrorClass::ALL[g.below(6) as usize]),
    }
}

/// Eight words: a valid encoding, a mutated one, or noise.
fn random_words(g: &mut SplitMix64, lo: u64, hi: u64, friendly: bool) -> [u32; INSN_WORDS] {
    let mut w = random_insn(g, lo, hi, friendly).encode();
    if friendly {
        return w;
    }
    match g.below(8) {
        0 => {
            for x in &mut w {
                *x = g.next_u32();
            }
        }
        1 => {
            let bit = g.below(256);
            w[(bit / 32) as usize] ^= 1 << (bit % 32);
        }
        _ => {}
    }
    w
}

#[test]
fn random_words_decode_to_typed_results_and_valid_ones_round_trip() {
    let mut g = SplitMix64::new(0xDEC0DE);
    let (mut ok, mut err) = (0u32, 0u32);
    for _ in 0..200_000 {
        let w = random_words(&mut g, 0, 0x1000, false);
        match Insn::decode(&w) {
            Ok(i) => {
                ok += 1;
                assert_eq!(i.encode(), w, "{i}");
                assert_eq!(i.validate(), Ok(()));
            }
            Err(e) => {
                err += 1;
                // Typed and printable.
                assert!(!e.to_string().is_empty());
            }
        }
    }
    // Both paths are exercised in earnest.
    assert!(ok > 100_000 && err > 20_000, "ok {ok} err {err}");
}

/// Property memory: 2 KiB at 0x4000; code in the first half (five 6-slot
/// blocks), data in the second.
const P_BASE: u64 = 0x4000;
const P_BYTES: usize = 0x800;
const P_SLOTS: usize = 6;

#[test]
fn random_blocks_never_panic_never_hang_and_fail_with_typed_errors() {
    let m = VecMemory::new(P_BASE, P_BYTES);
    let data_lo = P_BASE + 0x400;
    let data_hi = P_BASE + P_BYTES as u64;
    let mut g = SplitMix64::new(0x5EED_B10C);
    let mut image = vec![0u32; P_BYTES / 4];
    let mut seen = [0u32; 6];
    let mut done = 0u32;
    let mut reused = Executor::new(Limits::DEFAULT);
    const RUNS: u32 = 100_000;
    for run in 0..RUNS {
        // Code: five blocks of up to P_SLOTS instructions, mostly ending in
        // END; one run in four is friendly.
        let friendly = run % 4 == 0;
        for e in 0..NUM_ENGINES {
            let len = 1 + g.below(P_SLOTS as u64) as usize;
            for s in 0..P_SLOTS {
                let w = if s + 1 == len && (friendly || g.chance(7, 8)) {
                    Insn::End.encode()
                } else if s < len {
                    random_words(&mut g, data_lo, data_hi, friendly)
                } else {
                    [g.next_u32(); INSN_WORDS]
                };
                let at = (e * P_SLOTS + s) * INSN_WORDS;
                image[at..at + INSN_WORDS].copy_from_slice(&w);
            }
        }
        // Data: small floats, specials, or raw bits.
        for x in &mut image[0x100..] {
            *x = match g.below(8) {
                0 => g.next_u32(),
                1 => [f32::NAN, f32::INFINITY, -0.0, f32::MAX][g.below(4) as usize].to_bits(),
                _ => ((g.below(2001) as f32 - 1000.0) / 100.0).to_bits(),
            };
        }
        for (i, w) in image.iter().enumerate() {
            m.write_u32(P_BASE + 4 * i as u64, *w).unwrap();
        }
        let addrs: [u64; NUM_ENGINES] = core::array::from_fn(|e| match g.below(16) {
            _ if friendly => P_BASE + (e * P_SLOTS * INSN_BYTES) as u64,
            0 => 0,
            1 => g.next_u64(),
            2 => P_BASE + g.below(P_BYTES as u64),
            _ => P_BASE + (e * P_SLOTS * INSN_BYTES) as u64,
        });
        let start = g.below(1 << 40);
        let limits = if g.chance(1, 8) && !friendly {
            Limits {
                max_steps: g.below(12),
                max_cycles: g.below(5000),
                max_work: g.below(200),
            }
        } else {
            Limits::DEFAULT
        };
        let traced = run % 16 == 0;
        let mut exec = Executor::new(limits);
        if traced {
            exec = exec.with_trace();
        }
        let r = exec.run(&m, addrs, start);

        // Bounded: blocks are straight-line and a woken WAIT is not issued
        // again, so an engine issues at most one instruction per slot of
        // memory (64).
        let steps: u64 = r.engines.iter().map(|e| e.steps).sum();
        assert!(steps <= limits.max_steps.min(5 * 64), "steps {steps}");
        let mut first_seen = false;
        for (i, e) in r.engines.iter().enumerate() {
            assert_eq!(e.start_cycle, start);
            assert!(e.end_cycle >= start && e.end_cycle <= r.end_cycle);
            match ended(e) {
                (Idle, None) => {
                    assert_eq!(addrs[i], 0);
                    assert_eq!((e.steps, e.end_cycle), (0, start));
                }
                (Done, None) => {}
                (Faulted, Some(class)) => {
                    seen[class as usize] += 1;
                    if r.first_error == Some((Engine::ALL[i], class)) {
                        first_seen = true;
                    }
                }
                other => panic!("engine {i}: {other:?} (an error carries its fault)"),
            }
        }
        assert_eq!(r.first_error.is_some(), first_seen, "{r:?}");
        if r.is_ok() {
            done += 1;
        }
        // The trace accounts for every MAC.
        if traced {
            let macs: u64 = exec
                .take_trace()
                .iter()
                .filter_map(|l| match &l.what {
                    TraceWhat::Done { insn, .. } => Some(insn.macs()),
                    _ => None,
                })
                .sum();
            assert_eq!(macs, r.macs);
        }
        // Deterministic: the same memory and start give the same report and
        // the same memory.
        if run % 64 == 0 {
            let after: Vec<u32> = (0..P_BYTES / 4)
                .map(|i| m.read_u32(P_BASE + 4 * i as u64).unwrap())
                .collect();
            for (i, w) in image.iter().enumerate() {
                m.write_u32(P_BASE + 4 * i as u64, *w).unwrap();
            }
            let again = Executor::new(limits).run(&m, addrs, start);
            assert_eq!(again, r);
            for (i, w) in after.iter().enumerate() {
                assert_eq!(m.read_u32(P_BASE + 4 * i as u64).unwrap(), *w);
            }
        }
        // An executor that keeps its decoded blocks across runs (the code
        // changes from run to run, and some runs write into it) gives what
        // a fresh one gives: run twice on the same image, once after the
        // code changed and once with it unchanged.
        if limits == Limits::DEFAULT && run % 2 == 1 {
            let after: Vec<u32> = (0..P_BYTES / 4)
                .map(|i| m.read_u32(P_BASE + 4 * i as u64).unwrap())
                .collect();
            for _ in 0..2 {
                for (i, w) in image.iter().enumerate() {
                    m.write_u32(P_BASE + 4 * i as u64, *w).unwrap();
                }
                assert_eq!(reused.run(&m, addrs, start), r, "run {run}");
                for (i, w) in after.iter().enumerate() {
                    assert_eq!(m.read_u32(P_BASE + 4 * i as u64).unwrap(), *w);
                }
            }
        }
    }
    eprintln!("classes {seen:?} done {done}");
    // Every class shows up, and a fair share of runs complete.
    assert!(seen.iter().all(|&n| n > 100), "classes seen {seen:?}");
    assert!(done > RUNS / 8, "done {done}");
}
