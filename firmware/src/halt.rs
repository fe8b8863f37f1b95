//! How the program ends: a semihosting exit with status 0 or 1, which QEMU (and `cargo run`)
//! pass on. A panic or a HardFault also exits with 1; without that a fault would spin forever
//! and QEMU would never return.

use cortex_m_rt::{ExceptionFrame, exception};
use cortex_m_semihosting::debug;

/// Ends the program: QEMU exits with 0 when `ok`, else 1.
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    // Only reached without a semihosting host (real hardware without a debugger).
    loop {
        cortex_m::asm::wfi();
    }
}

#[allow(unsafe_code, reason = "cortex-m-rt requires the HardFault handler to be an `unsafe fn`")]
#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    report_fault(frame.pc());
    exit(false)
}

#[cfg(not(feature = "defmt"))]
fn report_fault(pc: u32) {
    crate::console::Console::stderr().println(format_args!("error: hard fault at pc={pc:#010x}"));
}

#[cfg(feature = "defmt")]
fn report_fault(pc: u32) {
    defmt::println!("error: hard fault at pc={=u32:#010x}", pc);
}

#[cfg(not(feature = "defmt"))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    crate::console::Console::stderr().println(format_args!("error: panic: {info}"));
    exit(false)
}

// Panic text written next to defmt frames would corrupt the stream, so the message goes
// through defmt too.
#[cfg(feature = "defmt")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    defmt::println!("error: panic: {}", defmt::Display2Format(info));
    exit(false)
}

#[cfg(feature = "defmt")]
use defmt_semihosting as _;
