//! The model builder and the example MLP: the device output equals the CPU
//! reference bit for bit, MACs and memory usage are the spec's, timing is
//! deterministic and hand-checked, and planted faults give their class.

use std::fmt::Write as _;

use crate::support::{
    ended, engine_addresses, execute_blocks, execute_request, insn_from_bytes, load, VecMemory,
};
use xunds::device::engine::{
    read_f32s, Engine, EngineFault, EngineState, ExecReport, Executor, FaultKind, NUM_ENGINES,
};
use xunds::device::isa::{ActFn, Insn, INSN_BYTES};
use xunds::device::model::{Inject, MemUsage, MlpSpec, ModelBuilder, ModelError, ModelImage};
use xunds::wire::device_request::DeviceExecRequest;
use xunds::wire::nq::ErrorClass;
use EngineState::{Done, Faulted, Idle};

const LOAD_PA: u64 = 0x10_0000;
const IO_PA: u64 = 0x20_0000;
const MEM_BASE: u64 = 0x10_0000;
const MEM_BYTES: usize = 0x11_0000;

fn setup(spec: &MlpSpec) -> (VecMemory, ModelImage) {
    let m = VecMemory::new(MEM_BASE, MEM_BYTES);
    let img = spec.link(LOAD_PA, IO_PA).unwrap();
    load(&img, &m).unwrap();
    (m, img)
}

