//! Fixed-point arithmetic of the quantized encoder (A16W8: int16 activations, int8 weights).
//!
//! A real multiplier `M > 0` is stored as a Q31 mantissa `m` and a power-of-two `shift`, the
//! TFLite / CMSIS-NN convention: `M ≈ m · 2^(shift − 31)` with `m ∈ [2^30, 2^31)` (so a positive
//! `shift` scales up, a negative one down). [`requantize`] applies it to an integer accumulator
//! with one exact rounding step, so the hot path is integer-only and a Cortex-M4 and an x86 host
//! produce bit-identical results.
//!
//! Rounding is **half away from zero** everywhere: in [`requantize`] (a single rounding of the
//! exact product, unlike TFLite's two-step rounding, which can differ by one step on ties) and in
//! [`quantize_i16`] / [`quantize_i8`] (through `libm::roundf`, never the std method, so host
//! tests and the device compute the same thing).

use core::fmt;

/// Smallest shift accepted by [`requantize`] (a multiplier down to about `2^-63`).
pub const SHIFT_MIN: i8 = -62;
/// Largest shift accepted by [`requantize`] (a multiplier up to about `2^30`).
pub const SHIFT_MAX: i8 = 30;
/// Largest magnitude of a symmetric int16 activation (`-32768` is never produced).
pub const I16_MAX: i32 = i16::MAX as i32;
/// Largest magnitude of a symmetric int8 weight (`-128` is never produced).
pub const I8_MAX: i32 = i8::MAX as i32;

/// Why a real multiplier cannot be represented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum QuantError {
    /// The multiplier is negative, NaN or infinite.
    NotFinite,
    /// The multiplier is `2^SHIFT_MAX` or larger.
    TooLarge,
}

impl fmt::Display for QuantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuantError::NotFinite => write!(f, "multiplier is negative or not finite"),
            QuantError::TooLarge => write!(f, "multiplier is 2^{SHIFT_MAX} or larger"),
        }
    }
}

impl core::error::Error for QuantError {}

/// Splits a real multiplier into `(m, shift)` with `real ≈ m · 2^(shift − 31)`.
///
/// `m` lies in `[2^30, 2^31)` and the relative error is at most `2^-31`. A multiplier below
/// `2^(SHIFT_MIN − 1)` keeps `shift = SHIFT_MIN` and a smaller mantissa (less precision; it
/// becomes `(0, 0)` once it underflows), and `0.0` is `(0, 0)`.
///
/// # Errors
/// [`QuantError::NotFinite`] for a negative, NaN or infinite `real`;
/// [`QuantError::TooLarge`] when the shift would exceed [`SHIFT_MAX`].
pub fn quantize_multiplier(real: f64) -> Result<(i32, i8), QuantError> {
    if !real.is_finite() || real < 0.0 {
        return Err(QuantError::NotFinite);
    }
    if real == 0.0 {
        return Ok((0, 0));
    }
    let (fraction, exponent) = libm::frexp(real); // real = fraction · 2^exponent, fraction ∈ [0.5, 1)
    // fraction · 2^31 ∈ [2^30, 2^31]: truncating after adding a half rounds to nearest.
    let mut m = (fraction * 2_147_483_648.0 + 0.5) as i64;
    let mut shift = exponent;
    if m == 1 << 31 {
        m = 1 << 30;
        shift += 1;
    }
    if shift > SHIFT_MAX as i32 {
        return Err(QuantError::TooLarge);
    }
    if shift < SHIFT_MIN as i32 {
        let drop = (SHIFT_MIN as i32 - shift).min(63);
        m = round_shift_right(m as i128, drop as u32) as i64;
        shift = SHIFT_MIN as i32;
    }
    if m == 0 {
        return Ok((0, 0));
    }
    Ok((m as i32, shift as i8))
}

/// The real value of a quantized multiplier, `m · 2^(shift − 31)` (host diagnostics and tests).
pub fn multiplier_value(multiplier: i32, shift: i8) -> f64 {
    multiplier as f64 * libm::exp2(shift as f64 - 31.0)
}

/// `round(acc · multiplier · 2^(shift − 31))`, rounding half away from zero, saturated to `i32`.
///
/// The product is formed exactly in `i128`, so the only error is the final rounding (at most
/// half a step). `shift` is clamped to `[SHIFT_MIN, SHIFT_MAX]`; a validated layer never relies
/// on that, it only keeps the function total.
pub fn requantize(acc: i64, multiplier: i32, shift: i8) -> i32 {
    let shift = shift.clamp(SHIFT_MIN, SHIFT_MAX);
    let right = (31 - shift as i32) as u32; // in [1, 93]
    let product = acc as i128 * multiplier as i128; // |product| < 2^94
    let rounded = round_shift_right(product, right);
    rounded.clamp(i32::MIN as i128, i32::MAX as i128) as i32
}

