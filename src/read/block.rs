//! Bit masks of 64-byte blocks, one bit per byte: the SIMD steps of the line scans, with SSE2 on
//! x86-64 and portable code elsewhere.

#[cfg(not(target_arch = "x86_64"))]
pub(crate) use portable::{break_candidates, eq, may_break_rarely};
#[cfg(target_arch = "x86_64")]
pub(crate) use sse2::{break_candidates, eq, may_break_rarely};

/// Bytes per block: the width of a mask.
pub(crate) const BLOCK: usize = 64;

/// Whether `b` can start a line break other than `\n`: `\x0b`–`\r`, `\x1c`–`\x1e`, or the
/// first byte of U+0085 or U+2028/U+2029 (written without branches, so that it vectorizes).
#[inline(always)]
pub(crate) fn rare_break_byte(b: u8) -> bool {
    (b.wrapping_sub(0x0b) < 3) | (b.wrapping_sub(0x1c) < 3) | (b == 0xc2) | (b == 0xe2)
}

/// Whether `b` may start a line break: any byte up to `\x1e` (which holds `\n` and every other
/// break of one byte, and some that are none, such as `\t`), or the first byte of U+0085 or
/// U+2028/U+2029. A wide net is one comparison cheaper; `break_len` decides.
#[inline(always)]
pub(crate) fn break_candidate(b: u8) -> bool {
    (b <= 0x1e) | (b == 0xc2) | (b == 0xe2)
}

/// Bit masks of a block, one bit per byte, with SSE2: about twice as fast as the portable code in
/// the dense count, where no safe API (`memchr`, `bytecount`) gives a mask. A property test checks
/// it against the portable code on random blocks.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_setzero_si128, _mm_sub_epi8,
    };

    use super::BLOCK;

    /// The block as four vectors of 16 bytes.
    #[inline(always)]
    fn lanes(block: &[u8; BLOCK]) -> [__m128i; 4] {
        // SAFETY: SSE2 is part of the x86-64 baseline; `i < 4`, so the unaligned load reads
        // bytes `16 * i .. 16 * i + 16`, within the 64 of `block`.
        std::array::from_fn(|i| unsafe { _mm_loadu_si128(block.as_ptr().add(16 * i).cast()) })
    }

    /// The bytes equal to `byte`.
    #[inline(always)]
    pub(crate) fn eq(block: &[u8; BLOCK], byte: u8) -> u64 {
        let lanes = lanes(block);
        // SAFETY: SSE2 is part of the x86-64 baseline; these intrinsics only touch registers.
        unsafe {
            let byte = _mm_set1_epi8(byte as i8);
            (0..4).fold(0, |mask, i| {
                let bits = _mm_movemask_epi8(_mm_cmpeq_epi8(lanes[i], byte)) as u16;
                mask | (u64::from(bits) << (16 * i))
            })
        }
    }

    /// The bytes that may start a line break ([`super::break_candidate`]).
    #[inline(always)]
    pub(crate) fn break_candidates(block: &[u8; BLOCK]) -> u64 {
        let lanes = lanes(block);
        // SAFETY: SSE2 is part of the x86-64 baseline; these intrinsics only touch registers.
        unsafe {
            let (top, c2, e2) = (
                _mm_set1_epi8(0x1e),
                _mm_set1_epi8(0xc2_u8 as i8),
                _mm_set1_epi8(0xe2_u8 as i8),
            );
            (0..4).fold(0, |mask, i| {
                let lane = lanes[i];
                let control = _mm_cmpeq_epi8(_mm_min_epu8(lane, top), lane);
                let leads = _mm_or_si128(_mm_cmpeq_epi8(lane, c2), _mm_cmpeq_epi8(lane, e2));
                let bits = _mm_movemask_epi8(_mm_or_si128(control, leads)) as u16;
                mask | (u64::from(bits) << (16 * i))
            })
        }
    }

    /// Whether a byte of `block` may start a line break other than `\n`
    /// ([`super::rare_break_byte`]).
    #[inline(always)]
    pub(crate) fn may_break_rarely(block: &[u8; BLOCK]) -> bool {
        let lanes = lanes(block);
        // SAFETY: SSE2 is part of the x86-64 baseline; these intrinsics only touch registers.
        unsafe {
            // `lane - low <= 2`, unsigned: `min(d, 2) == d`.
            let within_three = |lane, low: u8| {
                let d = _mm_sub_epi8(lane, _mm_set1_epi8(low as i8));
                _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(2)), d)
            };
            let (c2, e2) = (_mm_set1_epi8(0xc2_u8 as i8), _mm_set1_epi8(0xe2_u8 as i8));
            let any = lanes.iter().fold(_mm_setzero_si128(), |any, &lane| {
                let controls = _mm_or_si128(within_three(lane, 0x0b), within_three(lane, 0x1c));
                let leads = _mm_or_si128(_mm_cmpeq_epi8(lane, c2), _mm_cmpeq_epi8(lane, e2));
                _mm_or_si128(any, _mm_or_si128(controls, leads))
            });
            _mm_movemask_epi8(any) != 0
        }
    }
}

