//! On-device cost probes: a SysTick tick counter and the painted-stack high-water mark.
//!
//! QEMU does not emulate the DWT cycle counter, but it does emulate SysTick. Under
//! `-icount shift=0` every guest instruction advances virtual time by 1 ns and SysTick on
//! mps2-an386 counts the 25 MHz core clock, so one tick is [`INSTRUCTIONS_PER_TICK`] guest
//! instructions, deterministically: a relative instruction count, not real cycles.

use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;

/// Guest instructions per SysTick tick on mps2-an386 under `-icount shift=0` (40 ns per tick at
/// 25 MHz, 1 ns per instruction).
pub const INSTRUCTIONS_PER_TICK: u64 = 40;

/// SysTick's largest reload value (a 24-bit down-counter).
const RELOAD: u32 = 0x00FF_FFFF;

/// Counter wrap-arounds, counted by the SysTick exception.
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// A free-running 64-bit tick count built from SysTick and its wrap-arounds.
pub struct Clock {
    _syst: SYST,
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clock").field("wraps", &WRAPS.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl Clock {
    /// Starts SysTick on the core clock at the full 24-bit period with its wrap exception on.
    pub fn start(mut syst: SYST) -> Self {
        syst.disable_counter();
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        WRAPS.store(0, Ordering::Relaxed);
        syst.enable_interrupt();
        syst.enable_counter();
        Clock { _syst: syst }
    }

    /// Ticks since [`Clock::start`].
    ///
    /// The counter runs `0` (cleared at start, or just wrapped: the exception fires on the step
    /// to 0), then `RELOAD`, `RELOAD - 1`, … `1`, `0` again: `current` has been `0` for no
    /// ticks of the period and `v` for `RELOAD + 1 - v` ticks.
    pub fn now(&self) -> u64 {
        let period = RELOAD as u64 + 1;
        loop {
            let before = WRAPS.load(Ordering::Relaxed);
            let current = SYST::get_current() as u64;
            // A wrap between the two loads would pair a new count with an old wrap number.
            if WRAPS.load(Ordering::Relaxed) == before {
                return before as u64 * period + (period - current) % period;
            }
        }
    }
}

// Symbols of cortex-m-rt's linker script: the RAM origin and both ends of the stack region.
// Only their addresses are taken, which is safe.
#[allow(unsafe_code, reason = "linker-script symbols can only be declared in an extern block")]
unsafe extern "C" {
    static _ram_start: u32;
    static _stack_end: u32;
    static _stack_start: u32;
}

/// RAM taken by statics (`.data`, `.bss`, `.uninit`): everything below the stack region.
pub fn static_ram() -> usize {
    (&raw const _stack_end) as usize - (&raw const _ram_start) as usize
}

/// Deepest stack use so far, in bytes: cortex-m-rt's `paint-stack` fills the region with
/// [`cortex_m_rt::STACK_PAINT_VALUE`] at boot, and the stack grows down from `_stack_start`,
/// so the lowest word that no longer holds the paint marks the high-water. (A frame that
/// reserves space it never writes is not seen: a slight under-estimate at worst.)
pub fn stack_high_water() -> usize {
    let bottom = (&raw const _stack_end) as usize;
    let top = (&raw const _stack_start) as usize;
    let mut addr = bottom;
    while addr < top && read_word(addr) == cortex_m_rt::STACK_PAINT_VALUE {
        addr += 4;
    }
    top - addr
}

/// Reads one word of the stack region.
#[allow(unsafe_code, reason = "reading painted RAM below the live stack is the point of the probe")]
fn read_word(addr: usize) -> u32 {
    // SAFETY: `addr` is a 4-aligned address between `_stack_end` and `_stack_start`, which is
    // RAM owned by this program; a volatile read keeps the compiler from assuming its value.
    unsafe { core::ptr::read_volatile(addr as *const u32) }
}

/// What the bench binary reports, one line: `bench calls=… ticks=… …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Report {
    /// Explanations timed.
    pub calls: u32,
    /// SysTick ticks spent inside those explanations.
    pub ticks: u64,
    /// The most ticks of one explanation.
    pub max_ticks: u64,
    /// Ticks of one `Bundle::from_bytes` (header, CRC-32 over the payload, validation).
    pub load_ticks: u64,
    /// RAM of statics (bytes).
    pub static_ram: u32,
    /// Stack high-water (bytes).
    pub stack: u32,
}

impl Report {
    /// Mean instructions per explanation (see [`INSTRUCTIONS_PER_TICK`]).
    pub fn instructions_per_call(&self) -> u64 {
        self.ticks * INSTRUCTIONS_PER_TICK / (self.calls.max(1) as u64)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bench calls={} ticks={} instr_per_call={} max_instr={} load_instr={} static_ram={} stack={}",
            self.calls,
            self.ticks,
            self.instructions_per_call(),
            self.max_ticks * INSTRUCTIONS_PER_TICK,
            self.load_ticks * INSTRUCTIONS_PER_TICK,
            self.static_ram,
            self.stack
        )
    }
}