/// [`requantize`] narrowed to a symmetric int16 activation (saturates to `±32767`).
pub fn requantize_i16(acc: i64, multiplier: i32, shift: i8) -> i16 {
    saturate_i16(requantize(acc, multiplier, shift))
}

/// Saturates to the symmetric int16 range `[-32767, 32767]`.
pub fn saturate_i16(v: i32) -> i16 {
    v.clamp(-I16_MAX, I16_MAX) as i16
}

/// `value / 2^right`, rounding half away from zero (`right` at most 126).
fn round_shift_right(value: i128, right: u32) -> i128 {
    let half = 1u128 << (right - 1);
    let magnitude = ((value.unsigned_abs() + half) >> right) as i128;
    if value < 0 { -magnitude } else { magnitude }
}

/// Symmetric int16 quantization: `round(x / scale)` saturated to `±32767`; NaN maps to 0.
///
/// `scale` must be finite and positive (callers validate it once).
pub fn quantize_i16(x: f32, scale: f32) -> i16 {
    let q = libm::roundf(x / scale);
    // `as` saturates and maps NaN to 0; the clamp keeps the range symmetric.
    (q as i32).clamp(-I16_MAX, I16_MAX) as i16
}

/// Symmetric int8 quantization: `round(x / scale)` saturated to `±127`; NaN maps to 0.
pub fn quantize_i8(x: f32, scale: f32) -> i8 {
    let q = libm::roundf(x / scale);
    (q as i32).clamp(-I8_MAX, I8_MAX) as i8
}

