//! The engine interpreter's f32 matmul against a plain Rust loop over the
//! same shapes (target <= 1.5x of its time, docs/perf.md).
//!
//! Ours: one `engine::Executor::run` of a PE block holding the example MLP's
//! two matmuls (batch 4: 4x16 . 16x32, then 4x32 . 32x8; 3,072 MACs) and
//! `END`, on heap device memory ([`VecMemory`]): the check of the block's
//! words against the decoded copy the executor keeps, operand range checks,
//! word reads, the matmul, the result writes.
//! Peer: the same two products as the CPU reference writes them (row by
//! row, each sum over `k` ascending, plain slices). Both sum in the same
//! order, and the bench checks that they agree bit for bit.
//!
//! `XUNDS_ENGINE_N` sets the executions (default 200 000).

use std::hint::black_box;
use std::time::Duration;

use crate::device_support::VecMemory;
use xunds::device::engine::{DeviceMemory, Executor, Limits};
use xunds::device::isa::{Base, Insn, Operand, INSN_BYTES};

use crate::harness::{best_of, env_or, time};

const BATCH: usize = 4;
const SHAPES: [(usize, usize, usize); 2] = [(BATCH, 16, 32), (BATCH, 32, 8)];
const BASE: u64 = 0x1000;

fn n() -> u64 {
    env_or("XUNDS_ENGINE_N", 200_000)
}

fn macs() -> u64 {
    SHAPES.iter().map(|&(m, k, n)| (m * k * n) as u64).sum()
}

/// Deterministic operand values (small, exact in f32).
fn vals(len: usize, salt: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7 + salt * 13) % 17) as f32 * 0.25 - 2.0)
        .collect()
}

/// The plain loop: `out = a . b`, each sum from 0.0 over `k` ascending.
/// Out of line, so its code does not depend on what the caller inlines.
#[inline(never)]
fn plain(out: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0f32;
            for kk in 0..k {
                s += a[i * k + kk] * b[kk * n + j];
            }
            out[i * n + j] = s;
        }
    }
}

/// Engine matmul vs the plain loop, per MAC.
pub fn engine() {
    let n = n();
    let macs = macs();
    println!("  {n} executions of 4x16.16x32 + 4x32.32x8 ({macs} MACs each)");
    // Layout: code, then for each product a, b, out (64-byte aligned).
    let code_len = (SHAPES.len() + 1) * INSN_BYTES;
    let mut at = BASE + code_len.next_multiple_of(64) as u64;
    let mem = VecMemory::new(BASE, 64 * 1024);
    let mut insns = Vec::new();
    let mut operands = Vec::new();
    for (s, &(m, k, nn)) in SHAPES.iter().enumerate() {
        let (a, b) = (vals(m * k, s), vals(k * nn, s + 5));
        let pa = at;
        let pb = pa + (a.len() * 4).next_multiple_of(64) as u64;
        let pd = pb + (b.len() * 4).next_multiple_of(64) as u64;
        at = pd + (m * nn * 4).next_multiple_of(64) as u64;
        xunds::device::engine::write_f32s(&mem, pa, &a).unwrap();
        xunds::device::engine::write_f32s(&mem, pb, &b).unwrap();
        insns.push(Insn::MatMul(
            Operand::new(Base::R0, pd as u32),
            Operand::new(Base::R0, pa as u32),
            Operand::new(Base::R0, pb as u32),
            m as u32,
            k as u32,
            nn as u32,
            false,
            false,
        ));
        operands.push((a, b, pd, m, k, nn));
    }
    insns.push(Insn::End);
    for (i, insn) in insns.iter().enumerate() {
        for (w, word) in insn.encode().iter().enumerate() {
            mem.write_u32(BASE + (i * INSN_BYTES + w * 4) as u64, *word)
                .unwrap();
        }
    }
    let mut ex = Executor::new(Limits::DEFAULT);
    let blocks = [BASE, 0, 0, 0, 0];
    let reps = crate::harness::cpus().max(3);
    let ours = best_of(reps, || {
        time(|| {
            for _ in 0..n {
                let r = ex.run(&mem, black_box(blocks), 0);
                black_box(&r);
            }
        })
    });
    let r = ex.run(&mem, blocks, 0);
    assert!(r.is_ok(), "{r:?}");
    let mut outs: Vec<Vec<f32>> = operands
        .iter()
        .map(|&(_, _, _, m, _, nn)| vec![0.0; m * nn])
        .collect();
    let peer = best_of(reps, || {
        time(|| {
            for _ in 0..n {
                for ((a, b, _, m, k, nn), out) in operands.iter().zip(outs.iter_mut()) {
                    plain(out, black_box(a), black_box(b), *m, *k, *nn);
                }
                black_box(&outs);
            }
        })
    });
    for ((_, _, pd, _, _, _), out) in operands.iter().zip(&outs) {
        let dev = xunds::device::engine::read_f32s(&mem, *pd, out.len()).unwrap();
        let same = dev.iter().zip(out).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "engine and plain loop differ");
    }
    let per_mac = |d: Duration| d.as_nanos() as f64 / (n * macs) as f64;
    println!(
        "  {:<44} {:>9.3} ns/MAC {:>9.2} us/exec",
        "engine (Executor::run, block check+io)",
        per_mac(ours),
        ours.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "  {:<44} {:>9.3} ns/MAC {:>9.2} us/exec",
        "plain Rust loop, same shapes and order",
        per_mac(peer),
        peer.as_secs_f64() * 1e6 / n as f64
    );
    let r = ours.as_secs_f64() / peer.as_secs_f64();
    println!(
        "  RATIO {:<40} {r:>6.2}x  (target <= 1.5x of the plain loop)",
        "engine matmul vs plain loop (time)"
    );
}
