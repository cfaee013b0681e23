//! `device_exec_request_t` (docs/abi.md §1.5): the 52-byte block the
//! submit path stages into device DRAM, and the 0x38-byte request buffer the
//! sequencer fetches (body + the 4-byte `cc_dma_increment` trailer at 0x34).
//!
//! Every field is a `uint32_t` (CORRECTION (ABI-1) in docs/abi.md §1.5): a flag word, five
//! engine-address low words, five engine-address high words (two arrays, not
//! interleaved `{lo,hi}` pairs), then two more flag words: padding-free at
//! exactly 52 bytes. [`DeviceExecRequest`] is the value (its bytes from
//! [`DeviceExecRequest::encode`], little-endian, field by field, never by
//! transmute).
//!
//! `cc_dma_increment` is **not** a struct field: it is a second, separate
//! 4-byte copy to buffer offset [`CC_DMA_INCREMENT_OFF`], right past the body
//! ([`DeviceExecRequest::encode_buffer`], [`BUFFER_LAYOUT`]). The seed warns
//! that folding it into the struct as a sixth field would shift
//! `reload_seq_config`/`load_act_dve_tables`; keeping it out of the type makes
//! that mistake unrepresentable, and [`SIZE`] stays the body-copy length.
//!
//! Seed discrepancy: docs/abi.md §1.5's pseudo-code loops `for i in 0..4` while its comment,
//! the prose and the byte offsets (two arrays of five words) all say five
//! engines PE, ACT, POOL, DVE, SP. The bytes win:
//! [`DeviceExecRequest::with_engine_addresses`] fills all five.

use super::{need, read, write, WireError};

wire_block! {
    /// `device_exec_request_t` (docs/abi.md §1.5; all fields seed-stated):
    /// thirteen `u32` words. The flag words are full `u32` values; the seed
    /// gives them no narrower range, so any value round-trips (the device
    /// treats non-zero as set).
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::device_request::{DeviceExecRequest, Engine};
    ///
    /// let mut r = DeviceExecRequest::default();
    /// r.set_engine_address(Engine::Act, 0x0000_0040_0020_0000);
    /// assert_eq!(r.eng_addresses_lo[1], 0x0020_0000);
    /// assert_eq!(r.eng_addresses_hi[1], 0x40);
    /// // The buffer the sequencer fetches: the body, then the trailer.
    /// let buf = r.encode_buffer(1);
    /// assert_eq!(DeviceExecRequest::parse_buffer(&buf), Ok((r, 1)));
    /// assert_eq!(DeviceExecRequest::parse(&buf[..52]), Ok(r));
    /// ```
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct DeviceExecRequest: "device_exec_request_t", SIZE = 0x34, LAYOUT, off, dump + engine_lines {
        seed DO_MODEL_SWITCH do_model_switch: u32 = 0x00, 4;
        /// Low 32 bits of each engine's address, [`Engine`] order.
        seed ENG_ADDRESSES_LO eng_addresses_lo: [u32; NUM_ENGINES] = 0x04, 20;
        /// High 32 bits of each engine's address.
        seed ENG_ADDRESSES_HI eng_addresses_hi: [u32; NUM_ENGINES] = 0x18, 20;
        seed RELOAD_SEQ_CONFIG reload_seq_config: u32 = 0x2C, 4;
        seed LOAD_ACT_DVE_TABLES load_act_dve_tables: u32 = 0x30, 4;
    }
}

wire_block! {
    /// Layout of the 0x38-byte request buffer the sequencer fetches: the body
    /// (copy 1, at 0) and the `cc_dma_increment` trailer (copy 2, right
    /// after it). The block name is ours (the seed calls it `req_buf`).
    pub BUFFER_LAYOUT: "device_exec_request_buf", BUFFER_SIZE = 0x38, buf_off {
        seed BODY "device_exec_request_t" = 0x00, 0x34;
        /// The separately copied trailer.
        seed CC_DMA_INCREMENT "cc_dma_increment" = 0x34, 4;
    }
}

/// Buffer offset of the separately copied `cc_dma_increment` trailer.
pub const CC_DMA_INCREMENT_OFF: usize = buf_off::CC_DMA_INCREMENT;
/// Number of TPB engines with an instruction-block address in the request.
pub const NUM_ENGINES: usize = Engine::ALL.len();

const _: () = assert!(SIZE == 52 && CC_DMA_INCREMENT_OFF == SIZE);
const _: () = assert!(off::ENG_ADDRESSES_HI - off::ENG_ADDRESSES_LO == 4 * NUM_ENGINES);