/// Write the input, execute the image's request, read the outputs.
fn run(m: &VecMemory, img: &ModelImage, input: &[f32], start: u64) -> (ExecReport, Vec<f32>) {
    img.write_input(m, input).unwrap();
    let req = DeviceExecRequest::with_engine_addresses(engine_addresses(img));
    let r = execute_request(m, &req, start);
    (r, img.read_output(m).unwrap())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_example_mlp_matches_the_cpu_reference_bit_for_bit() {
    let spec = MlpSpec::EXAMPLE;
    let (m, img) = setup(&spec);
    assert_eq!(img.reference(&[0.0; 64]).len(), img.output_len());
    assert_eq!(img.input_len(), 4 * 16);
    assert_eq!(img.output_len(), 4 * 8 + 4);
    for seed in 0..500 {
        let x = spec.example_input(seed);
        let (r, y) = run(&m, &img, &x, 0);
        assert!(r.is_ok(), "{r:?}");
        let want = img.reference(&x);
        assert_eq!(bits(&y), bits(&want), "input seed {seed}");
        // The image's reference is the spec's.
        assert_eq!(bits(&spec.reference(&x)), bits(&want));
        // MACs: 4 * (16*32 + 32*8) = 3072.
        assert_eq!(r.macs, 3072);
        assert_eq!(r.macs, spec.macs());
        assert_eq!(r.macs, img.macs);
    }
}

#[test]
fn every_activation_and_shape_matches_bit_for_bit() {
    for (i, act) in ActFn::ALL.into_iter().enumerate() {
        let spec = MlpSpec {
            batch: 1 + i as u32,
            input: 3 + 5 * i as u32,
            hidden: 7 + 3 * i as u32,
            output: 1 + 2 * i as u32,
            act,
            seed: 99 + i as u64,
            check: i % 2 == 0,
            inject: None,
        };
        let (m, img) = setup(&spec);
        for seed in 0..20 {
            let x = spec.example_input(seed);
            let (r, y) = run(&m, &img, &x, 7);
            assert!(r.is_ok(), "{act:?}: {r:?}");
            assert_eq!(bits(&y), bits(&img.reference(&x)), "{act:?} seed {seed}");
            assert_eq!(r.macs, spec.macs());
        }
    }
}

#[test]
fn the_hidden_layer_is_left_in_scratch() {
    // The scratch tensor h holds relu(x . W1 + b1): check it against a
    // direct computation, which also checks the tensor layout.
    let spec = MlpSpec::EXAMPLE;
    let (m, img) = setup(&spec);
    let x = spec.example_input(3);
    let (r, _) = run(&m, &img, &x, 0);
    assert!(r.is_ok());
    let h = img.scratch.iter().find(|t| t.name == "h").unwrap();
    let got = read_f32s(&m, img.tensor_pa(h), h.elems() as usize).unwrap();
    let w = spec.weights();
    for row in 0..4 {
        for j in 0..32 {
            let mut s = 0.0f32;
            for k in 0..16 {
                s += x[row * 16 + k] * w.w1[k * 32 + j];
            }
            let want = (s + w.b1[j]).max(0.0);
            assert_eq!(got[row * 32 + j].to_bits(), want.to_bits());
        }
    }
}

#[test]
fn timing_is_deterministic_hand_checked_and_shift_invariant() {
    let spec = MlpSpec::EXAMPLE;
    let (m, img) = setup(&spec);
    let x = spec.example_input(1);
    let (r, _) = run(&m, &img, &x, 0);
    // Hand-computed from the cost table (docs/abi.md §1.15):
    // every block opens with 3 SETBASE (cycles 0..3).
    // SP:   COPY 64 words 3..71, SIGNAL s0 71..72, END ..73.
    // PE:   WAIT s0 blocked at 3, done 72..73; MATMUL 4x16x32 (2048 MACs)
    //       73..2129; SIGNAL s1 ..2130; WAIT s3 blocked at 2130.
    // DVE:  WAIT s1 done 2130..2131; ADD 128 ..2263; SIGNAL s2 ..2264;
    //       WAIT s4 blocked at 2264.
    // ACT:  WAIT s2 done 2264..2265; ACT 128 ..2397; SIGNAL s3 ..2398; END ..2399.
    // PE:   WAIT s3 done 2398..2399; MATMUL 4x32x8 (1024) ..3431; SIGNAL s4
    //       ..3432; END ..3433.
    // DVE:  WAIT s4 done 3432..3433; ADD 32 ..3469; SIGNAL s5 ..3470; END ..3471.
    // POOL: WAIT s5 done 3470..3471; REDUCE 4x8 ..3507; END ..3508.
    let ends: Vec<u64> = r.engines.iter().map(|e| e.end_cycle).collect();
    assert_eq!(ends, [3433, 2399, 3508, 3471, 73]);
    assert_eq!((r.end_cycle, r.cycles()), (3508, 3508));
    let steps: Vec<u64> = r.engines.iter().map(|e| e.steps).collect();
    assert_eq!(steps, [10, 7, 6, 10, 6]);

    // Same input, same start: the same report, field for field.
    let (again, _) = run(&m, &img, &x, 0);
    assert_eq!(again, r);
    // Another input: the same timing (costs depend on shapes, not values).
    let (other, _) = run(&m, &img, &spec.example_input(2), 0);
    assert_eq!(other, r);
    // Another start: every cycle shifts by the same amount.
    let t0 = 123_456_789;
    let (shifted, _) = run(&m, &img, &x, t0);
    for (a, b) in shifted.engines.iter().zip(&r.engines) {
        assert_eq!(a.start_cycle, b.start_cycle + t0);
        assert_eq!(a.end_cycle, b.end_cycle + t0);
    }
    assert_eq!(shifted.cycles(), r.cycles());
}

#[test]
fn the_trace_of_the_example_is_pinned() {
    let spec = MlpSpec::EXAMPLE;
    let (m, img) = setup(&spec);
    img.write_input(&m, &spec.example_input(0)).unwrap();
    let mut ex = Executor::default().with_trace();
    let r = ex.run(&m, engine_addresses(&img), 0);
    assert!(r.is_ok());
    let t: Vec<String> = ex.take_trace().iter().map(|l| l.to_string()).collect();
    insta::assert_snapshot!("mlp_trace", t.join("\n"));
}

#[test]
fn layout_and_memory_usage_are_the_specs() {
    let img = MlpSpec::EXAMPLE.link(LOAD_PA, IO_PA).unwrap();
    // Code: PE 10, ACT 7, POOL 6, DVE 10, SP 6 instructions of 32 bytes,
    // each block 64-byte aligned: 320 + 256 (224) + 192 + 320 + 192.
    // Constants: w1 2048 + b1 128 + w2 1024 + b2 32 = 3232 -> 3264.
    // IO: x 256 @0, y 128 @256, m 16 @384 -> 448. Scratch: x_s 256, h 512.
    assert_eq!(
        img.mem,
        MemUsage {
            code: 1280,
            tensors: 448,
            constants: 3264,
            scratchpad: 768,
        }
    );
    assert_eq!(img.mem.as_array(), [1280, 448, 3264, 768]);
    assert_eq!(
        img.blocks,
        [Some(0), Some(320), Some(576), Some(768), Some(1088)]
    );
    assert_eq!(img.bytes.len() as u64, 1280 + 3264);
    assert_eq!(img.footprint(), 1280 + 3264 + 768);
    assert_eq!(img.mem.tensors, 448);
    let io: Vec<(&str, u64, Vec<u32>)> = img
        .inputs
        .iter()
        .chain(&img.outputs)
        .map(|t| (t.name, t.offset, t.shape.clone()))
        .collect();
    assert_eq!(
        io,
        [
            ("x", 0, vec![4, 16]),
            ("y", 256, vec![4, 8]),
            ("m", 384, vec![4])
        ]
    );
    assert_eq!(
        engine_addresses(&img),
        [
            LOAD_PA,
            LOAD_PA + 320,
            LOAD_PA + 576,
            LOAD_PA + 768,
            LOAD_PA + 1088
        ]
    );
    insta::assert_snapshot!("mlp_listing", listing(&img));
}

/// A human-readable listing of `img`: memory map, tensors and each
/// engine's disassembled block (the `mlp_listing` snapshot).
fn listing(img: &ModelImage) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "model {}: load {:#x} (+{:#x} bytes, scratch at +{:#x}), io {:#x} (+{:#x})",
        img.name,
        img.load_pa,
        img.footprint(),
        img.scratch_offset(),
        img.io_pa,
        img.mem.tensors
    );
    let m = img.mem;
    let _ = writeln!(
        s,
        "mem: code {} tensors {} constants {} scratchpad {}; macs {}",
        m.code, m.tensors, m.constants, m.scratchpad, img.macs
    );
    for (kind, ts) in [
        ("input", &img.inputs),
        ("output", &img.outputs),
        ("const", &img.constants),
        ("scratch", &img.scratch),
    ] {
        for t in ts {
            let _ = writeln!(
                s,
                "{kind:<7} {:<8} {:?} at {}+{:#x} (pa {:#x})",
                t.name,
                t.shape,
                t.section.name(),
                t.offset,
                img.tensor_pa(t)
            );
        }
    }
    for (e, off) in Engine::ALL.iter().zip(&img.blocks) {
        let Some(off) = *off else {
            let _ = writeln!(s, "{e}: idle");
            continue;
        };
        let _ = writeln!(s, "{e}: block at +{off:#x} (pa {:#x})", img.load_pa + off);
        // Disassembled until `END`, the end of the image or a word
        // that does not decode.
        let code = img.bytes.get(off as usize..).unwrap_or(&[]);
        for (j, chunk) in code.chunks_exact(INSN_BYTES).enumerate() {
            match insn_from_bytes(chunk) {
                Ok(insn) => {
                    let _ = writeln!(s, "  +{:#06x}  {insn}", off as usize + j * INSN_BYTES);
                    if insn == Insn::End {
                        break;
                    }
                }
                Err(e) => {
                    let _ = writeln!(s, "  <{e:?}>");
                    break;
                }
            }
        }
    }
    s
}