/// Bit masks of a block, one bit per byte, portably.
#[cfg(any(test, not(target_arch = "x86_64")))]
mod portable {
    use super::{BLOCK, break_candidate, rare_break_byte};

    /// The bytes equal to `byte`.
    #[inline(always)]
    pub(crate) fn eq(block: &[u8; BLOCK], byte: u8) -> u64 {
        mask(block, |b| b == byte)
    }

    /// The bytes that may start a line break ([`break_candidate`]).
    #[inline(always)]
    pub(crate) fn break_candidates(block: &[u8; BLOCK]) -> u64 {
        mask(block, break_candidate)
    }

    /// The bytes for which `test` holds: eight at a time, one multiplication gathers their bits.
    #[inline(always)]
    fn mask(block: &[u8; BLOCK], test: impl Fn(u8) -> bool) -> u64 {
        let hits = block.map(|b| u8::from(test(b)));
        let (eights, _) = hits.as_chunks::<8>();
        eights.iter().enumerate().fold(0, |mask, (i, eight)| {
            let bits = u64::from_le_bytes(*eight).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            mask | (bits << (8 * i))
        })
    }

    /// Whether a byte of `block` may start a line break other than `\n`
    /// ([`super::rare_break_byte`]).
    #[inline(always)]
    pub(crate) fn may_break_rarely(block: &[u8; BLOCK]) -> bool {
        block.iter().fold(false, |any, &b| any | rare_break_byte(b))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Blocks of bytes near every boundary the masks test, and any byte.
    fn block() -> impl Strategy<Value = [u8; BLOCK]> {
        let bytes = [
            0x00, 0x09, 0x0a, 0x0b, 0x0d, 0x0e, 0x1b, 0x1c, 0x1e, 0x1f, 0x7f, 0x80, 0x85,
        ];
        let byte = prop_oneof![
            proptest::sample::select(bytes.to_vec()),
            proptest::sample::select(vec![0xa8, 0xc1, 0xc2, 0xc3, 0xe1, 0xe2, 0xe3, 0xff]),
            any::<u8>(),
        ];
        proptest::collection::vec(byte, BLOCK).prop_map(|v| v.try_into().unwrap())
    }

    proptest! {
        #[test]
        fn the_masks_are_the_portable_masks(block in block(), byte in any::<u8>()) {
            let equal = (0..BLOCK).fold(0, |m, i| m | (u64::from(block[i] == byte) << i));
            prop_assert_eq!(eq(&block, byte), equal);
            prop_assert_eq!(portable::eq(&block, byte), equal);
            let candidates = (0..BLOCK).fold(0, |m, i| m | (u64::from(break_candidate(block[i])) << i));
            prop_assert_eq!(break_candidates(&block), candidates);
            prop_assert_eq!(portable::break_candidates(&block), candidates);
            let rare = block.iter().any(|&b| rare_break_byte(b));
            prop_assert_eq!(may_break_rarely(&block), rare);
            prop_assert_eq!(portable::may_break_rarely(&block), rare);
        }
    }
}
