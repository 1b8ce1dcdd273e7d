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

/// Bit masks of a block, one bit per byte, with SSE2.
///
/// SAFETY (every `unsafe` here): SSE2 is part of the x86-64 baseline, so its intrinsics are
/// always available, and each load reads 16 bytes within the 64 of a block.
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
        std::array::from_fn(|i| unsafe { _mm_loadu_si128(block.as_ptr().add(16 * i).cast()) })
    }

    /// The bytes equal to `byte`.
    #[inline(always)]
    pub(crate) fn eq(block: &[u8; BLOCK], byte: u8) -> u64 {
        let lanes = lanes(block);
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
    use super::*;

    #[test]
    fn block_masks_mark_each_byte() {
        let block: [u8; BLOCK] = std::array::from_fn(|i| [b'\n', b'x', 0x0b, 0xe2, 0xff][i % 5]);
        let equal = |byte| (0..BLOCK).fold(0, |m, i| m | (u64::from(block[i] == byte) << i));
        for byte in [b'\n', b'x', 0xe2, b'y'] {
            assert_eq!(eq(&block, byte), equal(byte));
            assert_eq!(portable::eq(&block, byte), equal(byte));
        }
        let candidates = (0..BLOCK).fold(0, |m, i| m | (u64::from(break_candidate(block[i])) << i));
        assert_eq!(break_candidates(&block), candidates);
        assert_eq!(portable::break_candidates(&block), candidates);
        for (rare, expected) in [
            (0x0b, true),
            (0x1e, true),
            (0xc2, true),
            (0x1f, false),
            (0xe3, false),
        ] {
            let mut block = [b'a'; BLOCK];
            block[37] = rare;
            assert_eq!(may_break_rarely(&block), expected, "{rare:#x}");
            assert_eq!(portable::may_break_rarely(&block), expected, "{rare:#x}");
        }
    }
}