wire_enum! {
    /// A TPB engine, in the index order of the address arrays (docs/abi.md §1.5).
    pub enum Engine(usize) {
        /// Processing engine.
        Pe = 0 => "PE",
        /// Activation engine.
        Act = 1 => "ACT",
        /// Pooling engine.
        Pool = 2 => "POOL",
        /// Vector engine.
        Dve = 3 => "DVE",
        /// Sync/scalar processor.
        Sp = 4 => "SP",
    }
}

impl DeviceExecRequest {
    /// A request with the given per-engine addresses (all five, [`Engine`]
    /// order) and every flag clear.
    pub fn with_engine_addresses(addrs: [u64; NUM_ENGINES]) -> Self {
        let mut r = DeviceExecRequest::default();
        for e in Engine::ALL {
            r.set_engine_address(e, addrs[e.index()]);
        }
        r
    }

    /// Split `addr` into the engine's low and high words (docs/abi.md §1.5:
    /// `lo = addr & 0xFFFFFFFF`, `hi = addr >> 32`).
    pub fn set_engine_address(&mut self, engine: Engine, addr: u64) {
        self.eng_addresses_lo[engine.index()] = addr as u32;
        self.eng_addresses_hi[engine.index()] = (addr >> 32) as u32;
    }

    /// The engine's 64-bit instruction-block address (`hi << 32 | lo`).
    pub const fn engine_address(&self, engine: Engine) -> u64 {
        ((self.eng_addresses_hi[engine.index()] as u64) << 32)
            | self.eng_addresses_lo[engine.index()] as u64
    }

    /// The whole 0x38-byte request buffer: body, then the trailer.
    pub fn encode_buffer(&self, cc_dma_increment: u32) -> [u8; BUFFER_SIZE] {
        let mut b = [0u8; BUFFER_SIZE];
        let _ = self.emit(&mut b);
        write::<u32>(&mut b, CC_DMA_INCREMENT_OFF, cc_dma_increment);
        b
    }

    /// Decode a whole 0x38-byte request buffer into (body, `cc_dma_increment`).
    pub fn parse_buffer(bytes: &[u8]) -> Result<(Self, u32), WireError> {
        need(BUFFER_LAYOUT.name, bytes, BUFFER_SIZE)?;
        Ok((
            Self::parse(bytes)?,
            read::<u32>(bytes, CC_DMA_INCREMENT_OFF),
        ))
    }

    /// Each engine's joined 64-bit address, one line each (the arrays dump
    /// as raw words).
    #[cfg(feature = "std")]
    fn engine_lines(&self) -> String {
        Engine::ALL
            .iter()
            .map(|e| {
                format!(
                    "  engine {:<4} (lo[{i}], hi[{i}]) = {:#018x}\n",
                    e.name(),
                    self.engine_address(*e),
                    i = e.index()
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_split_and_join() {
        let mut r = DeviceExecRequest::default();
        r.set_engine_address(Engine::Sp, 0x1234_5678_9ABC_DEF0);
        assert_eq!(r.eng_addresses_lo[4], 0x9ABC_DEF0);
        assert_eq!(r.eng_addresses_hi[4], 0x1234_5678);
        assert_eq!(r.engine_address(Engine::Sp), 0x1234_5678_9ABC_DEF0);
        let b = r.encode();
        assert_eq!(&b[0x14..0x18], &0x9ABC_DEF0u32.to_le_bytes());
        assert_eq!(&b[0x28..0x2C], &0x1234_5678u32.to_le_bytes());
    }

    #[test]
    fn buffer_carries_the_trailer_past_the_body() {
        let r = DeviceExecRequest::with_engine_addresses([1, 2 << 32, 3, 4, 5 | (6 << 32)]);
        let buf = r.encode_buffer(0xAA);
        assert_eq!(&buf[..SIZE], &r.encode());
        assert_eq!(&buf[CC_DMA_INCREMENT_OFF..], &0xAAu32.to_le_bytes());
        let (back, cc) = DeviceExecRequest::parse_buffer(&buf).unwrap();
        assert_eq!((back.engine_address(Engine::Act), cc), (2 << 32, 0xAA));
        assert_eq!(back, r);
    }

    #[test]
    fn short_input_is_truncated_error() {
        assert_eq!(
            DeviceExecRequest::parse(&[0; 51]),
            Err(WireError::Truncated {
                block: "device_exec_request_t",
                need: 52,
                got: 51
            })
        );
        assert!(DeviceExecRequest::parse_buffer(&[0; 55]).is_err());
    }
}