/// The real value of an int16 activation, `q · scale`.
pub fn dequantize_i16(q: i16, scale: f32) -> f32 {
    q as f32 * scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `2^-1` as a Q31 multiplier: `2^30` with shift 0.
    const HALF: (i32, i8) = (1 << 30, 0);

    #[test]
    fn test_requantize_halves_round_away_from_zero() {
        let (m, s) = HALF;
        assert_eq!(requantize(3, m, s), 2); // 1.5 -> 2
        assert_eq!(requantize(-3, m, s), -2); // -1.5 -> -2
        assert_eq!(requantize(5, m, s), 3); // 2.5 -> 3
        assert_eq!(requantize(-5, m, s), -3);
        assert_eq!(requantize(-1, m, s), -1); // -0.5 -> -1
        assert_eq!(requantize(4, m, s), 2);
        assert_eq!(requantize(0, m, s), 0);
    }

    #[test]
    fn test_requantize_negative_below_half_rounds_toward_zero() {
        // 0.25 * -5 = -1.25 -> -1; 0.25 * -7 = -1.75 -> -2.
        let quarter = (1 << 30, -1);
        assert_eq!(requantize(-5, quarter.0, quarter.1), -1);
        assert_eq!(requantize(-7, quarter.0, quarter.1), -2);
        assert_eq!(requantize(5, quarter.0, quarter.1), 1);
        assert_eq!(requantize(7, quarter.0, quarter.1), 2);
    }

    #[test]
    fn test_requantize_saturates() {
        // Multiplier just under 2^30 applied to a large accumulator.
        assert_eq!(requantize(i64::MAX, i32::MAX, SHIFT_MAX), i32::MAX);
        assert_eq!(requantize(i64::MIN, i32::MAX, SHIFT_MAX), i32::MIN);
        assert_eq!(requantize_i16(1 << 20, 1 << 30, 0), 32_767);
        assert_eq!(requantize_i16(-(1 << 20), 1 << 30, 0), -32_767);
        assert_eq!(requantize_i16(-65_534, 1 << 30, 0), -32_767);
    }

    #[test]
    fn test_requantize_large_shifts() {
        // Largest right shift: 2^-63 · m; only huge accumulators survive.
        assert_eq!(requantize(1 << 40, 1 << 30, SHIFT_MIN), 0);
        assert_eq!(requantize(i64::MAX, 1 << 30, SHIFT_MIN), 1); // ≈ 2^63 · 2^-63
        // Largest left shift: m · 2^(30 − 31) · acc = acc · 2^29 for m = 2^30.
        assert_eq!(requantize(1, 1 << 30, SHIFT_MAX), 1 << 29);
        assert_eq!(requantize(-3, 1 << 30, SHIFT_MAX), -3 << 29);
        // Out-of-range shifts are clamped, not a panic.
        assert_eq!(requantize(1, 1 << 30, i8::MAX), 1 << 29);
        assert_eq!(requantize(1 << 40, 1 << 30, i8::MIN), 0);
    }

    #[test]
    fn test_quantize_multiplier_round_trips_powers_of_two() {
        assert_eq!(quantize_multiplier(0.5), Ok((1 << 30, 0)));
        assert_eq!(quantize_multiplier(1.0), Ok((1 << 30, 1)));
        assert_eq!(quantize_multiplier(0.25), Ok((1 << 30, -1)));
        assert_eq!(quantize_multiplier(0.0), Ok((0, 0)));
    }

    #[test]
    fn test_quantize_multiplier_rejects_bad_values() {
        assert_eq!(quantize_multiplier(-1.0), Err(QuantError::NotFinite));
        assert_eq!(quantize_multiplier(f64::NAN), Err(QuantError::NotFinite));
        assert_eq!(quantize_multiplier(f64::INFINITY), Err(QuantError::NotFinite));
        assert_eq!(quantize_multiplier(libm::exp2(31.0)), Err(QuantError::TooLarge));
    }

    #[test]
    fn test_quantize_multiplier_mantissa_carry() {
        // Just below 1.0: the mantissa rounds up to 2^31 and must carry into the shift.
        let (m, s) = quantize_multiplier(1.0 - 1e-12).unwrap();
        assert_eq!((m, s), (1 << 30, 1));
    }

    #[test]
    fn test_quantize_multiplier_tiny_values_lose_precision_not_range() {
        let (m, s) = quantize_multiplier(libm::exp2(-70.0)).unwrap();
        assert_eq!(s, SHIFT_MIN);
        assert_eq!(m, 1 << 23); // 2^-70 = 2^23 · 2^(-62 − 31)
        assert_eq!(quantize_multiplier(1e-300), Ok((0, 0)));
    }

    #[test]
    fn test_quantize_i16_saturates_and_rounds() {
        assert_eq!(quantize_i16(1.0, 0.5), 2);
        assert_eq!(quantize_i16(0.75, 0.5), 2); // 1.5 -> 2
        assert_eq!(quantize_i16(-0.75, 0.5), -2);
        assert_eq!(quantize_i16(1e9, 1.0), 32_767);
        assert_eq!(quantize_i16(-1e9, 1.0), -32_767);
        assert_eq!(quantize_i16(f32::NAN, 1.0), 0);
        assert_eq!(quantize_i16(f32::NEG_INFINITY, 1.0), -32_767);
        assert_eq!(quantize_i8(-300.0, 1.0), -127);
        assert_eq!(quantize_i8(2.5, 1.0), 3);
    }

    proptest! {
        /// The multiplier round trip keeps the value to a relative `2^-31` (plus f64 noise).
        #[test]
        fn prop_multiplier_relative_error(real in 1e-9f64..1e6) {
            let (m, s) = quantize_multiplier(real).unwrap();
            prop_assert!((1 << 30..=i32::MAX).contains(&m));
            let back = multiplier_value(m, s);
            prop_assert!(((back - real) / real).abs() <= libm::exp2(-31.0) + 1e-15);
        }

        /// `requantize` equals round-half-away-from-zero of the exact real product (no saturation:
        /// |result| < 2^40 · 2^31 / 2^41).
        #[test]
        fn prop_requantize_matches_exact_rounding(
            acc in -(1i64 << 40)..(1i64 << 40),
            m in (1i32 << 30)..i32::MAX,
            s in -40i8..=-10,
        ) {
            let got = requantize(acc, m, s) as i128;
            // Exact: acc · m / 2^(31 − s) in rational arithmetic; |2·acc·m − (2·got)·2^k| <= 2^k.
            let k = 31 - s as i32;
            let twice = 2 * acc as i128 * m as i128;
            let err = twice - 2 * got * (1i128 << k);
            prop_assert!(err.abs() <= 1i128 << k);
            // Ties go away from zero: |got| exceeds the exact |value|.
            if err.abs() == 1i128 << k {
                prop_assert!((2 * got * (1i128 << k)).abs() > twice.abs());
            }
        }

        /// Dequantizing a quantized value lands within half a step (plus one f32 ulp of x/scale).
        #[test]
        fn prop_dequantize_within_half_step(x in -100.0f32..100.0, scale in 0.004f32..1.0) {
            let back = dequantize_i16(quantize_i16(x, scale), scale);
            let tol = scale * (0.5 + 1e-3) + x.abs() * 1e-6;
            prop_assert!((back - x).abs() <= tol, "x {} back {} scale {}", x, back, scale);
        }
    }
}