#[test]
fn linking_elsewhere_moves_only_the_prologues() {
    let spec = MlpSpec::EXAMPLE;
    let a = spec.link(LOAD_PA, IO_PA).unwrap();
    let b = spec.link(LOAD_PA + 0x4_0000, IO_PA + 0x40).unwrap();
    let diff: Vec<usize> = a
        .bytes
        .iter()
        .zip(&b.bytes)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, _)| i)
        .collect();
    // Only SETBASE value words (p1/p2 of the first three slots of a block).
    for i in diff {
        let block = a.blocks.iter().flatten().rev().find(|&&o| o as usize <= i);
        let rel = i - *block.unwrap() as usize;
        assert!(rel < 96 && (20..28).contains(&(rel % 32)), "byte {i}");
    }
    // And it runs there.
    let m = VecMemory::new(MEM_BASE, MEM_BYTES);
    load(&b, &m).unwrap();
    let x = spec.example_input(5);
    let (r, y) = run(&m, &b, &x, 0);
    assert!(r.is_ok());
    assert_eq!(bits(&y), bits(&b.reference(&x)));
}

#[test]
fn a_raise_of_each_class_on_each_engine_is_the_root_cause() {
    for engine in Engine::ALL {
        for class in ErrorClass::ALL {
            let spec = MlpSpec {
                inject: Some(Inject::Raise { engine, class }),
                ..MlpSpec::EXAMPLE
            };
            let (m, img) = setup(&spec);
            let (r, _) = run(&m, &img, &spec.example_input(0), 0);
            assert_eq!(r.first_error, Some((engine, class)), "{engine} {class:?}");
            assert_eq!(ended(r.engine(engine)), (Faulted, Some(class)));
            // Everyone downstream starves: Runtime (deadlock), never a hang.
            for (i, e) in r.engines.iter().enumerate() {
                if i != engine.index() {
                    assert!(
                        matches!(
                            ended(e),
                            (Done, None) | (Faulted, Some(ErrorClass::Runtime))
                        ),
                        "{i}: {:?}",
                        e.state
                    );
                }
            }
        }
    }
}

#[test]
fn a_delay_moves_the_timing_but_not_the_outputs() {
    let x = MlpSpec::EXAMPLE.example_input(4);
    let (m0, img0) = setup(&MlpSpec::EXAMPLE);
    let (base, y0) = run(&m0, &img0, &x, 0);
    for engine in Engine::ALL {
        let spec = MlpSpec {
            inject: Some(Inject::Delay {
                engine,
                cycles: 1_000_000,
            }),
            ..MlpSpec::EXAMPLE
        };
        let (m, img) = setup(&spec);
        let (r, y) = run(&m, &img, &x, 0);
        assert!(r.is_ok());
        assert_eq!(bits(&y), bits(&y0));
        assert_eq!(r.macs, base.macs);
        // The delay overlaps the engine's own waiting, so it moves the end
        // by at most its length.
        assert!(r.engine(engine).end_cycle > 1_000_000);
        assert!(r.end_cycle > 1_000_000 && r.end_cycle <= base.end_cycle + 1_000_000);
    }
    // On SP, the head of the chain, the delay shifts the end exactly.
    let spec = MlpSpec {
        inject: Some(Inject::Delay {
            engine: Engine::Sp,
            cycles: 5000,
        }),
        ..MlpSpec::EXAMPLE
    };
    let (m, img) = setup(&spec);
    let (r, _) = run(&m, &img, &x, 0);
    assert_eq!(r.end_cycle, base.end_cycle + 5000);
}

#[test]
fn a_non_finite_input_is_a_numerical_error() {
    let spec = MlpSpec::EXAMPLE;
    let (m, img) = setup(&spec);
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut x = spec.example_input(0);
        x[17] = bad;
        let (r, _) = run(&m, &img, &x, 0);
        assert_eq!(r.first_error, Some((Engine::Pe, ErrorClass::Numerical)));
        assert!(matches!(
            r.engine(Engine::Pe).fault,
            Some(EngineFault {
                kind: FaultKind::NonFinite { .. },
                ..
            })
        ));
        // The first MATMUL faulted before counting.
        assert_eq!(r.macs, 0);
    }
    // Without .chk the NaN flows through to the outputs.
    let spec = MlpSpec {
        check: false,
        ..MlpSpec::EXAMPLE
    };
    let (m, img) = setup(&spec);
    let mut x = spec.example_input(0);
    x[0] = f32::NAN;
    let (r, y) = run(&m, &img, &x, 0);
    assert!(r.is_ok());
    assert!(y[0].is_nan());
}

#[test]
fn a_model_loaded_outside_device_memory_faults_as_hw() {
    // The image linked for an address the device does not have: fetch fails.
    let img = MlpSpec::EXAMPLE.link(0x4000_0000, IO_PA).unwrap();
    let m = VecMemory::new(MEM_BASE, MEM_BYTES);
    let r = execute_blocks(&m, engine_addresses(&img), 0);
    for e in &r.engines {
        assert_eq!(ended(e), (Faulted, Some(ErrorClass::Hw)));
    }
    // Loaded in memory but with its IO area outside: operand faults.
    let img = MlpSpec::EXAMPLE.link(LOAD_PA, 0x4000_0000).unwrap();
    load(&img, &m).unwrap();
    let r = execute_blocks(&m, engine_addresses(&img), 0);
    assert_eq!(r.first_error, Some((Engine::Sp, ErrorClass::Hw)));
}

#[test]
fn builder_refuses_bad_input() {
    assert_eq!(
        MlpSpec::EXAMPLE.link(LOAD_PA + 4, IO_PA).unwrap_err(),
        ModelError::Misaligned {
            what: "load_pa",
            pa: LOAD_PA + 4
        }
    );
    assert!(matches!(
        MlpSpec {
            hidden: 0,
            ..MlpSpec::EXAMPLE
        }
        .link(LOAD_PA, IO_PA),
        Err(ModelError::BadShape { what: "hidden", .. })
    ));
    assert!(matches!(
        MlpSpec::EXAMPLE.link(u64::MAX - 63, IO_PA),
        Err(ModelError::TooLarge { .. })
    ));
    let mut b = ModelBuilder::new("t");
    assert!(matches!(
        b.push(Engine::Pe, Insn::Wait(16, 1)),
        Err(ModelError::BadInsn {
            engine: Engine::Pe,
            index: 0,
            ..
        })
    ));
    let (m, img) = setup(&MlpSpec::EXAMPLE);
    assert_eq!(
        img.write_input(&m, &[1.0; 3]),
        Err(ModelError::InputLength { need: 64, got: 3 })
    );
    // A shape whose byte size overflows u64 (unchecked, it would overflow
    // the section arithmetic: a panic in debug builds) is a TooLarge section.
    let mut b = ModelBuilder::new("huge");
    b.input("x", &[u32::MAX, u32::MAX, u32::MAX]);
    b.scratch("s", &[u32::MAX, u32::MAX, 2]);
    assert!(matches!(
        b.link(LOAD_PA, IO_PA),
        Err(ModelError::TooLarge { .. })
    ));
    // A constant whose element count wraps u64 (or is merely past 4 GiB)
    // is a TooLarge section too: its bytes are never made (the count
    // panicked in debug builds and wrapped to a small, overlapping tensor
    // in release; 2^40 elements tried to allocate 4 TiB).
    for shape in [&[1u32 << 16; 4][..], &[1 << 20, 1 << 20][..]] {
        let mut b = ModelBuilder::new("huge constant");
        let t = b.constant("w", shape, &[]);
        assert!(t.elems() >= 1 << 40, "{shape:?}");
        let small = b.constant("b", &[4], &[1.0; 4]);
        assert!(small.offset > 0, "placed after the huge one, not on it");
        assert!(matches!(
            b.link(LOAD_PA, IO_PA),
            Err(ModelError::TooLarge { what: "constants" })
        ));
    }
    // Address 0 reads as "no block" in a request: refused.
    assert_eq!(
        MlpSpec::EXAMPLE.link(0, IO_PA).unwrap_err(),
        ModelError::ZeroLoad
    );
}

#[test]
fn a_custom_builder_model_runs_and_idles_unused_engines() {
    let mut b = ModelBuilder::new("scale");
    let x = b.input("x", &[4]);
    let y = b.output("y", &[4]);
    b.push(
        Engine::Dve,
        Insn::Affine(
            y.operand(),
            x.operand(),
            4,
            3.0f32.to_bits(),
            1.0f32.to_bits(),
            true,
        ),
    )
    .unwrap();
    b.reference(|x| x.iter().map(|v| v * 3.0 + 1.0).collect());
    let img = b.link(LOAD_PA, IO_PA).unwrap();
    assert_eq!(img.blocks, [None, None, None, Some(0), None]);
    assert_eq!(img.macs, 0);
    let m = VecMemory::new(MEM_BASE, MEM_BYTES);
    load(&img, &m).unwrap();
    let (r, y) = run(&m, &img, &[1.0, 2.0, -1.0, 0.5], 0);
    assert!(r.is_ok());
    assert_eq!(y, [4.0, 7.0, -2.0, 2.5]);
    assert_eq!(y, img.reference(&[1.0, 2.0, -1.0, 0.5]));
    assert_eq!(ended(r.engine(Engine::Pe)), (Idle, None));
    // No reference: an empty vector.
    let img = ModelBuilder::new("empty").link(LOAD_PA, IO_PA).unwrap();
    assert!(img.reference(&[1.0]).is_empty());
    assert_eq!(engine_addresses(&img), [0; NUM_ENGINES]);
}
